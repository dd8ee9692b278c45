//go:build cuda

package cuda

import (
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// FP8QuantizeIndexK is the CUDA twin of ref.FP8QuantizeIndexK (docs/spec/cp-layout.md
// §7.3): the width is checked on the host as fast checks it, the keys are
// quantized by one launch of fp8_quantize_index_k_rows (8 threads per key,
// 16 codes each), and a NaN/±Inf found on the device is reported by ref's
// helper for the first key holding one.
func FP8QuantizeIndexK(_ spec.Limits, in spec.FP8QuantizeIndexKInput) (spec.FP8QuantizeIndexKOutput, error) {
	if err := ref.CheckFP8Width("x", in.X, spec.IndexKBF16RowBytes); err != nil {
		return spec.FP8QuantizeIndexKOutput{}, err
	}
	n := in.X.N()
	out := ref.NewRows(spec.IndexKRowBytes, n)
	if n == 0 {
		return spec.FP8QuantizeIndexKOutput{Rows: out}, nil
	}
	bad := int64(-1)
	err := run("fp8.quantize_index_k", func(c *call) error {
		dx, err := c.upload(in.X.B)
		if err != nil {
			return err
		}
		dq, err := c.alloc(int64(len(out.B)))
		if err != nil {
			return err
		}
		if err := firstBadRow(c, "fp8_quantize_index_k_rows", int64(n), int64(n)*indexKRowItems, &bad, dq, dx, int64(n)); err != nil || bad >= 0 {
			return err
		}
		return c.download(out.B, dq)
	})
	if err != nil {
		return spec.FP8QuantizeIndexKOutput{}, err
	}
	if bad >= 0 {
		return spec.FP8QuantizeIndexKOutput{}, ref.FirstNonFiniteIndexK(int(bad), in.X.Row(int(bad)))
	}
	return spec.FP8QuantizeIndexKOutput{Rows: out}, nil
}
