package ref

import "fmt"

// Validation for FP8 row quantization (docs/spec/cp-layout.md §7.1, §7.2): scale mode, row width and each input.

// ErrUnsupportedDims: an FP8 op got rows of a width other than the one its
// format fixes (docs/spec/cp-layout.md §0.5, §7.1).
var ErrUnsupportedDims = NewSentinel("unsupported_dims", "row width is not the FP8 format's")

// CheckScaleMode rejects a mode other than the three of §7.2 (or "", the
// default) with ErrBadEnum naming field, and returns the effective mode.
func CheckScaleMode(field string, m ScaleMode) (ScaleMode, error) {
	switch m {
	case "":
		return ScaleDivFP32, nil
	case ScaleDivFP32, ScaleRecipFP32, ScaleDivBF16:
		return m, nil
	}
	return "", Reject(ErrBadEnum, field, string(m), "one of div_fp32, recip_fp32, div_bf16")
}

// CheckFP8Width rejects a buffer that is malformed (ErrRowCount) or whose
// width is not w (ErrUnsupportedDims), naming field.
func CheckFP8Width(field string, x Rows, w int) error {
	if err := x.checkShape(field); err != nil {
		return err
	}
	if x.W != w {
		return Reject(ErrUnsupportedDims, field+".w", x.W, fmt.Sprintf("%d bytes", w))
	}
	return nil
}

// validateFP8QuantizeRow checks an fp8.quantize_row input in order: the
// mode, the shape and width of X, then every value finite (the first
// non-finite one, row by row, nope before rope, is ErrNonFinite naming
// "x[i].nope[j]" or "x[i].rope[j]"). It returns the effective mode.
func validateFP8QuantizeRow(in FP8QuantizeRowInput) (ScaleMode, error) {
	m, err := CheckScaleMode("mode", in.Mode)
	if err != nil {
		return "", err
	}
	if err := CheckFP8Width("x", in.X, MLABF16RowBytes); err != nil {
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
func validateFP8QuantizeIndexK(in FP8QuantizeIndexKInput) error {
	if err := CheckFP8Width("x", in.X, IndexKBF16RowBytes); err != nil {
		return err
	}
	for i := range in.X.N() {
		if err := FirstNonFiniteIndexK(i, in.X.Row(i)); err != nil {
			return err
		}
	}
	return nil
}
