package spec

// FP8Pool is one layer of the page-slot pool of docs/spec/cp-layout.md §7.4, as an op
// input: numSlots = size + page_size rows of 656 bytes; slot = token loc.
//
// Ops take the pool state in their input and return it (a pure function of
// its input per op) instead of a stateful script: store's output pool is
// materialize's input pool, so the round trip is two calls, and P7.1 is
// checked on every store result by materializing its output.
type FP8Pool struct {
	// PageSize is ps, >= 1; page p covers slots [p·ps, (p+1)·ps).
	PageSize int64 `json:"page_size"`
	// Size is the pool's token capacity, >= 0; the pool has Size+PageSize slots.
	Size int64 `json:"size"`
	// Rows holds the numSlots raw 656-byte rows, slot order.
	Rows Rows `json:"rows"`
}

// FP8StorePagesInput is the input of fp8.store_pages (docs/spec/cp-layout.md §7.4 Store).
type FP8StorePagesInput struct {
	// Pool is the pool before the store.
	Pool FP8Pool `json:"pool"`
	// Locs are the destination slots, one per row, pairwise distinct.
	Locs []int64 `json:"locs"`
	// Rows are the 656-byte rows to write, Rows[e] at slot Locs[e].
	Rows Rows `json:"rows"`
}

// FP8StorePagesOutput is the pool after fp8.store_pages.
type FP8StorePagesOutput struct {
	// Pool is the pool with the rows written.
	Pool FP8Pool `json:"pool"`
}

// FP8MaterializePagesInput is the input of fp8.materialize_pages (docs/spec/cp-layout.md
// §7.4 Materialize).
type FP8MaterializePagesInput struct {
	// Pool is the pool to read.
	Pool FP8Pool `json:"pool"`
	// Slots lists the slots to gather, in output order (repeats allowed).
	Slots []int64 `json:"slots"`
}

// FP8MaterializePagesOutput is fp8.materialize_pages' result.
type FP8MaterializePagesOutput struct {
	// Rows is the concatenation of the raw pool rows at Slots.
	Rows Rows `json:"rows"`
}
