package mutants

import (
	"encoding/binary"
	"math"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// fp8Requantize returns fast.FP8QuantizeRow's output with every non-zero
// tile's codes recomputed by code(x, s) from the scale fast wrote: the
// mutants below change only the per-value step of §7.2.
func fp8Requantize(code func(x, s float32, m spec.ScaleMode) uint8) func(spec.Limits, spec.FP8QuantizeRowInput) (spec.FP8QuantizeRowOutput, error) {
	return func(lim spec.Limits, in spec.FP8QuantizeRowInput) (spec.FP8QuantizeRowOutput, error) {
		out, err := fast.FP8QuantizeRow(lim, in)
		if err != nil {
			return out, err
		}
		m, _ := ref.CheckScaleMode("mode", in.Mode)
		for i := range in.X.N() {
			src, row := in.X.Row(i), out.Rows.Row(i)
			for t := range spec.FP8Tiles {
				var amax uint16
				for j := t * spec.FP8TileDim; j < (t+1)*spec.FP8TileDim; j++ {
					amax = max(amax, binary.LittleEndian.Uint16(src[2*j:])&0x7FFF)
				}
				if amax == 0 {
					continue
				}
				s := math.Float32frombits(binary.LittleEndian.Uint32(row[spec.FP8ScaleOff+4*t:]))
				for j := t * spec.FP8TileDim; j < (t+1)*spec.FP8TileDim; j++ {
					row[j] = code(ref.F32FromBF16(binary.LittleEndian.Uint16(src[2*j:])), s, m)
				}
			}
		}
		return out, nil
	}
}

// NoSaturation is docs/spec/cp-layout.md §0.4/§7.2: the quotient cast to e4m3
// without the ±448 clamp, as PyTorch's CPU cast does (anything rounding
// above 448 becomes NaN). With a normal scale x/s stays near 448, but a
// div_bf16 scale that bf16 rounds into its subnormals (amax = 2^-124:
// s = 2^-133, amax/s = 512) overflows.
func NoSaturation() equiv.Killable {
	return &equiv.Mutant[spec.FP8QuantizeRowInput, spec.FP8QuantizeRowOutput]{
		Spec:    equiv.FP8QuantizeRow(),
		ID:      "no-saturation",
		Section: "cp-layout.md §7.2",
		About:   "codes not clamped to ±448: a quotient above 448 (rounding to 480 or more) becomes the NaN code",
		Fn: fp8Requantize(func(x, s float32, m spec.ScaleMode) uint8 {
			q := float32(x / s)
			if m == spec.ScaleRecipFP32 {
				q = float32(x * float32(1/s))
			}
			c := ref.EncodeE4M3(q)
			if c&0x7F == spec.E4M3Max && math.Abs(float64(q)) >= 464 {
				return c | 0x7F // 464 is the tie that rounds to 448; above it torch gives NaN
			}
			return c
		}),
	}
}

// NaNLost is docs/spec/cp-layout.md §7.2: a NaN quotient encoded with its sign, as
// x86's 0/0 (the default NaN is negative) gives 0xFF, not §0.4's 0x7F. It
// shows where a finite tile's scale is 0 (div_bf16, amax = 2^-133) and a
// zero in it is divided by it.
func NaNLost() equiv.Killable {
	return &equiv.Mutant[spec.FP8QuantizeRowInput, spec.FP8QuantizeRowOutput]{
		Spec:    equiv.FP8QuantizeRow(),
		ID:      "nan-lost",
		Section: "cp-layout.md §7.2",
		About:   "a NaN quotient keeps the sign bit (0xFF from 0/0 on x86) instead of the one NaN code 0x7F",
		Fn: fp8Requantize(func(x, s float32, m spec.ScaleMode) uint8 {
			c := ref.FP8TileCode(x, s, m)
			if c == spec.E4M3NaN {
				return 0xFF
			}
			return c
		}),
	}
}

// ReciprocalMultiply is docs/spec/cp-layout.md §7.2's mode confusion: recip_fp32
// arithmetic (x·fl32(1/s), upstream's Triton kernel) when div_fp32 was
// asked. Vector A7: x = 0x3EAF, amax = 0x3F44 gives 0x75, not 0x74.
func ReciprocalMultiply() equiv.Killable {
	return &equiv.Mutant[spec.FP8QuantizeRowInput, spec.FP8QuantizeRowOutput]{
		Spec:    equiv.FP8QuantizeRow(),
		ID:      "reciprocal-multiply",
		Section: "cp-layout.md §7.2",
		About:   "div_fp32 computed as x·fl32(1/s): rare ties round the other way (A7: 0x75 instead of 0x74)",
		Fn: fp8Requantize(func(x, s float32, m spec.ScaleMode) uint8 {
			if m == spec.ScaleDivFP32 {
				m = spec.ScaleRecipFP32
			}
			return ref.FP8TileCode(x, s, m)
		}),
	}
}
