package fast

import (
	"golang.org/x/sys/cpu"

	"github.com/kvtwin/kvtwin/spec"
)

// hash512Impls are the page hashes TestHash512IsXXH3 checks on amd64: the
// generic one, and the assembly where the CPU has AVX-512F.
func hash512Impls() map[string]func([]spec.PrefixHash, []byte, uint64, bool) uint64 {
	impls := map[string]func([]spec.PrefixHash, []byte, uint64, bool) uint64{"generic": hash512Generic}
	if cpu.X86.HasAVX512F {
		impls["avx512"] = hash512AVX512
	}
	return impls
}

// hash512WidenImpls are the fused decode and page hashes
// TestHash512WidenIsWidenThenXXH3 checks on amd64: the generic one, and
// the assembly where the CPU has AVX-512F.
func hash512WidenImpls() map[string]func([]spec.PrefixHash, []int64, []byte, uint64, bool) {
	impls := map[string]func([]spec.PrefixHash, []int64, []byte, uint64, bool){
		"generic": hash512WidenGeneric, "le32-generic": keepingIDs(hash512LE32Generic)}
	if cpu.X86.HasAVX512F {
		impls["avx512"] = hash512WidenAVX512
		impls["le32-avx512"] = keepingIDs(hash512LE32AVX512)
	}
	return impls
}
