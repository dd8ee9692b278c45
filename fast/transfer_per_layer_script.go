package fast

import (
	"github.com/kvtwin/kvtwin/ref"
)

// TransferPerLayerScript is the fast twin of transfer.per_layer_script: the shared
// interpreter run on deterministic goroutine managers.
func TransferPerLayerScript(lim ref.Limits, in ref.TransferPerLayerScriptInput) (ref.TransferPerLayerScriptOutput, error) {
	return ref.RunTransferPerLayerScript(lim, in, NewPerLayerManager)
}
