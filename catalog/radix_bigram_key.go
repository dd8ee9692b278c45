package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
)

// BigramKey registers radix.bigram_key (docs/spec/radix-acks.md §2.1).
func BigramKey() *Op[ref.BigramKeyInput, ref.BigramKeyOutput] {
	return &Op[ref.BigramKeyInput, ref.BigramKeyOutput]{
		OpName:  "radix.bigram_key",
		SpecRef: "radix-acks.md §2.1",
		Summary: "EAGLE bigram key of a token sequence: adjacent pairs, value pairing, page-aligned length",
		Ref:     ref.BigramKey,
		Fast:    fast.BigramKey,
		// One pair per token: about 3 output bytes per request byte, bounded
		// by the tokens. Measured with the harness's limits on 1 MiB of
		// one-digit tokens: ref 102 B per request byte (the key, its bigram
		// key and the pairs), fast 43.
		Work:   Cost{PerInputByte: 144, PerOutputByte: 8, Fixed: 4 << 20},
		Sample: ref.BigramKeyInput{Tokens: []int64{5, 7, 7, 9}, Value: []ref.SlotIdx{100, 101, 102, 103}, PageSize: 2},
		Shapes: []Shape[ref.BigramKeyInput]{
			{Name: "64K-tokens", Make: func() ref.BigramKeyInput {
				return ref.BigramKeyInput{Tokens: pathScript(65536, 1, 64).Steps[1].Key, PageSize: 64}
			}},
		},
	}
}

// PageHashes registers radix.page_hashes (docs/spec/radix-acks.md §2.4).
func PageHashes() *Op[ref.PageHashesInput, ref.PageHashesOutput] {
	return &Op[ref.PageHashesInput, ref.PageHashesOutput]{
		OpName:  "radix.page_hashes",
		SpecRef: "radix-acks.md §2.4",
		Summary: "HiCache storage hashes of a key's pages (tokens or bigrams as LE32 words), chained, with event ids",
		Ref:     ref.PageHashes,
		Fast:    fast.PageHashes,
		Sample:  ref.PageHashesInput{Tokens: []int64{1, 2, 3, 4}, PageSize: 2},
		// The output is one 64-hex-digit hash and one event id per page, and
		// a page can be one token: up to ~44 output bytes per request byte
		// ("1," per token), bounded by the token list, not by a number. Its
		// strings, lists and canonical encoding cost, measured with the
		// harness's limits on a 1 MiB list of 1-digit tokens at page_size 1:
		// ref 379 B per request byte (bigram; 359 without), fast 272; 185–214
		// and 148 at page_size 2, 33–53 and 28 at page_size 64. 512 leaves
		// ref a third of headroom.
		Work: Cost{PerInputByte: 512, PerOutputByte: 8, Fixed: 4 << 20},
		Shapes: []Shape[ref.PageHashesInput]{
			{Name: "64K-tokens-bigram", Make: func() ref.PageHashesInput {
				return ref.PageHashesInput{Tokens: pathScript(65536, 1, 64).Steps[1].Key, Bigram: true, PageSize: 64}
			}},
		},
	}
}
