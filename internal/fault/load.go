package fault

// Load selects the historic prepared-load and layer-readiness bugs
// (docs/spec/radix-acks.md §5.4) that Hooks.NewLoader and
// Hooks.NewLayerDoneCounter put back; the zero value is the fixed
// code.
type Load struct {
	// RebuildPerLayer is docs/spec/radix-acks.md §5.4 B5.a: the prepared
	// path rebuilds the layer-invariant page lists and runs from the same
	// indices at every layer, so an op of L layers builds L times instead of
	// once. The bytes are unchanged.
	RebuildPerLayer bool
	// ReuseAcrossBatches is docs/spec/radix-acks.md §5.4 B5.b (the rejected
	// design): BeginLoad hands the previous op's descriptor back, reopened
	// under the new op id, when the new op has as many pages, and EndLoad
	// keeps its runs for that reuse; the new op's pages are never copied.
	ReuseAcrossBatches bool
	// AllLayerWait is docs/spec/radix-acks.md §5.4 B5.c: Ready(l) waits for
	// the whole op (done == L) instead of layer l, so compute no longer
	// overlaps the load. Read by the layer-done counter.
	AllLayerWait bool
	// SilentFallback is docs/spec/radix-acks.md §5.4 B5.d: an unavailable
	// prepared submit runs the per-layer path without a FallbackEvent, under
	// allow_fallback and strict alike.
	SilentFallback bool
}
