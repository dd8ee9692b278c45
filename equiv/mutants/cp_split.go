package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// ZigzagConcatenation is docs/spec/cp-layout.md §1.6: upstream's original bs=1
// assumption, the batch concatenated and zigzag-split as one request, so
// segments mix requests (cp=2, L=[4,4]: rank 0 gets a0 a1 | b2 b3 instead
// of a0 b0 | a3 b3).
func ZigzagConcatenation() equiv.Killable {
	return &equiv.Mutant[spec.CPSplitInput, spec.CPSplitOutput]{
		Spec:    equiv.CPSplit(),
		ID:      "zigzag-concatenation",
		Section: "cp-layout.md §1.6",
		About:   "the batch is zigzag-split as one concatenated request: segments mix requests",
		Fn: func(lim spec.Limits, in spec.CPSplitInput) (spec.CPSplitOutput, error) {
			lay, err := ref.ValidateCPSplit(lim, in)
			if err != nil {
				return spec.CPSplitOutput{}, err
			}
			in.Layout.Lens = []int{lay.TotalValid()}
			in.Prefix = in.Prefix[:1]
			return fast.CPSplit(lim, in)
		},
	}
}
