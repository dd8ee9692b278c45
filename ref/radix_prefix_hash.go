package ref

import (
	"encoding/binary"
	"fmt"

	"github.com/kvtwin/kvtwin/spec"
	"github.com/zeebo/xxh3"
)

// prefixHashDomain opens every seed's input, so kvtwin's chains never equal
// hashes another scheme computes over the same bytes.
const prefixHashDomain = "kvtwin.prefix-hash.v2"

// PrefixHashSeed is h₋₁, the hash a key's first page chains from: XXH3-64 of
// the domain string, a flag byte (1 extra set, 2 salt set, 4 bigram units)
// and the extra and salt strings, each after its length as 8 little-endian
// bytes (docs/spec/radix-acks.md §1.14). Keys in different namespaces or
// unit spaces therefore never share a chain.
func PrefixHashSeed(extra spec.ExtraKey, bigram bool) spec.PrefixHash {
	b := []byte(prefixHashDomain)
	var flags byte
	if extra.HasExtra {
		flags |= 1
	}
	if extra.HasSalt {
		flags |= 2
	}
	if bigram {
		flags |= 4
	}
	b = append(b, flags)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(extra.Extra)))
	b = append(b, extra.Extra...)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(extra.Salt)))
	b = append(b, extra.Salt...)
	return spec.PrefixHash(xxh3.Hash(b))
}

// NextPrefixHash is hᵢ = XXH3-64(LE64(hᵢ₋₁) ‖ LE64(pᵢ)), where pᵢ is the
// unseeded XXH3-64 of the page's units, each as 8 little-endian bytes
// (docs/spec/radix-acks.md §1.14). Only the 16-byte fold is sequential: the
// page hashes of a key can be computed in any order, in parallel.
func NextPrefixHash(prev spec.PrefixHash, page []spec.Unit) spec.PrefixHash {
	return foldPrefixHash(prev, pageHash(page))
}

// pageHash is pᵢ, the unseeded XXH3-64 of a page's units, each as 8
// little-endian bytes (docs/spec/radix-acks.md §1.14).
func pageHash(page []spec.Unit) uint64 {
	b := make([]byte, 0, 8*len(page))
	for _, u := range page {
		b = binary.LittleEndian.AppendUint64(b, u)
	}
	return xxh3.Hash(b)
}

// foldPrefixHash is hᵢ from hᵢ₋₁ and pᵢ: XXH3-64 of the two as 8
// little-endian bytes each (docs/spec/radix-acks.md §1.14).
func foldPrefixHash(prev spec.PrefixHash, page uint64) spec.PrefixHash {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(prev))
	binary.LittleEndian.PutUint64(b[8:], page)
	return spec.PrefixHash(xxh3.Hash(b[:]))
}

// PrefixHashes is the chain of k's whole pages of ps units, from
// PrefixHashSeed(k's namespace and unit kind); a trailing partial page has no
// hash. k must already be in the tree's unit space (bigrams in Eagle mode)
// and ps >= 1.
func PrefixHashes(k spec.RadixKey, ps int) []spec.PrefixHash {
	h := PrefixHashSeed(k.Extra, k.Bigram)
	out := make([]spec.PrefixHash, 0, len(k.Units)/ps)
	for i := 0; i+ps <= len(k.Units); i += ps {
		h = NextPrefixHash(h, k.Units[i:i+ps])
		out = append(out, h)
	}
	return out
}

// errPrefixHashCount: a hashed score given a chain whose length is not the
// key's whole-page count (a Go caller mixing up keys or trees).
var errPrefixHashCount = spec.NewSentinel("prefix_hash_count", "prefix hash chain does not fit the key")

// CheckPrefixHashCount rejects a chain of got hashes for a key of want whole
// pages with errPrefixHashCount.
func CheckPrefixHashCount(got, want int) error {
	if got != want {
		return spec.Reject(errPrefixHashCount, "hashes", got, fmt.Sprintf("== %d, the key's whole pages", want))
	}
	return nil
}
