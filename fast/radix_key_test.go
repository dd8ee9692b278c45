package fast_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestKeyViewsShareTheirBacking is the §1.1 table on fast.RadixKey: slicing is
// O(1) and allocation-free, bounds are ErrKeyRange, MatchLen is the
// page-floored common prefix and agrees with ref.MatchLen, and Compact
// copies exactly once.
func TestKeyViewsShareTheirBacking(t *testing.T) {
	units := []spec.Unit{1, 2, 3, 4, 5, 6}
	k := fast.NewRadixKey(units, spec.ExtraKey{}, false)
	if a := testing.AllocsPerRun(10, func() { s, _ := k.Slice(1, 5); _, _ = s.At(0) }); a != 0 {
		t.Errorf("Slice+At allocated %v times", a)
	}
	s, _ := k.Slice(2, 5)
	if u, _ := s.At(0); u != 3 || s.Len() != 3 {
		t.Errorf("Slice(2,5) starts at %d, len %d", u, s.Len())
	}
	for _, bad := range [][2]int{{-1, 2}, {3, 2}, {0, 7}} {
		if _, err := k.Slice(bad[0], bad[1]); !errors.Is(err, spec.ErrKeyRange) {
			t.Errorf("Slice%v: %v", bad, err)
		}
	}
	if _, err := k.At(6); !errors.Is(err, spec.ErrKeyRange) {
		t.Errorf("At(6): %v", err)
	}
	c, copied := s.Compact()
	if copied != 3 || !c.IsCompact() || !c.Equal(s) {
		t.Errorf("Compact of a view copied %d, compact %v", copied, c.IsCompact())
	}
	if _, again := c.Compact(); again != 0 {
		t.Errorf("Compact of a compact key copied %d units", again)
	}
	units[2] = 99
	if u, _ := c.At(0); u != 3 {
		t.Error("a compacted key still aliases the caller's buffer")
	}
	lora := "x"
	if _, err := k.MatchLen(fast.NewRadixKey(units, spec.ExtraKeyOf(&lora, nil), false), 1); !errors.Is(err, spec.ErrExtraKeyMismatch) {
		t.Errorf("namespace mismatch: %v", err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 500 {
		a, b := randomUnits(rng), randomUnits(rng)
		ps := 1 + rng.IntN(4)
		want, _ := ref.MatchLen(spec.RadixKey{Units: a}, spec.RadixKey{Units: b}, ps)
		got, _ := fast.NewRadixKey(a, spec.ExtraKey{}, false).MatchLen(fast.NewRadixKey(b, spec.ExtraKey{}, false), ps)
		if got != want {
			t.Fatalf("MatchLen(%v, %v, %d) = %d, ref %d", a, b, ps, got, want)
		}
	}
}

// TestPairViewMatchesItsMaterializedKey: a bigram view over tokens matches,
// child-keys and compares exactly like its packed key, including across the
// memequal chunk size.
func TestPairViewMatchesItsMaterializedKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 300 {
		toks := make([]spec.Unit, 1+rng.IntN(1200))
		for i := range toks {
			toks[i] = spec.Unit(rng.IntN(2))
		}
		view, err := fast.NewRadixKey(toks, spec.ExtraKey{}, false).AsBigram()
		if err != nil {
			t.Fatal(err)
		}
		packed, _ := ref.ToBigram(spec.RadixKey{Units: toks})
		other := slices.Clone(packed.Units)
		if len(other) > 0 {
			other[rng.IntN(len(other))] ^= 1
		}
		ps := 1 + rng.IntN(3)
		for _, against := range [][]spec.Unit{packed.Units, other} {
			stored := fast.NewRadixKey(against, spec.ExtraKey{}, true)
			want, _ := ref.MatchLen(spec.RadixKey{Units: against, Bigram: true}, packed, ps)
			got, _ := stored.MatchLen(view, ps)
			back, _ := view.MatchLen(stored, ps)
			if got != want || back != want {
				t.Fatalf("pair view MatchLen = %d / %d, want %d", got, back, want)
			}
		}
		if !view.Equal(fast.NewRadixKey(packed.Units, spec.ExtraKey{}, true)) || view.ChildKey(ps) != fast.NewRadixKey(packed.Units, spec.ExtraKey{}, true).ChildKey(ps) {
			t.Fatal("pair view and packed key differ in Equal or ChildKey")
		}
	}
}

// randomUnits is a short key over a 2-unit alphabet, so prefixes are long.
func randomUnits(rng *rand.Rand) []spec.Unit {
	u := make([]spec.Unit, rng.IntN(1100))
	for i := range u {
		u[i] = spec.Unit(rng.IntN(2))
		if rng.IntN(8) > 0 && i > 0 {
			u[i] = 1
		}
	}
	return u
}

func TestTokenKeyViewEqualsTokenKeyWithoutCopying(t *testing.T) {
	for _, tokens := range [][]int64{{}, {0, 1, spec.MaxToken}, {5, -1, 7}, {1, 1 << 32}, {-1 << 63}} {
		want, werr := ref.TokenKey("tokens", tokens, spec.ExtraKey{})
		got, gerr := fast.TokenKeyView("tokens", tokens, spec.ExtraKey{})
		if diff := cmp.Diff(fmt.Sprint(werr), fmt.Sprint(gerr)); diff != "" {
			t.Fatalf("%v: errors differ:\n%s", tokens, diff)
		}
		if diff := cmp.Diff(want, got); werr == nil && diff != "" {
			t.Fatalf("%v: keys differ:\n%s", tokens, diff)
		}
	}
	tokens := []int64{3, 4}
	k, _ := fast.TokenKeyView("tokens", tokens, spec.ExtraKey{})
	tokens[0] = 9
	if k.Units[0] != 9 {
		t.Fatal("TokenKeyView copied the tokens")
	}
	if n := testing.AllocsPerRun(10, func() { _, _ = fast.TokenKeyView("tokens", tokens, spec.ExtraKey{}) }); n != 0 {
		t.Fatalf("TokenKeyView allocated %v times", n)
	}
}
