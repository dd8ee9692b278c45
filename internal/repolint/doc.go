// Package repolint is the repository's own lint, as tests: import rules,
// spec references, the APIs and names of ref and fast, the adding-an-op
// recipe. It checks internal/importgraph's import rules between kvtwin's
// packages (docs/design/ARCHITECTURE.md), that every "X.md §N" reference
// names a heading of docs/spec or docs/design, what ref and fast export, that
// every op's functions and types are named for the op with Go's initialisms
// (names_test.go), and that docs/adding-an-op.md's worked example adds an op
// with the files it counts.
// It has no non-test code besides this comment; `make test` runs it with the
// rest.
package repolint
