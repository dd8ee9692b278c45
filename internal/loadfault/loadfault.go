// Package loadfault names the historic prepared-load and layer-readiness
// bugs that the fast loader and counter can re-introduce for the bug zoo
// (equiv/mutants, docs/spec/radix-acks.md §5.4). The package is internal, so nothing
// outside kvtwin can construct Faults and production objects never carry one.
package loadfault

// Faults selects the re-introduced bugs; the zero value is the fixed code.
type Faults struct {
	// RebuildPerLayer is §5.4 B5.a: the prepared path rebuilds the
	// layer-invariant page lists and runs from the same indices at every
	// layer, so an op of L layers builds L times instead of once. The bytes
	// are unchanged.
	RebuildPerLayer bool
	// ReuseAcrossBatches is §5.4 B5.b (the rejected design): BeginLoad hands
	// the previous op's descriptor back, reopened under the new op id, when
	// the new op has as many pages, and EndLoad keeps its runs for that
	// reuse; the new op's pages are never copied.
	ReuseAcrossBatches bool
	// AllLayerWait is §5.4 B5.c: Ready(l) waits for the whole op
	// (done == L) instead of layer l, so compute no longer overlaps the load.
	AllLayerWait bool
	// SilentFallback is §5.4 B5.d: an unavailable prepared submit runs the
	// per-layer path without a FallbackEvent, under allow_fallback and
	// strict alike.
	SilentFallback bool
}
