package spec

// DequantRowBytes is the width of one dequantized MLA row (docs/spec/cp-layout.md
// §7.1): 512 k_nope + 64 k_rope bf16 values, little-endian.
const DequantRowBytes = MLABF16RowBytes

var (
	// ErrTopKIndexOutOfRange: a top-k row id outside [-1, N) (docs/spec/cp-layout.md §7.6).
	ErrTopKIndexOutOfRange = NewSentinel("topk_index_out_of_range", "top-k index outside [-1, N)")
	// ErrDequantVerifyMismatch: the verify gate found a sparse row that
	// differs from the full dequant (docs/spec/cp-layout.md §7.6 step 4).
	ErrDequantVerifyMismatch = NewSentinel("dequant_verify_mismatch", "top-k dequant differs from full dequant")
)

// FP8DequantTopKInput is the input of fp8.dequant_topk (docs/spec/cp-layout.md §7.6).
type FP8DequantTopKInput struct {
	// Kq is the composed/materialized buffer of N 656-byte FP8 rows.
	Kq Rows `json:"kq"`
	// TopK holds, per query, global row ids into Kq; -1 is an empty entry.
	TopK [][]int32 `json:"topk"`
	// Verify also runs the full dequant and compares (the expensive debug gate).
	Verify bool `json:"verify"`
}

// FP8DequantTopKOutput is the set of writes the in-place dequant makes into
// the N×1152-byte out buffer: one row per referenced row id, each once.
// The op returns the writes rather than the whole buffer so that its cost
// (and its canonical output) stays proportional to the referenced rows;
// DequantTopKInPlace applies them to a caller's pre-filled buffer.
type FP8DequantTopKOutput struct {
	// RowIDs are the distinct referenced rows (ids >= 0 in TopK), ascending.
	RowIDs []int64 `json:"row_ids"`
	// Rows holds the dequantized row of each RowIDs entry, 1152 B each.
	Rows Rows `json:"rows"`
}
