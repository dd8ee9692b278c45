package fast

import (
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// HiCacheLoadScript is the fast twin of hicache.load_script (docs/spec/radix-acks.md §5.2):
// the shared interpreter run on fast loaders.
func HiCacheLoadScript(lim spec.Limits, in spec.HiCacheLoadScriptInput) (spec.HiCacheLoadScriptOutput, error) {
	return ref.RunHiCacheLoadScript(lim, in, NewLoader)
}
