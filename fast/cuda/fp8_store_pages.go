//go:build cuda

package cuda

import (
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// FP8StorePages is the CUDA twin of ref.FP8StorePages (docs/spec/cp-layout.md §7.4
// Store): ref's validation on the host (slots in range and pairwise
// distinct, so the scatter has no write conflict), then the pool is
// uploaded, fp8_store_pages_scatter writes row e at slot locs[e] (one
// thread per 16-byte word), and the pool is read back. A store of no rows
// launches nothing.
func FP8StorePages(_ spec.Limits, in spec.FP8StorePagesInput) (spec.FP8StorePagesOutput, error) {
	if err := ref.ValidateFP8StorePages(in); err != nil {
		return spec.FP8StorePagesOutput{}, err
	}
	pool := spec.Rows{W: spec.FP8RowBytes, B: make([]byte, len(in.Pool.Rows.B))}
	out := spec.FP8StorePagesOutput{Pool: spec.FP8Pool{PageSize: in.Pool.PageSize, Size: in.Pool.Size, Rows: pool}}
	n := int64(len(in.Locs))
	if n == 0 {
		copy(pool.B, in.Pool.Rows.B)
		return out, nil
	}
	err := run("fp8.store_pages", func(c *call) error {
		dpool, err := c.upload(in.Pool.Rows.B)
		if err != nil {
			return err
		}
		drows, err := c.upload(in.Rows.B)
		if err != nil {
			return err
		}
		dlocs, err := c.uploadInt64s(in.Locs)
		if err != nil {
			return err
		}
		if err := c.launch("fp8_store_pages_scatter", n*fp8RowWords, dpool, drows, dlocs, n); err != nil {
			return err
		}
		return c.download(pool.B, dpool)
	})
	if err != nil {
		return spec.FP8StorePagesOutput{}, err
	}
	return out, nil
}
