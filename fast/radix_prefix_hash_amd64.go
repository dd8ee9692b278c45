package fast

import (
	"golang.org/x/sys/cpu"

	"github.com/kvtwin/kvtwin/spec"
)

// useHash512 reports whether hash512 runs the AVX-512 assembly: 3,750
// pages of 512 bytes in 47 µs here against 75 µs through xxh3.Hash one
// page at a time (docs/perf.md, "The binary row's floor").
var useHash512 = cpu.X86.HasAVX512F

// hash512 sets dst[i] to the XXH3-64 of src[512i:512i+512]: §1.14's page
// hash of 64 units. src holds 512·len(dst) bytes. Without AVX-512 it is
// hash512Generic.
func hash512(dst []spec.PrefixHash, src []byte) {
	if !useHash512 {
		hash512Generic(dst, src)
		return
	}
	hash512AVX512(dst, src[:512*len(dst)])
}

// hash512AVX512 is hash512 in amd64 assembly with AVX-512F.
//
//go:noescape
func hash512AVX512(dst []spec.PrefixHash, src []byte)
