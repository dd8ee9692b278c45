package ref

import (
	"fmt"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for cp.split (docs/spec/cp-layout.md §1.5): the input, the prefix and the padding.

// ValidateCPSplit checks in against docs/spec/cp-layout.md §1.5 and returns its
// layout. Order: the layout, the prefix list, the rows, the pad, then the
// output bound (Σ C_i rows of W bytes plus one position each).
func ValidateCPSplit(lim spec.Limits, in spec.CPSplitInput) (spec.Layout, error) {
	lay, err := BuildLayoutAt(lim, "layout", in.Layout)
	if err != nil {
		return spec.Layout{}, err
	}
	if err := checkPrefix(lay, "prefix", in.Prefix); err != nil {
		return spec.Layout{}, err
	}
	if err := in.X.CheckRows("x", lay.TotalValid()); err != nil {
		return spec.Layout{}, err
	}
	if err := checkPad("pad", in.Pad, in.X.W); err != nil {
		return spec.Layout{}, err
	}
	total := int64(0)
	for i := range lay.L {
		total += int64(lay.ComputeLen(i))
	}
	if err := lim.CheckOutput("layout", total, int64(in.X.W)); err != nil {
		return spec.Layout{}, err
	}
	return lay, lim.CheckOutput("layout", total, 8)
}

// checkPrefix rejects a prefix list that is not one P_i >= 0 per request,
// or with P_i + C_i beyond int64 (positions run to P_i + C_i − 1).
func checkPrefix(lay spec.Layout, field string, p []int64) error {
	if len(p) != lay.B() {
		return spec.Reject(spec.ErrLengthMismatch, field, len(p), fmt.Sprintf("one prefix length per request (%d)", lay.B()))
	}
	for i, x := range p {
		if x < 0 {
			return spec.Reject(spec.ErrNegative, spec.Idx(field, i), x, ">= 0")
		}
		if spec.AddOverflows(x, int64(lay.ComputeLen(i))) {
			return spec.Reject(spec.ErrOverflow, spec.Idx(field, i), x, fmt.Sprintf("prefix + compute length (%d) fits int64", lay.ComputeLen(i)))
		}
	}
	return nil
}

// checkPad rejects a pad pattern that is not exactly one row of w bytes.
func checkPad(field string, pad []byte, w int) error {
	if len(pad) != w {
		return spec.Reject(spec.ErrRowCount, field, len(pad), fmt.Sprintf("one row of w (%d) bytes", w))
	}
	return nil
}
