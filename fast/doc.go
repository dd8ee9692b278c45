// Package fast holds kvtwin's production CPU implementations. Every function
// has the signature of its twin in package ref, takes and returns ref's types,
// and must produce byte-identical canonical output (errors included) on every
// input; the equiv package checks that on generated inputs.
//
// The twins that carry bug-zoo switches (the radix tree and its family, the
// ack queue, the loader, the per-layer manager, admission, DeepGEMM warmup,
// the serving normalizers, index-top-k overrides) are implemented in
// internal/fastcore and re-exported here by generated files (<base>_gen.go,
// `make generate`): funcs forward, types are aliases. The switches stay
// reachable from the bug zoo only (docs/design/ARCHITECTURE.md "Bug-zoo
// switches").
package fast
