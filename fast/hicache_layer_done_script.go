package fast

import (
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// HiCacheLayerDoneScript is the fast twin of hicache.layer_done_script
// (docs/spec/radix-acks.md §5.3): the shared interpreter run on fast counters.
func HiCacheLayerDoneScript(_ spec.Limits, in spec.HiCacheLayerDoneScriptInput) (spec.HiCacheLayerDoneScriptOutput, error) {
	return ref.RunHiCacheLayerDoneScript(in, NewLayerDoneCounter)
}
