package catalog

import (
	"encoding/binary"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// FP8QuantizeRow registers fp8.quantize_row (docs/spec/cp-layout.md §7.2).
func FP8QuantizeRow() *Op[spec.FP8QuantizeRowInput, spec.FP8QuantizeRowOutput] {
	return &Op[spec.FP8QuantizeRowInput, spec.FP8QuantizeRowOutput]{
		OpName:  "fp8.quantize_row",
		SpecRef: "cp-layout.md §7.2",
		Summary: "MLA bf16 rows (1152 B) to 656-byte FP8 rows: e4m3 codes, per-tile fp32 scales (div_fp32, recip_fp32 or div_bf16), bf16 rope; all-zero tile has scale 0",
		Ref:     ref.FP8QuantizeRow,
		Fast:    fast.FP8QuantizeRow,
		CUDA:    cuda.FP8QuantizeRow,
		Sample:  spec.FP8QuantizeRowInput{Mode: spec.ScaleDivFP32, X: WorkedFP8Rows()},
		Shapes: []Shape[spec.FP8QuantizeRowInput]{
			// The shape: 128K rows (144 MiB of bf16 input).
			{Name: "128K-rows-div_fp32", Make: func() spec.FP8QuantizeRowInput {
				return spec.FP8QuantizeRowInput{Mode: spec.ScaleDivFP32, X: BF16BenchRows(spec.MLABF16RowBytes, 128<<10)}
			}},
		},
	}
}

// FP8QuantizeIndexK registers fp8.quantize_index_k (docs/spec/cp-layout.md §7.3).
func FP8QuantizeIndexK() *Op[spec.FP8QuantizeIndexKInput, spec.FP8QuantizeIndexKOutput] {
	return &Op[spec.FP8QuantizeIndexKInput, spec.FP8QuantizeIndexKOutput]{
		OpName:  "fp8.quantize_index_k",
		SpecRef: "cp-layout.md §7.3",
		Summary: "NSA index keys (128 bf16) to 132-byte rows: e4m3 codes and one power-of-two (ue8m0) fp32 scale",
		Ref:     ref.FP8QuantizeIndexK,
		Fast:    fast.FP8QuantizeIndexK,
		CUDA:    cuda.FP8QuantizeIndexK,
		Sample:  spec.FP8QuantizeIndexKInput{X: WorkedIndexKRows()},
		Shapes: []Shape[spec.FP8QuantizeIndexKInput]{
			{Name: "128K-keys", Make: func() spec.FP8QuantizeIndexKInput {
				return spec.FP8QuantizeIndexKInput{X: BF16BenchRows(spec.IndexKBF16RowBytes, 128<<10)}
			}},
		},
	}
}

// putBF16s writes vs as little-endian bf16 at the start of row.
func putBF16s(row []byte, vs ...uint16) {
	for j, v := range vs {
		binary.LittleEndian.PutUint16(row[2*j:], v)
	}
}

// WorkedFP8Rows is §7.2's worked tile [1.0, −2.0, 0.5, 0.3, 0…] (the other
// three tiles zero) with rope values 1.0 and −0.5, then vector A7's tile
// (x = 0x3EAF, amax = 0x3F44) in every tile.
func WorkedFP8Rows() spec.Rows {
	x := ref.NewRows(spec.MLABF16RowBytes, 2)
	putBF16s(x.Row(0), 0x3F80, 0xC000, 0x3F00, 0x3E9A)
	putBF16s(x.Row(0)[2*spec.MLANopeDim:], 0x3F80, 0xBF00)
	for t := range spec.FP8Tiles {
		putBF16s(x.Row(1)[2*spec.FP8TileDim*t:], 0x3F44, 0x3EAF)
	}
	return x
}

// WorkedIndexKRows is §7.3's worked keys [1.0, −0.5, 0…], [3.0, 0.75, 0…]
// and the all-zero key.
func WorkedIndexKRows() spec.Rows {
	x := ref.NewRows(spec.IndexKBF16RowBytes, 3)
	putBF16s(x.Row(0), 0x3F80, 0xBF00)
	putBF16s(x.Row(1), 0x4040, 0x3F40)
	return x
}

// BF16BenchRows is n rows of w bytes of bf16 activations: random sign and
// mantissa, exponents uniform over 2^-7..2^0 (a deterministic xorshift),
// so each tile spans the e4m3 range as real k_nope tiles do.
func BF16BenchRows(w, n int) spec.Rows {
	x := ref.NewRows(w, n)
	s := uint32(0x9E3779B9)
	for i := 0; i < len(x.B); i += 2 {
		s ^= s << 13
		s ^= s >> 17
		s ^= s << 5
		h := uint16(s)&0x83FF | 0x3C00 // exponents 0x78..0x7F
		binary.LittleEndian.PutUint16(x.B[i:], h)
	}
	return x
}
