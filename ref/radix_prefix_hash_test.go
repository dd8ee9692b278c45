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
		{"seed, no namespace", []spec.PrefixHash{seed}, "[15527a9eca00d307]"},
		{"seed, extra", []spec.PrefixHash{ref.PrefixHashSeed(spec.ExtraKeyOf(&lora, nil), false)}, "[3f976464b7825523]"},
		{"seed, salt", []spec.PrefixHash{ref.PrefixHashSeed(spec.ExtraKeyOf(nil, &salt), false)}, "[2c358664501ea17e]"},
		{"seed, bigram", []spec.PrefixHash{ref.PrefixHashSeed(spec.ExtraKey{}, true)}, "[e91dcf045b345ddb]"},
		{"tokens 1 2 3 4, page size 2", ref.PrefixHashes(spec.RadixKey{Units: []spec.Unit{1, 2, 3, 4, 5}}, 2), "[10bb6bb75f9dc566 0a223b07a80ddb76]"},
		{"extra, one page", ref.PrefixHashes(spec.RadixKey{Units: []spec.Unit{1, 2}, Extra: spec.ExtraKeyOf(&lora, nil)}, 2), "[57a51fce05c3c916]"},
		{"bigrams of 1 2 3", ref.PrefixHashes(spec.RadixKey{Units: []spec.Unit{ref.PackBigram(1, 2), ref.PackBigram(2, 3)}, Bigram: true}, 2), "[a18fbe015f1add2f]"},
		{"one 64-unit page", ref.PrefixHashes(spec.RadixKey{Units: long}, 64), "[81c03b15f377e8d8]"},
	}
	for _, c := range cases {
		if got := fmt.Sprintf("%016x", c.got); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	if got := fmt.Sprintf("%016x", ref.PageHash([]spec.Unit{1, 2})); got != "07ee86c281446bef" {
		t.Errorf("page hash of units 1 2: %s, want 07ee86c281446bef", got)
	}
}
