// Package importgraph is the module's import graph, loaded from `go list`,
// and the import rules that hold on it. The rules are data (Rules) so that
// one table is both checked and shown: internal/repolint's TestImportRules
// checks every row on the default and the -tags cuda graph, and
// internal/gen/docs draws docs/design/ARCHITECTURE.md's package table,
// dependency diagram and rule table from the same graph and rows. It imports
// nothing of kvtwin, so the checks and the page build whatever state the
// other packages are in.
package importgraph
