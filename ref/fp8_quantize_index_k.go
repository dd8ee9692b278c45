package ref

import (
	"encoding/binary"
	"fmt"
	"math"
)

// FP8 row quantization of docs/spec/cp-layout.md §7.2 (the 656-byte NSA/MLA row) and
// §7.3 (the 132-byte index-K row), written to read like the spec.

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

// fp8Max is 448, the largest finite e4m3fn value, as fp32.
const fp8Max float32 = 448

// bf16Finite reports whether a bf16 (as bits) is neither NaN nor ±Inf.
func bf16Finite(h uint16) bool { return h&0x7F80 != 0x7F80 }

// FP8TileScale is step 2–3's scale of a tile whose largest magnitude is
// amax > 0 (finite), in mode m (§7.2 table).
func FP8TileScale(amax float32, m ScaleMode) float32 {
	s := float32(amax / fp8Max)
	if m == ScaleDivBF16 {
		s = F32FromBF16(BF16FromF32(s))
	}
	return s
}

// FP8TileCode is the code of value x in a tile of scale s != 0, in mode m:
// IEEE division for div_fp32 and div_bf16, multiplication by fl32(1/s) for
// recip_fp32 (§7.2; the two differ in rare ties, vector A7).
func FP8TileCode(x, s float32, m ScaleMode) uint8 {
	if m == ScaleRecipFP32 {
		inv := float32(1 / s)
		return EncodeE4M3(float32(x * inv))
	}
	return EncodeE4M3(float32(x / s))
}

// quantizeRow656 quantizes one MLA latent to the 656-byte FP8 row of §7.2:
// per tile of 128 k_nope values the scale of mode m (the all-zero tile has
// scale 0 and codes 0x00), the codes, then the rope bytes verbatim. A NaN or
// ±Inf anywhere (nope, then rope) is ErrNonFinite naming "nope[j]" or
// "rope[j]"; m must be a valid mode ("" is div_fp32).
func quantizeRow656(nope [MLANopeDim]uint16, rope [MLARopeDim]uint16, m ScaleMode) ([FP8RowBytes]byte, error) {
	var row [FP8RowBytes]byte
	m, err := CheckScaleMode("mode", m)
	if err != nil {
		return row, err
	}
	for j, h := range nope {
		if !bf16Finite(h) {
			return row, rejectNonFiniteBF16(Idx("nope", j), h)
		}
	}
	for j, h := range rope {
		if !bf16Finite(h) {
			return row, rejectNonFiniteBF16(Idx("rope", j), h)
		}
	}
	for t := range FP8Tiles {
		tile := nope[t*FP8TileDim : (t+1)*FP8TileDim]
		var amax float32
		for _, h := range tile {
			amax = max(amax, float32(math.Abs(float64(F32FromBF16(h)))))
		}
		var s float32 // the all-zero tile: s = 0, codes 0x00 (§7.2 step 2)
		if amax != 0 {
			s = FP8TileScale(amax, m)
			for j, h := range tile {
				row[t*FP8TileDim+j] = FP8TileCode(F32FromBF16(h), s, m)
			}
		}
		binary.LittleEndian.PutUint32(row[FP8ScaleOff+4*t:], math.Float32bits(s))
	}
	for j, h := range rope {
		binary.LittleEndian.PutUint16(row[FP8RopeOff+2*j:], h)
	}
	return row, nil
}

// DequantRow656 is §7.2's dequantization of a 656-byte row to 576 bf16
// values: nope j = bf16RNE(fl32(dec(code_j)·s_t)) (a NaN code gives
// 0x7FC0), then the 64 rope values copied.
func DequantRow656(row [FP8RowBytes]byte) [MLANopeDim + MLARopeDim]uint16 {
	var out [MLANopeDim + MLARopeDim]uint16
	for t := range FP8Tiles {
		s := math.Float32frombits(binary.LittleEndian.Uint32(row[FP8ScaleOff+4*t:]))
		for j := t * FP8TileDim; j < (t+1)*FP8TileDim; j++ {
			out[j] = BF16FromF32(float32(DecodeE4M3(row[j]) * s))
		}
	}
	for j := range MLARopeDim {
		out[MLANopeDim+j] = binary.LittleEndian.Uint16(row[FP8RopeOff+2*j:])
	}
	return out
}

// rejectNonFiniteBF16 is the ErrNonFinite of an FP8 quantizer for bf16
// value h at field.
func rejectNonFiniteBF16(field string, h uint16) error {
	return Reject(ErrNonFinite, field, fmt.Sprintf("0x%04X", h), "a finite bf16")
}

// indexKScaleFloor is fl32(1e-4) = 0x38D1B717, §7.3's amax floor.
var indexKScaleFloor = math.Float32frombits(0x38D1B717)

// indexKInv448 is fl32(1/448) = 0x3B124925 (§7.3).
var indexKInv448 = math.Float32frombits(0x3B124925)

// IndexKScale is §7.3's power-of-two ("ue8m0") scale of a key whose
// largest magnitude is amax (finite, >= 0): t = fl32(max(amax, 1e-4) ·
// fl32(1/448)), s = 2^(E(t) − 127 + (mantissa(t) != 0)), built from bits.
func IndexKScale(amax float32) float32 {
	t := float32(max(amax, indexKScaleFloor) * indexKInv448)
	u := math.Float32bits(t)
	e := u >> 23 & 0xFF
	if u&0x7FFFFF != 0 {
		e++
	}
	return math.Float32frombits(e << 23)
}

// quantizeIndexK quantizes one 128-dim index key (bf16 bits) to the
// 132-byte row of §7.3: 128 codes enc(clamp(x/s, ±448)), then s as fp32
// little-endian. A NaN or ±Inf is ErrNonFinite naming "k[j]".
func quantizeIndexK(k [IndexKDim]uint16) ([IndexKRowBytes]byte, error) {
	var row [IndexKRowBytes]byte
	var amax float32
	for j, h := range k {
		if !bf16Finite(h) {
			return row, rejectNonFiniteBF16(Idx("k", j), h)
		}
		amax = max(amax, float32(math.Abs(float64(F32FromBF16(h)))))
	}
	s := IndexKScale(amax)
	for j, h := range k {
		q := float32(F32FromBF16(h) / s)
		row[j] = EncodeE4M3(min(max(q, -fp8Max), fp8Max))
	}
	binary.LittleEndian.PutUint32(row[IndexKDim:], math.Float32bits(s))
	return row, nil
}

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

// FirstNonFiniteRow656 returns ErrNonFinite for the first NaN or ±Inf bf16
// of 1152-byte row i (nope before rope), or nil.
func FirstNonFiniteRow656(i int, row []byte) error {
	for j := range MLANopeDim + MLARopeDim {
		h := binary.LittleEndian.Uint16(row[2*j:])
		if bf16Finite(h) {
			continue
		}
		if j < MLANopeDim {
			return rejectNonFiniteBF16(Idx("x", i)+Idx(".nope", j), h)
		}
		return rejectNonFiniteBF16(Idx("x", i)+Idx(".rope", j-MLANopeDim), h)
	}
	return nil
}

// FirstNonFiniteIndexK returns ErrNonFinite for the first NaN or ±Inf bf16
// of 256-byte key row i, or nil.
func FirstNonFiniteIndexK(i int, row []byte) error {
	for j := range IndexKDim {
		if h := binary.LittleEndian.Uint16(row[2*j:]); !bf16Finite(h) {
			return rejectNonFiniteBF16(Idx("x", i)+Idx(".k", j), h)
		}
	}
	return nil
}

// FP8QuantizeRow is fp8.quantize_row (docs/spec/cp-layout.md §7.2): each 1152-byte
// MLA bf16 row of X quantized to its 656-byte FP8 row, in mode in.Mode.
func FP8QuantizeRow(_ Limits, in FP8QuantizeRowInput) (FP8QuantizeRowOutput, error) {
	m, err := validateFP8QuantizeRow(in)
	if err != nil {
		return FP8QuantizeRowOutput{}, err
	}
	out := NewRows(FP8RowBytes, in.X.N())
	for i := range in.X.N() {
		src := in.X.Row(i)
		var nope [MLANopeDim]uint16
		var rope [MLARopeDim]uint16
		for j := range nope {
			nope[j] = binary.LittleEndian.Uint16(src[2*j:])
		}
		for j := range rope {
			rope[j] = binary.LittleEndian.Uint16(src[2*(MLANopeDim+j):])
		}
		row, err := quantizeRow656(nope, rope, m)
		if err != nil {
			return FP8QuantizeRowOutput{}, err
		}
		copy(out.Row(i), row[:])
	}
	return FP8QuantizeRowOutput{Rows: out}, nil
}

// FP8QuantizeIndexK is fp8.quantize_index_k (docs/spec/cp-layout.md §7.3): each
// 256-byte bf16 key of X quantized to its 132-byte row.
func FP8QuantizeIndexK(_ Limits, in FP8QuantizeIndexKInput) (FP8QuantizeIndexKOutput, error) {
	if err := validateFP8QuantizeIndexK(in); err != nil {
		return FP8QuantizeIndexKOutput{}, err
	}
	out := NewRows(IndexKRowBytes, in.X.N())
	for i := range in.X.N() {
		src := in.X.Row(i)
		var k [IndexKDim]uint16
		for j := range k {
			k[j] = binary.LittleEndian.Uint16(src[2*j:])
		}
		row, err := quantizeIndexK(k)
		if err != nil {
			return FP8QuantizeIndexKOutput{}, err
		}
		copy(out.Row(i), row[:])
	}
	return FP8QuantizeIndexKOutput{Rows: out}, nil
}
