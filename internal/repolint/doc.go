// Package repolint holds the repository's own lint as tests: the import rules
// between kvtwin's packages (docs/design/ARCHITECTURE.md), the names of the
// twins' exported identifiers (every op's functions and types named for the
// op, Go's initialisms: names_test.go), the size of ref's API, and the check
// that every "X.md §N" reference names a heading of docs/spec or docs/design.
// It has no non-test code besides this comment; `make test` runs it with the
// rest.
package repolint
