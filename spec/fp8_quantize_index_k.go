package spec

// Byte geometry of the FP8 rows (docs/spec/cp-layout.md §7.1).
const (
	// MLANopeDim is the number of bf16 k_nope values of an MLA latent.
	MLANopeDim = 512
	// MLARopeDim is the number of bf16 k_rope values of an MLA latent.
	MLARopeDim = 64
	// MLABF16RowBytes is the width of an MLA bf16 row: 512 + 64 bf16.
	MLABF16RowBytes = 2 * (MLANopeDim + MLARopeDim)
	// FP8TileDim is the number of k_nope values sharing one fp32 scale.
	FP8TileDim = 128
	// FP8Tiles is the number of scale tiles of a 656-byte row.
	FP8Tiles = MLANopeDim / FP8TileDim
	// FP8RowBytes is the width of the NSA/MLA FP8 row: 512 codes, 4 fp32
	// scales, 64 bf16 rope values.
	FP8RowBytes = MLANopeDim + 4*FP8Tiles + 2*MLARopeDim
	// FP8ScaleOff is the byte offset of tile 0's fp32 scale in a 656-byte row.
	FP8ScaleOff = MLANopeDim
	// FP8RopeOff is the byte offset of the rope bf16 values in a 656-byte row.
	FP8RopeOff = FP8ScaleOff + 4*FP8Tiles
	// IndexKDim is the number of bf16 values of an NSA index key.
	IndexKDim = 128
	// IndexKBF16RowBytes is the width of an index key as bf16.
	IndexKBF16RowBytes = 2 * IndexKDim
	// IndexKRowBytes is the width of a quantized index key: 128 codes and
	// one fp32 scale (little-endian) after them.
	IndexKRowBytes = IndexKDim + 4
)

// ScaleMode selects the byte-exact arithmetic of a 656-byte row's tile
// scales and codes (docs/spec/cp-layout.md §7.2, "Scale modes").
type ScaleMode string

// The three scale modes of §7.2. The empty string means ScaleDivFP32.
const (
	// ScaleDivFP32 is the canonical default: s = fl32(amax/448), codes enc(fl32(x/s)).
	ScaleDivFP32 ScaleMode = "div_fp32"
	// ScaleRecipFP32 is upstream's Triton kernel: codes enc(fl32(x·fl32(1/s))).
	ScaleRecipFP32 ScaleMode = "recip_fp32"
	// ScaleDivBF16 is upstream's torch reference: s = fl32(bf16RNE(amax/448)).
	ScaleDivBF16 ScaleMode = "div_bf16"
)

// FP8QuantizeRowInput is the input of fp8.quantize_row (docs/spec/cp-layout.md §7.2).
type FP8QuantizeRowInput struct {
	// Mode is the scale mode: div_fp32 (default when empty), recip_fp32 or div_bf16.
	Mode ScaleMode `json:"mode"`
	// X holds MLA bf16 rows of 1152 bytes: 512 k_nope then 64 k_rope bf16, little-endian.
	X Rows `json:"x"`
}

// FP8QuantizeIndexKInput is the input of fp8.quantize_index_k (docs/spec/cp-layout.md §7.3).
type FP8QuantizeIndexKInput struct {
	// X holds index keys of 256 bytes: 128 bf16 values, little-endian.
	X Rows `json:"x"`
}

// FP8QuantizeRowOutput is the output of fp8.quantize_row: 656-byte FP8
// rows.
type FP8QuantizeRowOutput struct {
	// Rows is the quantized rows, one per input row, in input order.
	Rows Rows `json:"rows"`
}

// FP8QuantizeIndexKOutput is the output of fp8.quantize_index_k: 132-byte
// index-key rows.
type FP8QuantizeIndexKOutput struct {
	// Rows is the quantized rows, one per input row, in input order.
	Rows Rows `json:"rows"`
}
