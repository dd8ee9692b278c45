//go:build !amd64

package fast

import (
	"github.com/kvtwin/kvtwin/spec"
	"github.com/zeebo/xxh3"
)

// useHash512 is false: only amd64 has the vector page hash.
const useHash512 = false

// hash512 sets dst[i] to the XXH3-64 of src[512i:512i+512].
func hash512(dst []spec.PrefixHash, src []byte) {
	for i := range dst {
		dst[i] = spec.PrefixHash(xxh3.Hash(src[512*i : 512*i+512]))
	}
}
