package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/spec"
)

// GroupLengthMismatch is docs/spec/transfer.md §2's buggy variant (upstream history,
// found by running the old code): lengths were never checked, so unequal
// non-empty lists were grouped by src alone and src=[1,2,3], dst=[5,6] came
// back as one silently misaligned run instead of ErrLengthMismatch.
func GroupLengthMismatch() equiv.Killable {
	return &equiv.Mutant[spec.TransferGroupContiguousInput, spec.TransferGroupContiguousOutput]{
		Spec:    equiv.TransferGroupContiguous(),
		ID:      "group-length-mismatch",
		Section: "transfer.md §2",
		About:   "unequal non-empty lengths accepted and grouped by src alone: runs pair pages that were never pairs",
		Fn: func(lim spec.Limits, in spec.TransferGroupContiguousInput) (spec.TransferGroupContiguousOutput, error) {
			if n, m := len(in.Src), len(in.Dst); n > 0 && m > 0 && n != m {
				// Only src's steps can break a run: dst reads as if it
				// continued +1 from its first page.
				dst := make([]int64, n)
				for i := range dst {
					dst[i] = in.Dst[0] + int64(i)
				}
				in.Dst = dst
			}
			return fast.TransferGroupContiguous(lim, in)
		},
	}
}
