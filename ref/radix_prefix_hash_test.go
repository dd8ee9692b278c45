package ref_test

import (
	"fmt"
	"testing"

	"github.com/kvtwin/kvtwin/ref"
)

// TestPrefixHashesMatchAnIndependentXXH3 checks the chain against vectors
// computed with Debian's python3-xxhash (the C libxxhash), as written in
// docs/spec/radix-acks.md §1.14: the seed of each namespace and unit kind,
// two chained pages, a 64-unit page (XXH3's long-input path) and a bigram
// page (8-byte units past 2^32).
func TestPrefixHashesMatchAnIndependentXXH3(t *testing.T) {
	lora, salt := "lora-a", "s"
	seed := ref.PrefixHashSeed(ref.ExtraKey{}, false)
	long := make([]ref.Unit, 64)
	for i := range long {
		long[i] = ref.Unit(i)
	}
	cases := []struct {
		name string
		got  []ref.PrefixHash
		want string
	}{
		{"seed, no namespace", []ref.PrefixHash{seed}, "[d7db7890aba8277d]"},
		{"seed, extra", []ref.PrefixHash{ref.PrefixHashSeed(ref.ExtraKeyOf(&lora, nil), false)}, "[c91c97a198b407bb]"},
		{"seed, salt", []ref.PrefixHash{ref.PrefixHashSeed(ref.ExtraKeyOf(nil, &salt), false)}, "[9198bf557d321251]"},
		{"seed, bigram", []ref.PrefixHash{ref.PrefixHashSeed(ref.ExtraKey{}, true)}, "[f08d963c65cd6fcf]"},
		{"tokens 1 2 3 4, page size 2", ref.PrefixHashes(ref.RadixKey{Units: []ref.Unit{1, 2, 3, 4, 5}}, 2), "[ecedaee0b76af570 c0709cfe9f8cf327]"},
		{"extra, one page", ref.PrefixHashes(ref.RadixKey{Units: []ref.Unit{1, 2}, Extra: ref.ExtraKeyOf(&lora, nil)}, 2), "[8e5b40d9ac033587]"},
		{"bigrams of 1 2 3", ref.PrefixHashes(ref.RadixKey{Units: []ref.Unit{ref.PackBigram(1, 2), ref.PackBigram(2, 3)}, Bigram: true}, 2), "[2358235e1ded9d95]"},
		{"one 64-unit page", ref.PrefixHashes(ref.RadixKey{Units: long}, 64), "[c5e3c4e333f399b0]"},
	}
	for _, c := range cases {
		if got := fmt.Sprintf("%016x", c.got); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
