package fast

import (
	"golang.org/x/sys/cpu"

	"github.com/kvtwin/kvtwin/spec"
)

// useHash512 reports whether hash512 runs the AVX-512 assembly: 3,750
// pages of 512 bytes in 47 µs here against 75 µs through xxh3.Hash one
// page at a time (docs/perf.md, "The binary row's floor").
var useHash512 = cpu.X86.HasAVX512F

// hash512 sets dst[i] to the XXH3-64 of src[512i:512i+512] (§1.14's page
// hash of 64 units) or, with fold, to the chain hash foldHash(hᵢ₋₁, pᵢ)
// from h₋₁ = prev, and returns the OR of every 8-byte unit of src (a bit
// past 32: a token id out of range). src holds 512·len(dst) bytes.
// Without AVX-512 it is hash512Generic.
func hash512(dst []spec.PrefixHash, src []byte, prev uint64, fold bool) uint64 {
	src = src[:512*len(dst)]
	if !useHash512 {
		return hash512Generic(dst, src, prev, fold)
	}
	return hash512AVX512(dst, src, prev, fold)
}

// hash512Widen sets units[j] to the little-endian u32 at src[4j:4j+4] for
// the 64·len(dst) units and dst[i] to the page hash pᵢ of
// units[64i:64i+64] or, with fold, to the chain hᵢ = foldHash(hᵢ₋₁, pᵢ)
// from h₋₁ = prev: u32le.Widen then hash512 (and the fold), in one pass
// where the CPU has AVX-512 (the hash then never reads the widened units
// back). units holds at least 64·len(dst) ids, src 256·len(dst) bytes.
func hash512Widen(dst []spec.PrefixHash, units []int64, src []byte, prev uint64, fold bool) {
	units, src = units[:64*len(dst)], src[:256*len(dst)]
	if !useHash512 {
		hash512WidenGeneric(dst, units, src, prev, fold)
		return
	}
	hash512WidenAVX512(dst, units, src, prev, fold)
}

// hash512WidenAVX512 is hash512Widen in amd64 assembly with AVX-512F.
//
//go:noescape
func hash512WidenAVX512(dst []spec.PrefixHash, units []int64, src []byte, prev uint64, fold bool)

// hash512AVX512 is hash512 in amd64 assembly with AVX-512F.
//
//go:noescape
func hash512AVX512(dst []spec.PrefixHash, src []byte, prev uint64, fold bool) (acc uint64)

// hash512LE32 is hash512Widen without storing the widened ids: dst[i] is
// the page hash (or, with fold, the chain hash) of the 64 little-endian
// u32 ids at src[256i:256i+256]. src holds 256·len(dst) bytes.
func hash512LE32(dst []spec.PrefixHash, src []byte, prev uint64, fold bool) {
	src = src[:256*len(dst)]
	if !useHash512 {
		hash512LE32Generic(dst, src, prev, fold)
		return
	}
	hash512LE32AVX512(dst, src, prev, fold)
}

// hash512LE32AVX512 is hash512LE32 in amd64 assembly with AVX-512F.
//
//go:noescape
func hash512LE32AVX512(dst []spec.PrefixHash, src []byte, prev uint64, fold bool)
