package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// AllLayerWait is docs/spec/radix-acks.md §5.4 B5.c (directive): Ready(l) waits for
// the whole op (done == L), so compute no longer overlaps the load.
func AllLayerWait() equiv.Killable {
	return &equiv.Mutant[spec.HiCacheLayerDoneScriptInput, spec.HiCacheLayerDoneScriptOutput]{
		Spec:    equiv.HiCacheLayerDoneScript(),
		ID:      "all-layer-wait",
		Section: "radix-acks.md §5.4 B5.c",
		About:   "Ready(l) becomes done == L: a reader of layer l waits for every layer and the load/compute overlap is lost",
		Fn: func(_ spec.Limits, in spec.HiCacheLayerDoneScriptInput) (spec.HiCacheLayerDoneScriptOutput, error) {
			return ref.RunHiCacheLayerDoneScript(in, func(layers int) (spec.LayerDoneCounter, error) {
				return fault.Installed().NewLayerDoneCounter(layers, fault.Load{AllLayerWait: true})
			})
		},
		Scenario: "equiv/testdata/load_all_layer_wait.txt",
	}
}
