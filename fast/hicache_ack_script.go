package fast

import (
	"github.com/kvtwin/kvtwin/ref"
)

// AckScript is the fast twin of hicache.ack_script (docs/spec/radix-acks.md §3): the
// shared group interpreter run on fast write states.
func AckScript(lim ref.Limits, in ref.AckScriptInput) (ref.AckScriptOutput, error) {
	return ref.RunAckScript(lim, in, NewAckQueue)
}
