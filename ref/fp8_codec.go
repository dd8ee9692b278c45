package ref

import (
	"math"

	"github.com/kvtwin/kvtwin/spec"
)

// The bit-exact number codecs of docs/spec/cp-layout.md §0.4, written as integer
// algorithms so every implementation (Go, and a GPU kernel compiled without
// fast math) produces the same bytes: fp32 ↔ bf16 and fp32 ↔ fp8 e4m3fn.

// bf16CanonicalNaN is the one bf16 NaN kvtwin emits (§0.4, designed: vendor
// intrinsics may emit another pattern).
const bf16CanonicalNaN uint16 = 0x7FC0

// F32FromBF16 widens a bf16 (carried as its bits) to fp32: exact.
func F32FromBF16(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// BF16FromF32 rounds fp32 to bf16 to nearest, ties to even (§0.4). Every
// NaN becomes bf16CanonicalNaN; infinities and overflow round as IEEE does.
func BF16FromF32(x float32) uint16 {
	u := math.Float32bits(x)
	if u&0x7FFFFFFF > 0x7F800000 {
		return bf16CanonicalNaN
	}
	return uint16((u + 0x7FFF + ((u >> 16) & 1)) >> 16)
}

// DecodeE4M3 is dec(c) of §0.4: the exact fp32 value of an e4m3fn code
// (NaN for S.1111.111; no infinities).
func DecodeE4M3(c uint8) float32 {
	if c&0x7F == 0x7F {
		return float32(math.NaN())
	}
	e, m := int((c>>3)&0xF), float32(c&7)
	var v float32
	if e == 0 {
		v = m * (1.0 / 512) // m · 2^-9, exact
	} else {
		v = float32(math.Ldexp(float64(1+m/8), e-7))
	}
	if c&0x80 != 0 {
		return -v
	}
	return v
}

// EncodeE4M3 is enc(x) of §0.4: fp32 to e4m3fn, round to nearest with ties
// to even, saturating at ±448 (so ±Inf is ±448), every NaN to E4M3NaN, and
// the sign of zero kept (−0 → 0x80). It equals PTX
// cvt.rn.satfinite.e4m3x2.f32 except that the NaN code is pinned.
func EncodeE4M3(x float32) uint8 {
	u := math.Float32bits(x)
	sign, a := uint8(u>>31), u&0x7FFFFFFF
	if a > 0x7F800000 {
		return spec.E4M3NaN
	}
	var code uint32
	if a < 0x3C800000 { // |x| < 2^-6: the subnormal range, in units of 2^-9
		code = uint32(roundHalfEven(math.Float32frombits(a) * 512))
	} else {
		r := a + 0x7FFFF + ((a >> 20) & 1)
		code = (r >> 20) - 960 // 960 = (127 − 7) · 8
	}
	code = min(code, uint32(spec.E4M3Max))
	return uint8(code) | sign<<7
}

// roundHalfEven rounds a non-negative fp32 below 2^23 to the nearest
// integer, ties to even; the product in EncodeE4M3 is exact, so this is the
// whole rounding.
func roundHalfEven(v float32) float32 {
	return float32(math.RoundToEven(float64(v)))
}
