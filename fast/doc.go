// Package fast holds kvtwin's production CPU implementations. Every function
// has the signature of its twin in package ref, takes and returns spec's types,
// and must produce byte-identical canonical output (errors included) on every
// input; the equiv package checks that on generated inputs.
//
// Some twins (the radix tree and its family, the ack queue, the loader and
// layer counter, the per-layer manager, admission and its estimator,
// DeepGEMM warmup, the serving normalizers, index-top-k overrides, the
// KV-event decoder and index) can put a historic bug back for the bug zoo.
// The switch that does so is read at the one place the bug lived and is
// reachable only through unexported hooks, which this package hands to the
// bug zoo at init and to nothing else: the production functions documented
// here always run with every bug fixed (docs/design/ARCHITECTURE.md
// "Bug-zoo switches").
package fast
