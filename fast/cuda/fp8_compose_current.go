//go:build cuda

package cuda

import (
	"fmt"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// FP8ComposeCurrent is the CUDA twin of ref.FP8ComposeCurrent (docs/spec/cp-layout.md
// §7.5): ref's validation and current-row normalization on the host, then
// on the device the current rows are quantized (div_fp32) by
// fp8_quantize_row_rows and fp8_compose_current_gather writes every output
// row from its source — a prefix pool slot or a quantized current row —
// one thread per 16-byte word. The current slots are never read (P7.5).
func FP8ComposeCurrent(lim spec.Limits, in spec.FP8ComposeCurrentInput) (spec.FP8ComposeCurrentOutput, error) {
	plan, err := ref.ValidateFP8ComposeCurrent(lim, in)
	if err != nil {
		return spec.FP8ComposeCurrentOutput{}, err
	}
	cur, err := ref.NormalizeCurrent(plan, in.Current, in.M)
	if err != nil {
		return spec.FP8ComposeCurrentOutput{}, err
	}
	// One kernel launch cannot be interrupted: the deadline is checked
	// before the device work starts.
	if err := lim.Canceled("prefix_slots"); err != nil {
		return spec.FP8ComposeCurrentOutput{}, err
	}
	out := ref.NewRows(spec.FP8RowBytes, plan.Total)
	if plan.Total == 0 {
		return spec.FP8ComposeCurrentOutput{Rows: out}, nil
	}
	src, prefix := composeSources(in, plan.Total)
	err = run("fp8.compose_current", func(c *call) error {
		return composeOnDevice(c, in.Pool.Rows.B, cur, src, prefix, out.B)
	})
	if err != nil {
		return spec.FP8ComposeCurrentOutput{}, err
	}
	return spec.FP8ComposeCurrentOutput{Rows: out}, nil
}

// composeSources lists the source of each of the total output rows, per
// request its prefix slots (>= 0) then its current rows in global valid
// order, row q as -(q+1); prefix reports whether any row is a prefix row.
func composeSources(in spec.FP8ComposeCurrentInput, total int) (src []int64, prefix bool) {
	src = make([]int64, 0, total)
	base := int64(0)
	for b, ps := range in.PrefixSlots {
		src = append(src, ps...)
		prefix = prefix || len(ps) > 0
		for t := range int64(in.Lens[b]) {
			src = append(src, -(base + t + 1))
		}
		base += int64(in.Lens[b])
	}
	return src, prefix
}

// composeOnDevice quantizes cur (validated finite), uploads the pool when
// a prefix row needs it, and gathers the output rows of src into out.
func composeOnDevice(c *call, pool []byte, cur spec.Rows, src []int64, prefix bool, out []byte) error {
	var dq, dpool devicePtr
	if nq := int64(cur.N()); nq > 0 {
		dx, err := c.upload(cur.B)
		if err != nil {
			return err
		}
		var bad int64
		if dq, bad, err = quantizeRows656(c, dx, nq, spec.ScaleDivFP32); err != nil {
			return err
		}
		if bad >= 0 {
			return fmt.Errorf("cuda: %s: the device found a NaN/Inf in validated current row %d", c.op, bad)
		}
	}
	if prefix {
		var err error
		if dpool, err = c.upload(pool); err != nil {
			return err
		}
	}
	dsrc, err := c.uploadInt64s(src)
	if err != nil {
		return err
	}
	n := int64(len(src))
	dout, err := c.alloc(n * spec.FP8RowBytes)
	if err != nil {
		return err
	}
	if err := c.launch("fp8_compose_current_gather", n*fp8RowWords, dout, dpool, dq, dsrc, n); err != nil {
		return err
	}
	return c.download(out, dout)
}
