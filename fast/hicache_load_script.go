package fast

import (
	"github.com/kvtwin/kvtwin/ref"
)

// LoadScript is the fast twin of hicache.load_script (docs/spec/radix-acks.md §5.2):
// the shared interpreter run on fast loaders.
func LoadScript(lim ref.Limits, in ref.LoadScriptInput) (ref.LoadScriptOutput, error) {
	return ref.RunLoadScript(lim, in, NewLoader)
}
