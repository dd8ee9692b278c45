package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/spec"
)

// MoESuffixCount is docs/spec/cp-layout.md §4.5: DeepEP MoE given a scalar
// non-padded count instead of compacted rows, so it takes the first Rv(r)
// local rows. Padding is interleaved, so a PAD takes part in gate/top-k
// and a valid row is never processed (rank 0 of padded cp=2, g=1, L=[3,4]:
// a0 b0 PAD, not a0 b0 b3).
func MoESuffixCount() equiv.Killable {
	return &equiv.Mutant[spec.CPCompactValidInput, spec.CPCompactValidOutput]{
		Spec:    equiv.CPCompactValid(),
		ID:      "moe-suffix-count",
		Section: "cp-layout.md §4.5",
		About:   "MoE takes the first Rv(r) local rows (scalar non-padded count): a PAD reaches the router, a valid row never does",
		Fn: func(lim spec.Limits, in spec.CPCompactValidInput) (spec.CPCompactValidOutput, error) {
			out, err := fast.CPCompactValid(lim, in)
			if err != nil {
				return out, err
			}
			out.Rows.B = in.X.B[:len(out.Rows.B)]
			return out, nil
		},
	}
}

// RestoreSuffixCount is the same bug on the way back (docs/spec/cp-layout.md §4.5):
// the MoE output written over the first Rv(r) local rows, so a PAD row
// receives a valid row's output and the valid row after it stays zero.
func RestoreSuffixCount() equiv.Killable {
	return &equiv.Mutant[spec.CPRestorePaddedInput, spec.CPRestorePaddedOutput]{
		Spec:    equiv.CPRestorePadded(),
		ID:      "restore-suffix-count",
		Section: "cp-layout.md §4.5",
		About:   "restore writes the MoE output over the first Rv(r) rows: a PAD row gets a valid row's output, the valid row stays zero",
		Fn: func(lim spec.Limits, in spec.CPRestorePaddedInput) (spec.CPRestorePaddedOutput, error) {
			out, err := fast.CPRestorePadded(lim, in)
			if err != nil {
				return out, err
			}
			clear(out.Rows.B)
			copy(out.Rows.B, in.Y.B)
			return out, nil
		},
	}
}
