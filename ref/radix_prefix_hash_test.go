package ref_test

import (
	"fmt"
	"testing"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestPrefixHashesMatchAnIndependentXXH3 checks the chain against vectors
// computed with Debian's python3-xxhash (the C libxxhash), as written in
// docs/spec/radix-acks.md §1.14: the seed of each namespace and unit kind,
// two chained pages, a 64-unit page (XXH3's long-input path) and a bigram
// page (8-byte units past 2^32).
func TestPrefixHashesMatchAnIndependentXXH3(t *testing.T) {
	lora, salt := "lora-a", "s"
	seed := ref.PrefixHashSeed(spec.ExtraKey{}, false)
	long := make([]spec.Unit, 64)
	for i := range long {
		long[i] = spec.Unit(i)
	}
	cases := []struct {
		name string
		got  []spec.PrefixHash
		want string
	}{
		{"seed, no namespace", []spec.PrefixHash{seed}, "[d7db7890aba8277d]"},
		{"seed, extra", []spec.PrefixHash{ref.PrefixHashSeed(spec.ExtraKeyOf(&lora, nil), false)}, "[c91c97a198b407bb]"},
		{"seed, salt", []spec.PrefixHash{ref.PrefixHashSeed(spec.ExtraKeyOf(nil, &salt), false)}, "[9198bf557d321251]"},
		{"seed, bigram", []spec.PrefixHash{ref.PrefixHashSeed(spec.ExtraKey{}, true)}, "[f08d963c65cd6fcf]"},
		{"tokens 1 2 3 4, page size 2", ref.PrefixHashes(spec.RadixKey{Units: []spec.Unit{1, 2, 3, 4, 5}}, 2), "[ecedaee0b76af570 c0709cfe9f8cf327]"},
		{"extra, one page", ref.PrefixHashes(spec.RadixKey{Units: []spec.Unit{1, 2}, Extra: spec.ExtraKeyOf(&lora, nil)}, 2), "[8e5b40d9ac033587]"},
		{"bigrams of 1 2 3", ref.PrefixHashes(spec.RadixKey{Units: []spec.Unit{ref.PackBigram(1, 2), ref.PackBigram(2, 3)}, Bigram: true}, 2), "[2358235e1ded9d95]"},
		{"one 64-unit page", ref.PrefixHashes(spec.RadixKey{Units: long}, 64), "[c5e3c4e333f399b0]"},
	}
	for _, c := range cases {
		if got := fmt.Sprintf("%016x", c.got); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
