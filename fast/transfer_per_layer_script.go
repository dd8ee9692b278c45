package fast

import (
	"github.com/kvtwin/kvtwin/ref"
)

// PerLayerScript is the fast twin of transfer.per_layer_script: the shared
// interpreter run on deterministic goroutine managers.
func PerLayerScript(lim ref.Limits, in ref.PerLayerScriptInput) (ref.PerLayerScriptOutput, error) {
	return ref.RunPerLayerScript(lim, in, NewPerLayerManager)
}
