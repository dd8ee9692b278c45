package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// faultyLoadScript runs hicache.load_script on fast loaders with the given faults.
func faultyLoadScript(f fault.Load) func(spec.Limits, spec.HiCacheLoadScriptInput) (spec.HiCacheLoadScriptOutput, error) {
	newLoader := func(lim spec.Limits, p spec.LoadPools) (spec.Loader, error) {
		return fault.Installed().NewLoader(lim, p, f)
	}
	return func(lim spec.Limits, in spec.HiCacheLoadScriptInput) (spec.HiCacheLoadScriptOutput, error) {
		return ref.RunHiCacheLoadScript(lim, in, newLoader)
	}
}

// DescriptorRebuiltPerLayer is docs/spec/radix-acks.md §5.4 B5.a (performance): the
// host pool rebuilt the layer-invariant page lists and runs from the same
// indices at every layer. The bytes are identical; Builds is L, not 1.
func DescriptorRebuiltPerLayer() equiv.Killable {
	return &equiv.Mutant[spec.HiCacheLoadScriptInput, spec.HiCacheLoadScriptOutput]{
		Spec:     equiv.HiCacheLoadScript(),
		ID:       "descriptor-rebuilt-per-layer",
		Section:  "radix-acks.md §5.4 B5.a",
		About:    "the prepared path rebuilds the layer-invariant page lists at every layer: Builds = L instead of 1",
		Fn:       faultyLoadScript(fault.Load{RebuildPerLayer: true}),
		Scenario: "equiv/testdata/load_descriptor_rebuilt_per_layer.txt",
	}
}

// DescriptorReusedAcrossBatches is docs/spec/radix-acks.md §5.4 B5.b (the rejected
// design): a batch of as many pages reuses the previous batch's descriptor,
// so its own pages are never copied and the device keeps stale bytes.
func DescriptorReusedAcrossBatches() equiv.Killable {
	return &equiv.Mutant[spec.HiCacheLoadScriptInput, spec.HiCacheLoadScriptOutput]{
		Spec:     equiv.HiCacheLoadScript(),
		ID:       "descriptor-reused-across-batches",
		Section:  "radix-acks.md §5.4 B5.b",
		About:    "a descriptor is reused across batches: batch 2 copies batch 1's pages again and its own device pages stay stale",
		Fn:       faultyLoadScript(fault.Load{ReuseAcrossBatches: true}),
		Scenario: "equiv/testdata/load_descriptor_reused_across_batches.txt",
	}
}

// SilentFallback is docs/spec/radix-acks.md §5.4 B5.d (forbidden): a backend without
// the prepared submit falls back to the per-layer path with no
// FallbackEvent, and strict mode proceeds instead of refusing.
func SilentFallback() equiv.Killable {
	return &equiv.Mutant[spec.HiCacheLoadScriptInput, spec.HiCacheLoadScriptOutput]{
		Spec:     equiv.HiCacheLoadScript(),
		ID:       "silent-fallback",
		Section:  "radix-acks.md §5.4 B5.d",
		About:    "an unavailable prepared submit falls back silently: no FallbackEvent, and strict proceeds",
		Fn:       faultyLoadScript(fault.Load{SilentFallback: true}),
		Scenario: "equiv/testdata/load_silent_fallback.txt",
	}
}
