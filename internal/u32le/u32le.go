// Package u32le widens binary token lists (little-endian u32) into 8-byte
// units, with a vector path where the CPU has one.
//
// The units are what the prefix hash is defined over (docs/spec/radix-acks.md
// §1.14), and the widening bounds a long binary score's decode (docs/perf.md,
// "The binary row's floor").
package u32le

import "encoding/binary"

// Widen sets each dst[i] to the little-endian u32 at src[4i:4i+4]. src must
// hold at least 4·len(dst) bytes.
func Widen(dst []int64, src []byte) {
	src = src[:4*len(dst)]
	if n := len(dst) &^ (vectorTokens - 1); useVector && n > 0 {
		widenVector(dst[:n], src)
		dst, src = dst[n:], src[4*n:]
	}
	widenGeneric(dst, src)
}

// widenGeneric is Widen in plain Go: two tokens from each 8-byte load, the
// slices shortened as they go so the compiler drops the bounds checks
// (about 3× the one-at-a-time loop).
func widenGeneric(dst []int64, src []byte) {
	for len(dst) >= 2 && len(src) >= 8 {
		x := binary.LittleEndian.Uint64(src)
		dst[0], dst[1] = int64(uint32(x)), int64(x>>32)
		dst, src = dst[2:], src[8:]
	}
	if len(dst) == 1 && len(src) >= 4 {
		dst[0] = int64(binary.LittleEndian.Uint32(src))
	}
}
