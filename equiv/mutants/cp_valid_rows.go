package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/spec"
)

// ValidMaskSuffix is docs/spec/cp-layout.md §2.5's first bug: scalar "non-padded
// count" semantics, the first Rv(r) local rows taken as the valid ones
// (suffix padding). Padding is interleaved per lane slot, so on padded
// cp=2, g=1, L=[3,4] rank 0 (a0 b0 PAD b3) the mask is [1,1,1,0]: PAD in,
// b3 out.
func ValidMaskSuffix() equiv.Killable {
	return &equiv.Mutant[spec.CPValidRowsInput, spec.CPValidRowsOutput]{
		Spec:    equiv.CPValidRows(),
		ID:      "valid-mask-suffix",
		Section: "cp-layout.md §2.5",
		About:   "valid rows are the first Rv(r) local rows (scalar non-padded count): a PAD is selected, a later valid row dropped",
		Fn: func(lim spec.Limits, in spec.CPValidRowsInput) (spec.CPValidRowsOutput, error) {
			out, err := fast.CPValidRows(lim, in)
			if err != nil {
				return out, err
			}
			n := out.Selected.N()
			for p := range out.ValidMask {
				out.ValidMask[p] = p < n
			}
			out.Selected = spec.Rows{W: in.X.W, B: in.X.B[:n*in.X.W]}
			return out, nil
		},
	}
}

// LastTokenComputeLength is docs/spec/cp-layout.md §2.5's second bug: the last token
// located at compute position C_i − 1 rather than L_i − 1. On padded cp=2,
// g=1, L=[3] that is segment 3, rank 0 row 1, a PAD, instead of a2 at
// rank 1 row 1.
func LastTokenComputeLength() equiv.Killable {
	return &equiv.Mutant[spec.CPValidRowsInput, spec.CPValidRowsOutput]{
		Spec:    equiv.CPValidRows(),
		ID:      "last-token-compute-length",
		Section: "cp-layout.md §2.5",
		About:   "the last token is taken at compute position C_i - 1: a padding row's logits are collected",
		Fn: func(lim spec.Limits, in spec.CPValidRowsInput) (spec.CPValidRowsOutput, error) {
			out, err := fast.CPValidRows(lim, in)
			if err != nil {
				return out, err
			}
			lay, _ := in.Layout.Build()
			for i := range out.LastTokenRows {
				t := lay.ComputeLen(i) - 1
				k := lay.SegmentOf(i, t)
				rank := lay.Owner(k)
				out.LastTokenRows[i].Rank = rank
				out.LastTokenRows[i].LocalRow = lay.SlotOff(rank, lay.LaneOf(k), i) + t - lay.SegStart(i, k)
			}
			return out, nil
		},
	}
}
