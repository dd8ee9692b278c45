package ref

import (
	"fmt"

	"github.com/kvtwin/kvtwin/spec"
)

// ValidateCPCompactValid checks a cp.compact_valid input (docs/spec/cp-layout.md §4.4):
// the layout, the rank, then the cp-local-compute-padded contract of X.
func ValidateCPCompactValid(lim spec.Limits, in spec.CPCompactValidInput) (spec.Layout, error) {
	return ValidateCPValidRows(lim, spec.CPValidRowsInput(in))
}

// ValidateCPRestorePadded checks a cp.restore_padded input: the layout, the rank,
// Y's shape and its row count Rv(r) (ErrRowCount: the buffer disagrees with
// the layout; §4.4 calls an f that changed the row count ErrShape, and the
// op sees that as a Y of the wrong length), then the R(r)·W' output bound.
func ValidateCPRestorePadded(lim spec.Limits, in spec.CPRestorePaddedInput) (spec.Layout, error) {
	lay, err := BuildLayoutAt(lim, "layout", in.Layout)
	if err != nil {
		return spec.Layout{}, err
	}
	if err := lay.CheckRank("rank", in.Rank); err != nil {
		return spec.Layout{}, err
	}
	if err := in.Y.CheckRows("y", lay.Rv(in.Rank)); err != nil {
		return spec.Layout{}, err
	}
	return lay, lim.CheckOutput("layout", int64(lay.R(in.Rank)), int64(in.Y.W))
}

// CPCompactValid is cp.compact_valid (docs/spec/cp-layout.md §4.2 steps 1–2): the
// rows of X where ValidMask is true, stable. Padding rows are interleaved
// with valid ones (§0.3), so they are picked by the mask, never by a count
// of leading rows (§4.5).
func CPCompactValid(lim spec.Limits, in spec.CPCompactValidInput) (spec.CPCompactValidOutput, error) {
	lay, err := ValidateCPCompactValid(lim, in)
	if err != nil {
		return spec.CPCompactValidOutput{}, err
	}
	rows, err := CompactValid(lay, in.Rank, in.X)
	return spec.CPCompactValidOutput{Rows: rows}, err
}

// CPRestorePadded is cp.restore_padded (docs/spec/cp-layout.md §4.2 step 4).
func CPRestorePadded(lim spec.Limits, in spec.CPRestorePaddedInput) (spec.CPRestorePaddedOutput, error) {
	lay, err := ValidateCPRestorePadded(lim, in)
	if err != nil {
		return spec.CPRestorePaddedOutput{}, err
	}
	rows, err := RestorePadded(lim, lay, in.Rank, in.Y)
	return spec.CPRestorePaddedOutput{Rows: rows}, err
}

// CompactValid returns x[idx] for idx = the valid local rows of rank r,
// ascending (§4.2 steps 1–2). x must be R(r) rows.
func CompactValid(lay spec.Layout, r int, x spec.Rows) (spec.Rows, error) {
	rows, _, err := SelectLocalValidRows(lay, r, x)
	return rows, err
}

// RestorePadded returns R(r) rows of y's width: zero rows, with row idx[j]
// set to y[j] for idx = the valid local rows of rank r (§4.2 step 4;
// padding rows all-zero is our choice, Appendix D.3). y must be Rv(r) rows.
func RestorePadded(lim spec.Limits, lay spec.Layout, r int, y spec.Rows) (spec.Rows, error) {
	if err := lay.CheckRank("rank", r); err != nil {
		return spec.Rows{}, err
	}
	if err := y.CheckRows("y", lay.Rv(r)); err != nil {
		return spec.Rows{}, err
	}
	if err := lim.CheckOutput("layout", int64(lay.R(r)), int64(y.W)); err != nil {
		return spec.Rows{}, err
	}
	out := NewRows(y.W, lay.R(r))
	j := 0
	for p, valid := range ValidMask(lay, r) {
		if valid {
			copy(out.Row(p), y.Row(j))
			j++
		}
	}
	return out, nil
}

// MoEWithCompaction runs f on rank r's valid rows only and puts its output
// back in place (docs/spec/cp-layout.md §4.1–4.2): compact, f (called even on zero
// rows: ranks take part in collectives), check f kept the row count, restore.
func MoEWithCompaction(lim spec.Limits, lay spec.Layout, r int, x spec.Rows, f func(spec.Rows) (spec.Rows, error)) (spec.Rows, error) {
	xc, err := CompactValid(lay, r, x)
	if err != nil {
		return spec.Rows{}, err
	}
	yc, err := f(xc)
	if err != nil {
		return spec.Rows{}, err
	}
	if err := yc.CheckShape("f"); err != nil {
		return spec.Rows{}, err
	}
	if yc.N() != xc.N() {
		return spec.Rows{}, spec.Reject(spec.ErrMoEShape, "f", yc.N(), fmt.Sprintf("%d rows, as given", xc.N()))
	}
	return RestorePadded(lim, lay, r, yc)
}
