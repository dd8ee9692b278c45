package ref

import (
	"fmt"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for cp.rerange (docs/spec/cp-layout.md §3.5): the input and the gathered rows.

// ValidateCPRerange checks in (docs/spec/cp-layout.md §3.5) and returns its layout
// and effective source kind. Order: layout, src, the buffer's shape, its
// row count cp·M, then the stride.
func ValidateCPRerange(lim spec.Limits, in spec.CPRerangeInput) (spec.Layout, spec.SrcKind, error) {
	lay, err := BuildLayoutAt(lim, "layout", in.Layout)
	if err != nil {
		return spec.Layout{}, "", err
	}
	src := in.Src
	switch src {
	case "":
		src = spec.SrcCompute
	case spec.SrcCompute, spec.SrcValid:
	default:
		return spec.Layout{}, "", spec.Reject(spec.ErrBadEnum, "src", string(in.Src), `"compute" or "valid"`)
	}
	if err := CheckGathered(lay, in.G, in.M, src); err != nil {
		return spec.Layout{}, "", err
	}
	return lay, src, nil
}

// CheckGathered checks a gathered buffer against lay (docs/spec/cp-layout.md §3.5):
// its shape, its row count cp·M (ErrRowCount), then M >= n_r for every
// rank (ErrStride).
func CheckGathered(lay spec.Layout, g spec.Rows, m int, src spec.SrcKind) error {
	if err := g.CheckShape("g"); err != nil {
		return err
	}
	if m < 0 {
		return spec.Reject(spec.ErrNegative, "m", m, ">= 0")
	}
	// N == cp·M without forming cp·M, which may overflow.
	if n := g.N(); n%lay.CP != 0 || n/lay.CP != m {
		return spec.Reject(spec.ErrRowCount, "g", n, fmt.Sprintf("cp·m = %d·%d rows", lay.CP, m))
	}
	for r := range lay.CP {
		if nr := lay.RankPayload(r, src); m < nr {
			return spec.Reject(spec.ErrStride, "m", m, fmt.Sprintf(">= n_%d (%d rows of rank %d under src %q)", r, nr, r, src))
		}
	}
	return nil
}
