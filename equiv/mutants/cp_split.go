package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
)

// ZigzagConcatenation is docs/spec/cp-layout.md §1.6: upstream's original bs=1
// assumption, the batch concatenated and zigzag-split as one request, so
// segments mix requests (cp=2, L=[4,4]: rank 0 gets a0 a1 | b2 b3 instead
// of a0 b0 | a3 b3).
func ZigzagConcatenation() equiv.Killable {
	return &equiv.Mutant[ref.CPSplitInput, ref.CPSplitOutput]{
		Spec:    equiv.CPSplit(),
		ID:      "zigzag-concatenation",
		Section: "cp-layout.md §1.6",
		About:   "the batch is zigzag-split as one concatenated request: segments mix requests",
		Fn: func(lim ref.Limits, in ref.CPSplitInput) (ref.CPSplitOutput, error) {
			lay, err := ref.ValidateCPSplit(lim, in)
			if err != nil {
				return ref.CPSplitOutput{}, err
			}
			in.Layout.Lens = []int{lay.TotalValid()}
			in.Prefix = in.Prefix[:1]
			return fast.CPSplit(lim, in)
		},
	}
}
