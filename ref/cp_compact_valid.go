package ref

import "fmt"

// CPCompactValidInput is the input of cp.compact_valid (docs/spec/cp-layout.md §4.2 steps
// 1–2): a rank's local rows, to be compacted to its valid rows before MoE.
type CPCompactValidInput struct {
	// Layout names the CP layout.
	Layout LayoutSpec `json:"layout"`
	// Rank is the CP rank r, in [0, cp).
	Rank int `json:"rank"`
	// X holds rank r's R(r) cp-local-compute-padded rows.
	X Rows `json:"x"`
}

// CPRestorePaddedInput is the input of cp.restore_padded (docs/spec/cp-layout.md §4.2 step
// 4): the MoE's output on a rank's compacted rows, to be put back in place.
type CPRestorePaddedInput struct {
	// Layout names the CP layout.
	Layout LayoutSpec `json:"layout"`
	// Rank is the CP rank r, in [0, cp).
	Rank int `json:"rank"`
	// Y holds the Rv(r) rows f produced from the compacted rows, of any width W'.
	Y Rows `json:"y"`
}

// CPCompactValidOutput is the output of cp.compact_valid: rank r's valid
// rows, compacted.
type CPCompactValidOutput struct {
	// Rows is the result buffer.
	Rows Rows `json:"rows"`
}

// CPRestorePaddedOutput is the output of cp.restore_padded: rank r's local
// rows, the MoE's rows back in place and padding rows zero.
type CPRestorePaddedOutput struct {
	// Rows is the result buffer.
	Rows Rows `json:"rows"`
}

// ValidateCPCompactValid checks a cp.compact_valid input (docs/spec/cp-layout.md §4.4):
// the layout, the rank, then the cp-local-compute-padded contract of X.
func ValidateCPCompactValid(lim Limits, in CPCompactValidInput) (Layout, error) {
	return ValidateCPValidRows(lim, CPValidRowsInput(in))
}

// ValidateCPRestorePadded checks a cp.restore_padded input: the layout, the rank,
// Y's shape and its row count Rv(r) (ErrRowCount: the buffer disagrees with
// the layout; §4.4 calls an f that changed the row count ErrShape, and the
// op sees that as a Y of the wrong length), then the R(r)·W' output bound.
func ValidateCPRestorePadded(lim Limits, in CPRestorePaddedInput) (Layout, error) {
	lay, err := BuildLayoutAt(lim, "layout", in.Layout)
	if err != nil {
		return Layout{}, err
	}
	if err := lay.CheckRank("rank", in.Rank); err != nil {
		return Layout{}, err
	}
	if err := in.Y.CheckRows("y", lay.Rv(in.Rank)); err != nil {
		return Layout{}, err
	}
	return lay, lim.CheckOutput("layout", int64(lay.R(in.Rank)), int64(in.Y.W))
}

// CPCompactValid is cp.compact_valid (docs/spec/cp-layout.md §4.2 steps 1–2): the
// rows of X where ValidMask is true, stable. Padding rows are interleaved
// with valid ones (§0.3), so they are picked by the mask, never by a count
// of leading rows (§4.5).
func CPCompactValid(lim Limits, in CPCompactValidInput) (CPCompactValidOutput, error) {
	lay, err := ValidateCPCompactValid(lim, in)
	if err != nil {
		return CPCompactValidOutput{}, err
	}
	rows, err := CompactValid(lay, in.Rank, in.X)
	return CPCompactValidOutput{Rows: rows}, err
}

// CPRestorePadded is cp.restore_padded (docs/spec/cp-layout.md §4.2 step 4).
func CPRestorePadded(lim Limits, in CPRestorePaddedInput) (CPRestorePaddedOutput, error) {
	lay, err := ValidateCPRestorePadded(lim, in)
	if err != nil {
		return CPRestorePaddedOutput{}, err
	}
	rows, err := RestorePadded(lim, lay, in.Rank, in.Y)
	return CPRestorePaddedOutput{Rows: rows}, err
}

// CompactValid returns x[idx] for idx = the valid local rows of rank r,
// ascending (§4.2 steps 1–2). x must be R(r) rows.
func CompactValid(lay Layout, r int, x Rows) (Rows, error) {
	rows, _, err := SelectLocalValidRows(lay, r, x)
	return rows, err
}

// RestorePadded returns R(r) rows of y's width: zero rows, with row idx[j]
// set to y[j] for idx = the valid local rows of rank r (§4.2 step 4;
// padding rows all-zero is our choice, Appendix D.3). y must be Rv(r) rows.
func RestorePadded(lim Limits, lay Layout, r int, y Rows) (Rows, error) {
	if err := lay.CheckRank("rank", r); err != nil {
		return Rows{}, err
	}
	if err := y.CheckRows("y", lay.Rv(r)); err != nil {
		return Rows{}, err
	}
	if err := lim.CheckOutput("layout", int64(lay.R(r)), int64(y.W)); err != nil {
		return Rows{}, err
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

// ErrMoEShape: a MoE function returned a row count other than its input's
// (docs/spec/cp-layout.md §4.4's ErrShape, declared under this name by this file so as
// not to claim the family-wide ErrShape of §8).
var ErrMoEShape = NewSentinel("moe_shape", "MoE output row count differs from its input")

// MoEWithCompaction runs f on rank r's valid rows only and puts its output
// back in place (docs/spec/cp-layout.md §4.1–4.2): compact, f (called even on zero
// rows: ranks take part in collectives), check f kept the row count, restore.
func MoEWithCompaction(lim Limits, lay Layout, r int, x Rows, f func(Rows) (Rows, error)) (Rows, error) {
	xc, err := CompactValid(lay, r, x)
	if err != nil {
		return Rows{}, err
	}
	yc, err := f(xc)
	if err != nil {
		return Rows{}, err
	}
	if err := yc.checkShape("f"); err != nil {
		return Rows{}, err
	}
	if yc.N() != xc.N() {
		return Rows{}, Reject(ErrMoEShape, "f", yc.N(), fmt.Sprintf("%d rows, as given", xc.N()))
	}
	return RestorePadded(lim, lay, r, yc)
}
