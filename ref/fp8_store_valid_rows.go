package ref

import (
	"strings"

	"github.com/kvtwin/kvtwin/spec"
)

// StoreValidLocs returns the cache-write slots of rank r's valid local rows
// (docs/spec/cp-layout.md §7.4): req_to_token[i][P_i + t] for each (i, t) of
// LocalTokenIDs(lay, r), in local order. The caller has checked the
// lists' lengths.
func StoreValidLocs(lay spec.Layout, r int, reqToToken [][]int64, prefixLens []int) []int64 {
	locs := []int64{}
	for _, tok := range LocalTokenIDs(lay, r) {
		locs = append(locs, reqToToken[tok.Req][prefixLens[tok.Req]+tok.T])
	}
	return locs
}

// FP8StoreValidRows is fp8.store_valid_rows (docs/spec/cp-layout.md §7.4
// StoreValidRows), written as the spec composes it: SelectLocalValidRows →
// quantize each row (div_fp32) → Store at req_to_token[i][P_i + t] for each
// (i, t) of LocalTokenIDs(r). Padding rows never touch the pool.
func FP8StoreValidRows(lim spec.Limits, in spec.FP8StoreValidRowsInput) (spec.FP8StoreValidRowsOutput, error) {
	plan, err := ValidateFP8StoreValidRows(lim, in)
	if err != nil {
		return spec.FP8StoreValidRowsOutput{}, err
	}
	sel, _, err := SelectLocalValidRows(plan.Lay, in.Rank, in.X)
	if err != nil {
		return spec.FP8StoreValidRowsOutput{}, err
	}
	q, err := FP8QuantizeRow(lim, spec.FP8QuantizeRowInput{X: sel})
	if err != nil {
		if ie, ok := spec.AsInputError(err); ok {
			return spec.FP8StoreValidRowsOutput{}, spec.Reject(ie.Err, "selected"+strings.TrimPrefix(ie.Field, "x"), ie.Value, ie.Bound)
		}
		return spec.FP8StoreValidRowsOutput{}, err
	}
	st, err := FP8StorePages(lim, spec.FP8StorePagesInput{Pool: in.Pool, Locs: StoreValidLocs(plan.Lay, in.Rank, in.ReqToToken, in.PrefixLens), Rows: q.Rows})
	if err != nil {
		return spec.FP8StoreValidRowsOutput{}, err
	}
	return spec.FP8StoreValidRowsOutput(st), nil
}
