package fast

import (
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TransferPerLayerScript is the fast twin of transfer.per_layer_script: the shared
// interpreter run on deterministic goroutine managers.
func TransferPerLayerScript(lim spec.Limits, in spec.TransferPerLayerScriptInput) (spec.TransferPerLayerScriptOutput, error) {
	return ref.RunTransferPerLayerScript(lim, in, NewPerLayerManager)
}
