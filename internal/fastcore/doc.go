// Package fastcore holds the fast twins whose bodies carry bug-zoo switches
// (internal/fault), with the families they share state with: the radix tree
// and its keys, scripts and owner counts; the ack queue; the loader and layer
// counter; the per-layer manager; admission and its estimator; DeepGEMM
// warmup; the serving normalizers; index-top-k overrides.
//
// The code is kvtwin's production path. It lives here, not in fast, because
// Go has no friend packages: the bug zoo (equiv/mutants) must reach each
// <Production>WithFaults hook, and an internal package is the only place a
// hook can be exported to it without joining fast's public API. Package fast
// re-exports everything else of this package with every switch off, in
// generated files (fast/<base>_gen.go, `make generate`), so fast remains the
// one production API and its documentation. docs/design/ARCHITECTURE.md
// "Bug-zoo switches" records the trade-off.
//
// Nothing but fast, the bug zoo and tests may import this package
// (internal/repolint TestImportRules).
package fastcore
