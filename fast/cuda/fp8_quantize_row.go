//go:build cuda

package cuda

import (
	"fmt"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// Work items per row of the FP8 kernels (see kernels/fp8_*.cu): 4 tiles of
// a quantized row (each thread encodes a whole tile and copies 2 rope
// words), and one per 16-byte output word elsewhere: 41 words of a raw 656-byte row, 72 words of a dequantized 1152-byte row,
// and 8 items of 16 codes per index key.
const (
	quantRowItems  = 4
	fp8RowWords    = spec.FP8RowBytes / 16
	dequantItems   = spec.DequantRowBytes / 16
	indexKRowItems = spec.IndexKDim / 16
)

// FP8QuantizeRow is the CUDA twin of ref.FP8QuantizeRow (docs/spec/cp-layout.md
// §7.2): the mode and width are checked on the host as fast checks them,
// the rows are quantized by one launch of fp8_quantize_row_rows (one
// thread per 128-value tile), and a NaN/±Inf found on the device is
// reported by ref's helper for the first row holding one, so the error is
// ref's byte for byte.
func FP8QuantizeRow(_ spec.Limits, in spec.FP8QuantizeRowInput) (spec.FP8QuantizeRowOutput, error) {
	m, err := ref.CheckScaleMode("mode", in.Mode)
	if err != nil {
		return spec.FP8QuantizeRowOutput{}, err
	}
	if err := ref.CheckFP8Width("x", in.X, spec.MLABF16RowBytes); err != nil {
		return spec.FP8QuantizeRowOutput{}, err
	}
	n := in.X.N()
	out := ref.NewRows(spec.FP8RowBytes, n)
	if n == 0 {
		return spec.FP8QuantizeRowOutput{Rows: out}, nil
	}
	bad := int64(-1)
	err = run("fp8.quantize_row", func(c *call) error {
		dx, err := c.upload(in.X.B)
		if err != nil {
			return err
		}
		dq, b, err := quantizeRows656(c, dx, int64(n), m)
		if bad = b; err != nil || bad >= 0 {
			return err
		}
		return c.download(out.B, dq)
	})
	if err != nil {
		return spec.FP8QuantizeRowOutput{}, err
	}
	if bad >= 0 {
		return spec.FP8QuantizeRowOutput{}, ref.FirstNonFiniteRow656(int(bad), in.X.Row(int(bad)))
	}
	return spec.FP8QuantizeRowOutput{Rows: out}, nil
}

// scaleModeArg is the kernel's code of an effective scale mode (0
// div_fp32, 1 recip_fp32, 2 div_bf16; kernels/fp8_quantize_row.cu).
func scaleModeArg(m spec.ScaleMode) (int64, error) {
	switch m {
	case spec.ScaleDivFP32:
		return 0, nil
	case spec.ScaleRecipFP32:
		return 1, nil
	case spec.ScaleDivBF16:
		return 2, nil
	}
	return 0, fmt.Errorf("cuda: scale mode %q is not an effective mode", m)
}

// quantizeRows656 quantizes the n >= 1 MLA bf16 rows at dx (1152 B each)
// on the device in effective mode m, into a new device buffer of n
// 656-byte rows. bad is the first row holding a NaN/±Inf (the buffer is
// then partly written), or -1.
func quantizeRows656(c *call, dx devicePtr, n int64, m spec.ScaleMode) (dq devicePtr, bad int64, err error) {
	mode, err := scaleModeArg(m)
	if err != nil {
		return 0, -1, fmt.Errorf("cuda: %s: %w", c.op, err)
	}
	if dq, err = c.alloc(n * spec.FP8RowBytes); err != nil {
		return 0, -1, err
	}
	err = firstBadRow(c, "fp8_quantize_row_rows", n, n*quantRowItems, &bad, dq, dx, n, mode)
	return dq, bad, err
}

// firstBadRow launches kernel over items work items with args followed by
// a device word that starts at n and that the kernel lowers (atomicMin)
// to each row holding a NaN/±Inf; *bad is the row it ends at, or -1.
func firstBadRow(c *call, kernel string, n, items int64, bad *int64, args ...any) error {
	st := []int64{n}
	dst, err := c.uploadInt64s(st)
	if err != nil {
		return err
	}
	if err := c.launch(kernel, items, append(args, dst)...); err != nil {
		return err
	}
	if err := c.downloadInt64s(st, dst); err != nil {
		return err
	}
	*bad = -1
	if st[0] < n {
		*bad = st[0]
	}
	return nil
}
