package ref

import "strings"

// FP8StoreValidRowsInput is the input of fp8.store_valid_rows (docs/spec/cp-layout.md
// §7.4 StoreValidRows): rank r's cache write of one layer.
type FP8StoreValidRowsInput struct {
	// Pool is the pool before the write (as fp8.store_pages' pool).
	Pool FP8Pool `json:"pool"`
	// Layout names the CP layout of the forward.
	Layout LayoutSpec `json:"layout"`
	// Rank is the CP rank r, in [0, cp).
	Rank int `json:"rank"`
	// X holds rank r's R(r) cp-local-compute-padded rows of 1152 bytes
	// (k_nope‖k_rope bf16, little-endian); padding rows are never read.
	X Rows `json:"x"`
	// ReqToToken holds, per request i, its token locs: token P_i + t of
	// request i is cached at slot ReqToToken[i][P_i + t]; each list holds
	// at least P_i + L_i entries.
	ReqToToken [][]int64 `json:"req_to_token"`
	// PrefixLens are the prefix lengths P_i, >= 0.
	PrefixLens []int `json:"prefix_lens"`
}

// FP8StoreValidRowsOutput is the pool after fp8.store_valid_rows.
type FP8StoreValidRowsOutput struct {
	// Pool is the pool with rank r's valid rows written.
	Pool FP8Pool `json:"pool"`
}

// FP8StoreValidPlan is a validated fp8.store_valid_rows input: the layout
// and, per valid local row of the rank (local order, LocalTokenIDs), the
// local row it comes from and the slot it goes to.
type FP8StoreValidPlan struct {
	// Lay is the built layout.
	Lay Layout
	// Local is the local row of each valid row, ascending.
	Local []int
	// Locs is the destination slot of each valid row.
	Locs []int64
}

// StoreValidLocs returns the cache-write slots of rank r's valid local rows
// (docs/spec/cp-layout.md §7.4): req_to_token[i][P_i + t] for each (i, t) of
// LocalTokenIDs(lay, r), in local order. The caller has checked the
// lists' lengths.
func StoreValidLocs(lay Layout, r int, reqToToken [][]int64, prefixLens []int) []int64 {
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
func FP8StoreValidRows(lim Limits, in FP8StoreValidRowsInput) (FP8StoreValidRowsOutput, error) {
	plan, err := ValidateFP8StoreValidRows(lim, in)
	if err != nil {
		return FP8StoreValidRowsOutput{}, err
	}
	sel, _, err := SelectLocalValidRows(plan.Lay, in.Rank, in.X)
	if err != nil {
		return FP8StoreValidRowsOutput{}, err
	}
	q, err := FP8QuantizeRow(lim, FP8QuantizeRowInput{X: sel})
	if err != nil {
		if ie, ok := AsInputError(err); ok {
			return FP8StoreValidRowsOutput{}, Reject(ie.Err, "selected"+strings.TrimPrefix(ie.Field, "x"), ie.Value, ie.Bound)
		}
		return FP8StoreValidRowsOutput{}, err
	}
	st, err := FP8StorePages(lim, FP8StorePagesInput{Pool: in.Pool, Locs: StoreValidLocs(plan.Lay, in.Rank, in.ReqToToken, in.PrefixLens), Rows: q.Rows})
	if err != nil {
		return FP8StoreValidRowsOutput{}, err
	}
	return FP8StoreValidRowsOutput(st), nil
}
