package ref

import "github.com/kvtwin/kvtwin/spec"

// FP8StorePages is fp8.store_pages (docs/spec/cp-layout.md §7.4 Store): the pool with
// row e written at slot locs[e]; every other slot unchanged.
func FP8StorePages(_ spec.Limits, in spec.FP8StorePagesInput) (spec.FP8StorePagesOutput, error) {
	if err := ValidateFP8StorePages(in); err != nil {
		return spec.FP8StorePagesOutput{}, err
	}
	pool := NewRows(spec.FP8RowBytes, in.Pool.Rows.N())
	for s := range pool.N() {
		copy(pool.Row(s), in.Pool.Rows.Row(s))
	}
	for e, loc := range in.Locs {
		copy(pool.Row(int(loc)), in.Rows.Row(e))
	}
	return spec.FP8StorePagesOutput{Pool: spec.FP8Pool{PageSize: in.Pool.PageSize, Size: in.Pool.Size, Rows: pool}}, nil
}

// FP8MaterializePages is fp8.materialize_pages (docs/spec/cp-layout.md §7.4
// Materialize): the raw rows at slots, concatenated (no dequant).
func FP8MaterializePages(lim spec.Limits, in spec.FP8MaterializePagesInput) (spec.FP8MaterializePagesOutput, error) {
	if err := ValidateFP8MaterializePages(lim, in); err != nil {
		return spec.FP8MaterializePagesOutput{}, err
	}
	out := NewRows(spec.FP8RowBytes, len(in.Slots))
	for i, s := range in.Slots {
		if err := lim.Poll(i, "slots"); err != nil {
			return spec.FP8MaterializePagesOutput{}, err
		}
		copy(out.Row(i), in.Pool.Rows.Row(int(s)))
	}
	return spec.FP8MaterializePagesOutput{Rows: out}, nil
}
