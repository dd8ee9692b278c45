package fast

import (
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// HiCacheAckScript is the fast twin of hicache.ack_script (docs/spec/radix-acks.md §3): the
// shared group interpreter run on fast write states.
func HiCacheAckScript(lim spec.Limits, in spec.HiCacheAckScriptInput) (spec.HiCacheAckScriptOutput, error) {
	return ref.RunHiCacheAckScript(lim, in, NewAckQueue)
}
