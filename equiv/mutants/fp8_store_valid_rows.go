package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// StoreSuffixCount is docs/spec/cp-layout.md §2.5's scalar "non-padded count" put
// into the cache write of §7.4: the first Rv(r) local rows are taken as the
// valid ones, so a PAD row is quantized into a token's slot and a later
// valid row is never stored.
func StoreSuffixCount() equiv.Killable {
	return &equiv.Mutant[spec.FP8StoreValidRowsInput, spec.FP8StoreValidRowsOutput]{
		Spec:    equiv.FP8StoreValidRows(),
		ID:      "store-suffix-count",
		Section: "cp-layout.md §2.5, §7.4",
		About:   "the cache write stores the first Rv(r) local rows (scalar non-padded count): a PAD row lands in a token's slot, a later valid row is never stored",
		Fn: func(lim spec.Limits, in spec.FP8StoreValidRowsInput) (spec.FP8StoreValidRowsOutput, error) {
			plan, err := ref.ValidateFP8StoreValidRows(lim, in)
			if err != nil {
				return spec.FP8StoreValidRowsOutput{}, err
			}
			const w, cw = spec.FP8RowBytes, spec.MLABF16RowBytes
			b := make([]byte, len(in.Pool.Rows.B))
			copy(b, in.Pool.Rows.B)
			for e, loc := range plan.Locs {
				fast.QuantizeRows656(b[loc*w:(loc+1)*w], in.X.B[e*cw:(e+1)*cw], spec.ScaleDivFP32)
			}
			return spec.FP8StoreValidRowsOutput{Pool: spec.FP8Pool{PageSize: in.Pool.PageSize, Size: in.Pool.Size, Rows: spec.Rows{W: w, B: b}}}, nil
		},
	}
}
