package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// faultyScript runs radix.script on fast trees with the given faults.
func faultyScript(f fault.Radix) func(spec.Limits, spec.RadixScriptInput) (spec.RadixScriptOutput, error) {
	newTree := func(cfg spec.TreeConfig) (spec.RadixTree, error) { return fault.Installed().NewRadixTree(cfg, f) }
	return func(lim spec.Limits, in spec.RadixScriptInput) (spec.RadixScriptOutput, error) {
		return ref.RunRadixScript(lim, in, newTree)
	}
}

// RadixKeySlicesCopy is docs/spec/radix-acks.md §1.11 B1.a (performance): key slices
// copied the rest of the key at every node hop, so a full-hit match over a
// k-node path of L units copied about L·(k−1)/2 units. Results are
// unchanged; the copied units the tree reports are not.
func RadixKeySlicesCopy() equiv.Killable {
	return &equiv.Mutant[spec.RadixScriptInput, spec.RadixScriptOutput]{
		Spec:    equiv.RadixScript(),
		ID:      "radix-key-slices-copy",
		Section: "radix-acks.md §1.11 B1.a",
		About:   "RadixKey slices copy the remaining key at every node hop: a match is quadratic in path depth",
		Fn:      faultyScript(fault.Radix{CopyingSlices: true}),
	}
}

// RadixStoredKeyViews is docs/spec/radix-acks.md §1.11 B1.b: stored keys kept views
// of the caller's request buffer instead of compact copies, so a caller
// reusing its buffer rewrote the tree's keys (and pinned the buffer).
func RadixStoredKeyViews() equiv.Killable {
	return &equiv.Mutant[spec.RadixScriptInput, spec.RadixScriptOutput]{
		Spec:    equiv.RadixScript(),
		ID:      "radix-stored-key-views",
		Section: "radix-acks.md §1.11 B1.b",
		About:   "stored keys are views of the caller's buffer, not compact copies: reusing the buffer rewrites the tree",
		Fn:      faultyScript(fault.Radix{StoredViews: true}),
	}
}
