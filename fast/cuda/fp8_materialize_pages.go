//go:build cuda

package cuda

import (
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// FP8MaterializePages is the CUDA twin of ref.FP8MaterializePages
// (docs/spec/cp-layout.md §7.4 Materialize): ref's validation on the host, then
// fp8_materialize_pages_gather copies the pool rows at slots into the
// output (one thread per 16-byte output word). No slots launch nothing.
func FP8MaterializePages(lim spec.Limits, in spec.FP8MaterializePagesInput) (spec.FP8MaterializePagesOutput, error) {
	if err := ref.ValidateFP8MaterializePages(lim, in); err != nil {
		return spec.FP8MaterializePagesOutput{}, err
	}
	// One kernel launch cannot be interrupted: the deadline is checked
	// before the device work starts.
	if err := lim.Canceled("slots"); err != nil {
		return spec.FP8MaterializePagesOutput{}, err
	}
	n := int64(len(in.Slots))
	out := ref.NewRows(spec.FP8RowBytes, len(in.Slots))
	if n == 0 {
		return spec.FP8MaterializePagesOutput{Rows: out}, nil
	}
	err := run("fp8.materialize_pages", func(c *call) error {
		dpool, err := c.upload(in.Pool.Rows.B)
		if err != nil {
			return err
		}
		dslots, err := c.uploadInt64s(in.Slots)
		if err != nil {
			return err
		}
		dout, err := c.alloc(int64(len(out.B)))
		if err != nil {
			return err
		}
		if err := c.launch("fp8_materialize_pages_gather", n*fp8RowWords, dout, dpool, dslots, n); err != nil {
			return err
		}
		return c.download(out.B, dout)
	})
	if err != nil {
		return spec.FP8MaterializePagesOutput{}, err
	}
	return spec.FP8MaterializePagesOutput{Rows: out}, nil
}
