package ref

import (
	"fmt"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for FP8 row quantization (docs/spec/cp-layout.md §7.1, §7.2): scale mode, row width and each input.

// CheckScaleMode rejects a mode other than the three of §7.2 (or "", the
// default) with ErrBadEnum naming field, and returns the effective mode.
func CheckScaleMode(field string, m spec.ScaleMode) (spec.ScaleMode, error) {
	switch m {
	case "":
		return spec.ScaleDivFP32, nil
	case spec.ScaleDivFP32, spec.ScaleRecipFP32, spec.ScaleDivBF16:
		return m, nil
	}
	return "", spec.Reject(spec.ErrBadEnum, field, string(m), "one of div_fp32, recip_fp32, div_bf16")
}

// CheckFP8Width rejects a buffer that is malformed (ErrRowCount) or whose
// width is not w (ErrUnsupportedDims), naming field.
func CheckFP8Width(field string, x spec.Rows, w int) error {
	if err := x.CheckShape(field); err != nil {
		return err
	}
	if x.W != w {
		return spec.Reject(spec.ErrUnsupportedDims, field+".w", x.W, fmt.Sprintf("%d bytes", w))
	}
	return nil
}

// validateFP8QuantizeRow checks an fp8.quantize_row input in order: the
// mode, the shape and width of X, then every value finite (the first
// non-finite one, row by row, nope before rope, is ErrNonFinite naming
// "x[i].nope[j]" or "x[i].rope[j]"). It returns the effective mode.
func validateFP8QuantizeRow(in spec.FP8QuantizeRowInput) (spec.ScaleMode, error) {
	m, err := CheckScaleMode("mode", in.Mode)
	if err != nil {
		return "", err
	}
	if err := CheckFP8Width("x", in.X, spec.MLABF16RowBytes); err != nil {
		return "", err
	}
	for i := range in.X.N() {
		if err := FirstNonFiniteRow656(i, in.X.Row(i)); err != nil {
			return "", err
		}
	}
	return m, nil
}

// validateFP8QuantizeIndexK checks an fp8.quantize_index_k input: the
// shape and width of X, then every value finite (first offender,
// "x[i].k[j]").
func validateFP8QuantizeIndexK(in spec.FP8QuantizeIndexKInput) error {
	if err := CheckFP8Width("x", in.X, spec.IndexKBF16RowBytes); err != nil {
		return err
	}
	for i := range in.X.N() {
		if err := FirstNonFiniteIndexK(i, in.X.Row(i)); err != nil {
			return err
		}
	}
	return nil
}
