package spec

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
