package fast

import (
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// FP8StoreValidRows is the twin of ref.FP8StoreValidRows (docs/spec/cp-layout.md
// §7.4): one bulk copy of the pool, then each valid local row quantized
// straight into its slot, with no selected-rows or quantized-rows buffer
// in between.
func FP8StoreValidRows(lim spec.Limits, in spec.FP8StoreValidRowsInput) (spec.FP8StoreValidRowsOutput, error) {
	plan, err := ref.ValidateFP8StoreValidRows(lim, in)
	if err != nil {
		return spec.FP8StoreValidRowsOutput{}, err
	}
	const w, cw = spec.FP8RowBytes, spec.MLABF16RowBytes
	b := make([]byte, len(in.Pool.Rows.B))
	copy(b, in.Pool.Rows.B)
	for e, p := range plan.Local {
		loc := plan.Locs[e]
		// Validation proved every valid row finite, so no row is rejected here.
		QuantizeRows656(b[loc*w:(loc+1)*w], in.X.B[p*cw:(p+1)*cw], spec.ScaleDivFP32)
	}
	return spec.FP8StoreValidRowsOutput{Pool: spec.FP8Pool{PageSize: in.Pool.PageSize, Size: in.Pool.Size, Rows: spec.Rows{W: w, B: b}}}, nil
}
