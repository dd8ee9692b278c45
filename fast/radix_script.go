package fast

import "github.com/kvtwin/kvtwin/ref"

// RadixScript is the fast twin of radix.script (docs/spec/radix-acks.md §1): the
// shared step interpreter run on fast trees, so the script compares the
// trees and nothing else.
func RadixScript(lim ref.Limits, in ref.RadixScriptInput) (ref.RadixScriptOutput, error) {
	return ref.RunRadixScript(lim, in, NewRadixTree)
}
