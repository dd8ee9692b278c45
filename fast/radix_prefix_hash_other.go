//go:build !amd64

package fast

import "github.com/kvtwin/kvtwin/spec"

// useHash512 is false: only amd64 has the vector page hash.
const useHash512 = false

// hash512 is hash512Generic where there is no vector page hash.
func hash512(dst []spec.PrefixHash, src []byte, prev uint64, fold bool) uint64 {
	return hash512Generic(dst, src, prev, fold)
}

// hash512Widen is hash512WidenGeneric where there is no vector page hash.
func hash512Widen(dst []spec.PrefixHash, units []int64, src []byte, prev uint64, fold bool) {
	hash512WidenGeneric(dst, units, src, prev, fold)
}

// hash512LE32 is hash512LE32Generic where there is no vector page hash.
func hash512LE32(dst []spec.PrefixHash, src []byte, prev uint64, fold bool) {
	hash512LE32Generic(dst, src, prev, fold)
}
