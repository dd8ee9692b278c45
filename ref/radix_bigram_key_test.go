package ref

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kvtwin/kvtwin/spec"
)

func TestRadixBigramKeyPairsAdjacentTokensAndDropsTheLastSlot(t *testing.T) {
	got, err := RadixBigramKey(spec.DefaultLimits(), spec.RadixBigramKeyInput{Tokens: []int64{5, 7, 7, 9}, Value: []spec.SlotIdx{100, 101, 102, 103}, PageSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := spec.RadixBigramKeyOutput{Pairs: [][2]int64{{5, 7}, {7, 7}, {7, 9}}, Value: []spec.SlotIdx{100, 101, 102}, AlignedLen: 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	for _, tokens := range [][]int64{{42}, {}} {
		got, _ := RadixBigramKey(spec.DefaultLimits(), spec.RadixBigramKeyInput{Tokens: tokens, PageSize: 1})
		if got.Pairs == nil || len(got.Pairs) != 0 {
			t.Fatalf("%v: pairs %v, want []", tokens, got.Pairs)
		}
	}
}

func TestBigramAlignmentCountsBigrams(t *testing.T) {
	tokens := make([]int64, 130)
	got, _ := RadixBigramKey(spec.DefaultLimits(), spec.RadixBigramKeyInput{Tokens: tokens, PageSize: 64})
	if len(got.Pairs) != 129 || got.AlignedLen != 128 {
		t.Fatalf("130 tokens at ps 64: %d pairs aligned to %d, want 129 and 128", len(got.Pairs), got.AlignedLen)
	}
}

func TestToBigramIsIdempotentAndDoesNotTouchItsInput(t *testing.T) {
	in := spec.RadixKey{Units: []spec.Unit{1, 2, 3}}
	once, err := ToBigram(in)
	if err != nil {
		t.Fatal(err)
	}
	twice, _ := ToBigram(once)
	if diff := cmp.Diff(once, twice); diff != "" {
		t.Fatal(diff)
	}
	if diff := cmp.Diff([]spec.Unit{1, 2, 3}, in.Units); diff != "" {
		t.Fatalf("input changed: %s", diff)
	}
	if _, err := ToBigram(spec.RadixKey{Units: []spec.Unit{1, 1 << 32}}); !errors.Is(err, spec.ErrTokenRange) {
		t.Fatalf("token 2^32: %v", err)
	}
}

// The vectors of docs/spec/radix-acks.md §2.4, computed independently of kvtwin.
func TestRadixPageHashesMatchTheSpecVectors(t *testing.T) {
	h := func(in spec.RadixPageHashesInput) spec.RadixPageHashesOutput {
		t.Helper()
		out, err := RadixPageHashes(spec.DefaultLimits(), in)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	tok := h(spec.RadixPageHashesInput{Tokens: []int64{1, 2, 3, 4}, PageSize: 2})
	want := spec.RadixPageHashesOutput{Units: 4, Hashes: []string{
		"34fb5c825de7ca4aea6e712f19d439c1da0c92c37b423936c5f618545ca4fa1f",
		"c57b445f90651b9a650e516ab2238c965b21af35608a31c303e6d9e407f2915c",
	}, EventIDs: []int64{3817746824117602890, 0}}
	want.EventIDs[1], _ = HashEventID(want.Hashes[1])
	if diff := cmp.Diff(want, tok); diff != "" {
		t.Fatalf("token pages (-want +got):\n%s", diff)
	}
	first := h(spec.RadixPageHashesInput{Tokens: []int64{1, 2, 3}, Bigram: true, PageSize: 2})
	second := h(spec.RadixPageHashesInput{Tokens: []int64{3, 4, 5}, Bigram: true, PageSize: 2, Prior: first.Hashes[0]})
	if first.Hashes[0] != "ede8ef26a097f0fd889f9f39f6f5af921370630b164c4a4fa28eb716b2df9269" || first.EventIDs[0] != -1303529142941650691 {
		t.Fatalf("bigram page: %v %v", first.Hashes, first.EventIDs)
	}
	if second.Hashes[0] != "678c5307f2a02a2aaf8edbeb80ebac13663f70e14a4fc8d5d62b77e702841e4b" {
		t.Fatalf("chained bigram page: %v", second.Hashes)
	}
	if first.Hashes[0] == "46df4303587e099c9112917c020a9dcdb872b79dcca03e8677faf66295e891f8" {
		t.Fatal("bigrams hashed as packed LE64")
	}
}

func TestBigramAndHashRejectBadInput(t *testing.T) {
	lim := spec.DefaultLimits()
	for _, c := range []struct {
		name string
		err  error
		want *spec.Sentinel
	}{
		{"token", func() error {
			_, err := RadixBigramKey(lim, spec.RadixBigramKeyInput{Tokens: []int64{-1}, PageSize: 1})
			return err
		}(), spec.ErrTokenRange},
		{"page", func() error { _, err := RadixBigramKey(lim, spec.RadixBigramKeyInput{Tokens: []int64{1}}); return err }(), spec.ErrInvalidPageSize},
		{"value", func() error {
			_, err := RadixBigramKey(lim, spec.RadixBigramKeyInput{Tokens: []int64{1, 2}, Value: []spec.SlotIdx{}, PageSize: 1})
			return err
		}(), spec.ErrValueLength},
		{"prior", func() error {
			_, err := RadixPageHashes(lim, spec.RadixPageHashesInput{Tokens: []int64{1}, PageSize: 1, Prior: "ABC"})
			return err
		}(), spec.ErrBadEnum},
		{"hash-token", func() error {
			_, err := RadixPageHashes(lim, spec.RadixPageHashesInput{Tokens: []int64{1 << 32}, PageSize: 1})
			return err
		}(), spec.ErrTokenRange},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %s", c.name, c.err, c.want.Code())
		}
	}
}
