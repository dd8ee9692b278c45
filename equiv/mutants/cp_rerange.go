package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/spec"
)

// RerangeValidOffsets is docs/spec/cp-layout.md §3.6: source offsets computed from
// the valid splits although every rank sent its compute rows, so "following
// requests on the same rank are shifted when a previous request has padded
// mirror rows". Running the valid-source rerange on a compute gather is
// exactly that: placement from V (right) and offsets from V (wrong).
func RerangeValidOffsets() equiv.Killable {
	return &equiv.Mutant[spec.CPRerangeInput, spec.CPRerangeOutput]{
		Spec:    equiv.CPRerange(),
		ID:      "rerange-valid-offsets",
		Section: "cp-layout.md §3.6",
		About:   "rerange takes source offsets from valid splits: rows after a padded slot are read shifted (a PAD lands in the output)",
		Fn: func(lim spec.Limits, in spec.CPRerangeInput) (spec.CPRerangeOutput, error) {
			if in.Src == "" || in.Src == spec.SrcCompute {
				in.Src = spec.SrcValid
			}
			return fast.CPRerange(lim, in)
		},
	}
}
