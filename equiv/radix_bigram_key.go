package equiv

import (
	"fmt"
	"slices"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// RadixBigramKey is the differential spec of radix.bigram_key (docs/spec/radix-acks.md §2.1, §2.5).
func RadixBigramKey() *Spec[spec.RadixBigramKeyInput, spec.RadixBigramKeyOutput] {
	return &Spec[spec.RadixBigramKeyInput, spec.RadixBigramKeyOutput]{
		Op:      catalog.RadixBigramKey(),
		Valid:   rapid.Custom(bigramValid),
		Invalid: rapid.Custom(bigramInvalid),
		Boundary: []Case[spec.RadixBigramKeyInput]{
			{"spec-example-5-7-7-9", spec.RadixBigramKeyInput{Tokens: []int64{5, 7, 7, 9}, Value: []spec.SlotIdx{100, 101, 102, 103}, PageSize: 1}},
			{"one-token-has-no-pairs", spec.RadixBigramKeyInput{Tokens: []int64{42}, Value: []spec.SlotIdx{7}, PageSize: 1}},
			{"no-tokens", spec.RadixBigramKeyInput{Tokens: []int64{}, PageSize: 1}},
			{"130-tokens-align-to-128-bigrams", spec.RadixBigramKeyInput{Tokens: make([]int64, 130), PageSize: 64}},
			{"4-tokens-align-to-2-bigrams", spec.RadixBigramKeyInput{Tokens: []int64{1, 2, 3, 4}, PageSize: 2}},
			{"largest-token", spec.RadixBigramKeyInput{Tokens: []int64{spec.MaxToken, 0, spec.MaxToken}, PageSize: 1}},
		},
		Regressions: []Case[spec.RadixBigramKeyInput]{
			// §2.5: the off-by-one builder pairs a token with itself.
			{"bigram-pairs-token-with-itself", spec.RadixBigramKeyInput{Tokens: []int64{1, 2}, PageSize: 1}},
		},
		Props: []Prop[spec.RadixBigramKeyInput, spec.RadixBigramKeyOutput]{
			{"length-n-minus-one", bigramLength},
			{"adjacent-pairs", bigramAdjacent},
			{"prefix-stable", bigramPrefixStable},
			{"value-pairing-and-alignment", bigramValuePairing},
		},
	}
}

func tokenList(t *rapid.T, n int) []int64 {
	tokens := make([]int64, n)
	hi := rapid.SampledFrom([]int64{3, 151935, spec.MaxToken}).Draw(t, "vocab")
	for i := range tokens {
		tokens[i] = rapid.Int64Range(0, hi).Draw(t, "token")
	}
	return tokens
}

func bigramValid(t *rapid.T) spec.RadixBigramKeyInput {
	in := spec.RadixBigramKeyInput{Tokens: tokenList(t, rapid.IntRange(0, 140).Draw(t, "n")), PageSize: rapid.SampledFrom([]int{1, 2, 4, 64}).Draw(t, "page_size")}
	if rapid.Bool().Draw(t, "with_value") {
		in.Value = make([]spec.SlotIdx, len(in.Tokens))
		for i := range in.Value {
			in.Value[i] = rapid.Int64Range(0, 1<<40).Draw(t, "slot")
		}
	}
	return in
}

func bigramInvalid(t *rapid.T) Bad[spec.RadixBigramKeyInput] {
	in := bigramValid(t)
	switch rapid.IntRange(0, 2).Draw(t, "violation") {
	case 0:
		in.Tokens = append(in.Tokens, rapid.SampledFrom([]int64{-1, 1 << 32, -1 << 62}).Draw(t, "bad_token"))
		in.Value = nil
		return Bad[spec.RadixBigramKeyInput]{in, spec.ErrTokenRange}
	case 1:
		in.PageSize = rapid.IntRange(-3, 0).Draw(t, "bad_page_size")
		return Bad[spec.RadixBigramKeyInput]{in, spec.ErrInvalidPageSize}
	default:
		n := len(in.Tokens) + rapid.SampledFrom([]int{-1, 1}).Draw(t, "off")
		if n < 0 {
			n = 1
		}
		in.Value = make([]spec.SlotIdx, n)
		return Bad[spec.RadixBigramKeyInput]{in, spec.ErrValueLength}
	}
}

// bigramLength is §2.5: len(Bigrams(t)) == max(0, len(t)-1).
func bigramLength(_ spec.Limits, in spec.RadixBigramKeyInput, out spec.RadixBigramKeyOutput) error {
	if want := max(0, len(in.Tokens)-1); len(out.Pairs) != want {
		return fmt.Errorf("%d pairs for %d tokens, want %d", len(out.Pairs), len(in.Tokens), want)
	}
	return nil
}

// bigramAdjacent is §2.5: Bigrams(t)[i] == (t[i], t[i+1]).
func bigramAdjacent(_ spec.Limits, in spec.RadixBigramKeyInput, out spec.RadixBigramKeyOutput) error {
	for i, p := range out.Pairs {
		if i+1 >= len(in.Tokens) || p != [2]int64{in.Tokens[i], in.Tokens[i+1]} {
			return fmt.Errorf("pair %d is %v", i, p)
		}
	}
	return nil
}

// bigramPrefixStable is §2.5: Bigrams(t[:k]) == Bigrams(t)[:k-1] for k >= 2,
// the reason bigram keys still share prefixes in the tree.
func bigramPrefixStable(lim spec.Limits, in spec.RadixBigramKeyInput, out spec.RadixBigramKeyOutput) error {
	for k := 2; k <= len(in.Tokens); k += max(1, len(in.Tokens)/5) {
		pre, err := ref.RadixBigramKey(lim, spec.RadixBigramKeyInput{Tokens: in.Tokens[:k], PageSize: in.PageSize})
		if err != nil || !slices.Equal(pre.Pairs, out.Pairs[:k-1]) {
			return fmt.Errorf("the key of the first %d tokens is not a prefix: %v, %v", k, pre.Pairs, err)
		}
	}
	return nil
}

// bigramValuePairing is §2.1: token i's slot serves bigram i, the last
// token's slot is dropped, and alignment counts bigrams.
func bigramValuePairing(_ spec.Limits, in spec.RadixBigramKeyInput, out spec.RadixBigramKeyOutput) error {
	if in.Value != nil && !slices.Equal(out.Value, in.Value[:len(out.Pairs)]) || in.Value == nil && out.Value != nil {
		return fmt.Errorf("value %v for input value %v", out.Value, in.Value)
	}
	if out.AlignedLen != len(out.Pairs)/in.PageSize*in.PageSize {
		return fmt.Errorf("aligned_len %d for %d pairs at page size %d", out.AlignedLen, len(out.Pairs), in.PageSize)
	}
	return nil
}

// RadixPageHashes is the differential spec of radix.page_hashes (docs/spec/radix-acks.md §2.4).
func RadixPageHashes() *Spec[spec.RadixPageHashesInput, spec.RadixPageHashesOutput] {
	first, _ := ref.RadixPageHashes(spec.DefaultLimits(), spec.RadixPageHashesInput{Tokens: []int64{1, 2, 3}, Bigram: true, PageSize: 2})
	return &Spec[spec.RadixPageHashesInput, spec.RadixPageHashesOutput]{
		Op:      catalog.RadixPageHashes(),
		Valid:   rapid.Custom(hashValid),
		Invalid: rapid.Custom(hashInvalid),
		Boundary: []Case[spec.RadixPageHashesInput]{
			{"spec-vector-tokens", spec.RadixPageHashesInput{Tokens: []int64{1, 2, 3, 4}, PageSize: 2}},
			{"spec-vector-bigrams-chained", spec.RadixPageHashesInput{Tokens: []int64{3, 4, 5}, Bigram: true, PageSize: 2, Prior: first.Hashes[0]}},
			{"partial-page-is-not-hashed", spec.RadixPageHashesInput{Tokens: []int64{1, 2, 3}, PageSize: 2}},
			{"largest-tokens", spec.RadixPageHashesInput{Tokens: []int64{spec.MaxToken, spec.MaxToken}, Bigram: true, PageSize: 1}},
		},
		Regressions: []Case[spec.RadixPageHashesInput]{
			// §2.4 trap: hashing a packed bigram as LE64 emits (b, a).
			{"bigram-hash-packed-le64", spec.RadixPageHashesInput{Tokens: []int64{1, 2, 3}, Bigram: true, PageSize: 2}},
		},
		Props: []Prop[spec.RadixPageHashesInput, spec.RadixPageHashesOutput]{
			{"one-hash-per-whole-page", hashCount},
			{"chain-restarts-from-any-page", hashChain},
			{"event-ids-from-digests", hashEventIDs},
		},
	}
}

func hashValid(t *rapid.T) spec.RadixPageHashesInput {
	in := spec.RadixPageHashesInput{Tokens: tokenList(t, rapid.IntRange(0, 140).Draw(t, "n")), Bigram: rapid.Bool().Draw(t, "bigram"),
		PageSize: rapid.SampledFrom([]int{1, 2, 4, 64}).Draw(t, "page_size")}
	if rapid.Bool().Draw(t, "with_prior") {
		in.Prior = "34fb5c825de7ca4aea6e712f19d439c1da0c92c37b423936c5f618545ca4fa1f"
	}
	return in
}

func hashInvalid(t *rapid.T) Bad[spec.RadixPageHashesInput] {
	in := hashValid(t)
	switch rapid.IntRange(0, 2).Draw(t, "violation") {
	case 0:
		in.Tokens = append(in.Tokens, rapid.SampledFrom([]int64{-1, 1 << 32}).Draw(t, "bad_token"))
		return Bad[spec.RadixPageHashesInput]{in, spec.ErrTokenRange}
	case 1:
		in.PageSize = rapid.IntRange(-3, 0).Draw(t, "bad_page_size")
		return Bad[spec.RadixPageHashesInput]{in, spec.ErrInvalidPageSize}
	default:
		in.Prior = rapid.SampledFrom([]string{"abc", "34FB5C825DE7CA4AEA6E712F19D439C1DA0C92C37B423936C5F618545CA4FA1F", "zz"}).Draw(t, "bad_prior")
		return Bad[spec.RadixPageHashesInput]{in, spec.ErrBadEnum}
	}
}

func hashCount(_ spec.Limits, in spec.RadixPageHashesInput, out spec.RadixPageHashesOutput) error {
	units := len(in.Tokens)
	if in.Bigram {
		units = max(0, units-1)
	}
	if out.Units != units || len(out.Hashes) != units/in.PageSize || len(out.EventIDs) != len(out.Hashes) {
		return fmt.Errorf("%d units, %d hashes, %d ids for %d units at page size %d", out.Units, len(out.Hashes), len(out.EventIDs), units, in.PageSize)
	}
	return nil
}

// hashChain: hashing the key from page j on, chained on page j-1's digest,
// gives the same digests as the whole key (§2.4's chaining; bigram i starts
// at token i, so a bigram key restarts at the same token index).
func hashChain(lim spec.Limits, in spec.RadixPageHashesInput, out spec.RadixPageHashesOutput) error {
	for j := 1; j < len(out.Hashes); j++ {
		from := j * in.PageSize
		tail, err := ref.RadixPageHashes(lim, spec.RadixPageHashesInput{Tokens: in.Tokens[from:], Bigram: in.Bigram, PageSize: in.PageSize, Prior: out.Hashes[j-1]})
		if err != nil || !slices.Equal(tail.Hashes, out.Hashes[j:]) {
			return fmt.Errorf("restarting at page %d gives %v, want %v (%v)", j, tail.Hashes, out.Hashes[j:], err)
		}
	}
	return nil
}

func hashEventIDs(_ spec.Limits, _ spec.RadixPageHashesInput, out spec.RadixPageHashesOutput) error {
	for i, h := range out.Hashes {
		if id, err := ref.HashEventID(h); err != nil || id != out.EventIDs[i] {
			return fmt.Errorf("event id %d of %s is %d", i, h, out.EventIDs[i])
		}
	}
	return nil
}
