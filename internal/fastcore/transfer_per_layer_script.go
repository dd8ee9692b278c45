package fastcore

import (
	"github.com/kvtwin/kvtwin/ref"
)

// XferScript is the fast twin of transfer.per_layer_script: the shared
// interpreter run on deterministic goroutine managers.
func XferScript(lim ref.Limits, in ref.XferScriptInput) (ref.XferScriptOutput, error) {
	return ref.RunXferScript(lim, in, NewPerLayerManager)
}
