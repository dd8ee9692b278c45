package ref

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kvtwin/kvtwin/spec"
)

// FP8 row quantization of docs/spec/cp-layout.md §7.2 (the 656-byte NSA/MLA row) and
// §7.3 (the 132-byte index-K row), written to read like the spec.

// fp8Max is 448, the largest finite e4m3fn value, as fp32.
const fp8Max float32 = 448

// bf16Finite reports whether a bf16 (as bits) is neither NaN nor ±Inf.
func bf16Finite(h uint16) bool { return h&0x7F80 != 0x7F80 }

// FP8TileScale is step 2–3's scale of a tile whose largest magnitude is
// amax > 0 (finite), in mode m (§7.2 table).
func FP8TileScale(amax float32, m spec.ScaleMode) float32 {
	s := float32(amax / fp8Max)
	if m == spec.ScaleDivBF16 {
		s = F32FromBF16(BF16FromF32(s))
	}
	return s
}

// FP8TileCode is the code of value x in a tile of scale s != 0, in mode m:
// IEEE division for div_fp32 and div_bf16, multiplication by fl32(1/s) for
// recip_fp32 (§7.2; the two differ in rare ties, vector A7).
func FP8TileCode(x, s float32, m spec.ScaleMode) uint8 {
	if m == spec.ScaleRecipFP32 {
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
func quantizeRow656(nope [spec.MLANopeDim]uint16, rope [spec.MLARopeDim]uint16, m spec.ScaleMode) ([spec.FP8RowBytes]byte, error) {
	var row [spec.FP8RowBytes]byte
	m, err := CheckScaleMode("mode", m)
	if err != nil {
		return row, err
	}
	for j, h := range nope {
		if !bf16Finite(h) {
			return row, rejectNonFiniteBF16(spec.Idx("nope", j), h)
		}
	}
	for j, h := range rope {
		if !bf16Finite(h) {
			return row, rejectNonFiniteBF16(spec.Idx("rope", j), h)
		}
	}
	for t := range spec.FP8Tiles {
		tile := nope[t*spec.FP8TileDim : (t+1)*spec.FP8TileDim]
		var amax float32
		for _, h := range tile {
			amax = max(amax, float32(math.Abs(float64(F32FromBF16(h)))))
		}
		var s float32 // the all-zero tile: s = 0, codes 0x00 (§7.2 step 2)
		if amax != 0 {
			s = FP8TileScale(amax, m)
			for j, h := range tile {
				row[t*spec.FP8TileDim+j] = FP8TileCode(F32FromBF16(h), s, m)
			}
		}
		binary.LittleEndian.PutUint32(row[spec.FP8ScaleOff+4*t:], math.Float32bits(s))
	}
	for j, h := range rope {
		binary.LittleEndian.PutUint16(row[spec.FP8RopeOff+2*j:], h)
	}
	return row, nil
}

// DequantRow656 is §7.2's dequantization of a 656-byte row to 576 bf16
// values: nope j = bf16RNE(fl32(dec(code_j)·s_t)) (a NaN code gives
// 0x7FC0), then the 64 rope values copied.
func DequantRow656(row [spec.FP8RowBytes]byte) [spec.MLANopeDim + spec.MLARopeDim]uint16 {
	var out [spec.MLANopeDim + spec.MLARopeDim]uint16
	for t := range spec.FP8Tiles {
		s := math.Float32frombits(binary.LittleEndian.Uint32(row[spec.FP8ScaleOff+4*t:]))
		for j := t * spec.FP8TileDim; j < (t+1)*spec.FP8TileDim; j++ {
			out[j] = BF16FromF32(float32(DecodeE4M3(row[j]) * s))
		}
	}
	for j := range spec.MLARopeDim {
		out[spec.MLANopeDim+j] = binary.LittleEndian.Uint16(row[spec.FP8RopeOff+2*j:])
	}
	return out
}

// rejectNonFiniteBF16 is the ErrNonFinite of an FP8 quantizer for bf16
// value h at field.
func rejectNonFiniteBF16(field string, h uint16) error {
	return spec.Reject(spec.ErrNonFinite, field, fmt.Sprintf("0x%04X", h), "a finite bf16")
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
func quantizeIndexK(k [spec.IndexKDim]uint16) ([spec.IndexKRowBytes]byte, error) {
	var row [spec.IndexKRowBytes]byte
	var amax float32
	for j, h := range k {
		if !bf16Finite(h) {
			return row, rejectNonFiniteBF16(spec.Idx("k", j), h)
		}
		amax = max(amax, float32(math.Abs(float64(F32FromBF16(h)))))
	}
	s := IndexKScale(amax)
	for j, h := range k {
		q := float32(F32FromBF16(h) / s)
		row[j] = EncodeE4M3(min(max(q, -fp8Max), fp8Max))
	}
	binary.LittleEndian.PutUint32(row[spec.IndexKDim:], math.Float32bits(s))
	return row, nil
}

// FirstNonFiniteRow656 returns ErrNonFinite for the first NaN or ±Inf bf16
// of 1152-byte row i (nope before rope), or nil.
func FirstNonFiniteRow656(i int, row []byte) error {
	for j := range spec.MLANopeDim + spec.MLARopeDim {
		h := binary.LittleEndian.Uint16(row[2*j:])
		if bf16Finite(h) {
			continue
		}
		if j < spec.MLANopeDim {
			return rejectNonFiniteBF16(spec.Idx("x", i)+spec.Idx(".nope", j), h)
		}
		return rejectNonFiniteBF16(spec.Idx("x", i)+spec.Idx(".rope", j-spec.MLANopeDim), h)
	}
	return nil
}

// FirstNonFiniteIndexK returns ErrNonFinite for the first NaN or ±Inf bf16
// of 256-byte key row i, or nil.
func FirstNonFiniteIndexK(i int, row []byte) error {
	for j := range spec.IndexKDim {
		if h := binary.LittleEndian.Uint16(row[2*j:]); !bf16Finite(h) {
			return rejectNonFiniteBF16(spec.Idx("x", i)+spec.Idx(".k", j), h)
		}
	}
	return nil
}

// FP8QuantizeRow is fp8.quantize_row (docs/spec/cp-layout.md §7.2): each 1152-byte
// MLA bf16 row of X quantized to its 656-byte FP8 row, in mode in.Mode.
func FP8QuantizeRow(_ spec.Limits, in spec.FP8QuantizeRowInput) (spec.FP8QuantizeRowOutput, error) {
	m, err := validateFP8QuantizeRow(in)
	if err != nil {
		return spec.FP8QuantizeRowOutput{}, err
	}
	out := NewRows(spec.FP8RowBytes, in.X.N())
	for i := range in.X.N() {
		src := in.X.Row(i)
		var nope [spec.MLANopeDim]uint16
		var rope [spec.MLARopeDim]uint16
		for j := range nope {
			nope[j] = binary.LittleEndian.Uint16(src[2*j:])
		}
		for j := range rope {
			rope[j] = binary.LittleEndian.Uint16(src[2*(spec.MLANopeDim+j):])
		}
		row, err := quantizeRow656(nope, rope, m)
		if err != nil {
			return spec.FP8QuantizeRowOutput{}, err
		}
		copy(out.Row(i), row[:])
	}
	return spec.FP8QuantizeRowOutput{Rows: out}, nil
}

// FP8QuantizeIndexK is fp8.quantize_index_k (docs/spec/cp-layout.md §7.3): each
// 256-byte bf16 key of X quantized to its 132-byte row.
func FP8QuantizeIndexK(_ spec.Limits, in spec.FP8QuantizeIndexKInput) (spec.FP8QuantizeIndexKOutput, error) {
	if err := validateFP8QuantizeIndexK(in); err != nil {
		return spec.FP8QuantizeIndexKOutput{}, err
	}
	out := NewRows(spec.IndexKRowBytes, in.X.N())
	for i := range in.X.N() {
		src := in.X.Row(i)
		var k [spec.IndexKDim]uint16
		for j := range k {
			k[j] = binary.LittleEndian.Uint16(src[2*j:])
		}
		row, err := quantizeIndexK(k)
		if err != nil {
			return spec.FP8QuantizeIndexKOutput{}, err
		}
		copy(out.Row(i), row[:])
	}
	return spec.FP8QuantizeIndexKOutput{Rows: out}, nil
}
