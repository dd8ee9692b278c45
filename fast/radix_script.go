package fast

import (
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// RadixScript is the fast twin of radix.script (docs/spec/radix-acks.md §1): the
// shared step interpreter run on fast trees, so the script compares the
// trees and nothing else.
func RadixScript(lim spec.Limits, in spec.RadixScriptInput) (spec.RadixScriptOutput, error) {
	return ref.RunRadixScript(lim, in, NewRadixTree)
}
