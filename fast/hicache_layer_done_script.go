package fast

import (
	"github.com/kvtwin/kvtwin/ref"
)

// LayerDoneScript is the fast twin of hicache.layer_done_script
// (docs/spec/radix-acks.md §5.3): the shared interpreter run on fast counters.
func LayerDoneScript(_ ref.Limits, in ref.LayerDoneScriptInput) (ref.LayerDoneScriptOutput, error) {
	return ref.RunLayerDoneScript(in, NewLayerDoneCounter)
}
