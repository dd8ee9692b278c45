//go:build !amd64

package fast

import "github.com/kvtwin/kvtwin/spec"

// hash512Impls is the one page hash there is without amd64.
func hash512Impls() map[string]func([]spec.PrefixHash, []byte, uint64, bool) uint64 {
	return map[string]func([]spec.PrefixHash, []byte, uint64, bool) uint64{"generic": hash512Generic}
}

// hash512WidenImpls is the one fused decode and page hash there is
// without amd64.
func hash512WidenImpls() map[string]func([]spec.PrefixHash, []int64, []byte, uint64, bool) {
	return map[string]func([]spec.PrefixHash, []int64, []byte, uint64, bool){
		"generic": hash512WidenGeneric, "le32-generic": keepingIDs(hash512LE32Generic)}
}
