package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// RadixBigramKey registers radix.bigram_key (docs/spec/radix-acks.md §2.1).
func RadixBigramKey() *Op[spec.RadixBigramKeyInput, spec.RadixBigramKeyOutput] {
	return &Op[spec.RadixBigramKeyInput, spec.RadixBigramKeyOutput]{
		OpName:  "radix.bigram_key",
		SpecRef: "radix-acks.md §2.1",
		Summary: "EAGLE bigram key of a token sequence: adjacent pairs, value pairing, page-aligned length",
		Ref:     ref.RadixBigramKey,
		Fast:    fast.RadixBigramKey,
		// One pair per token: about 3 output bytes per request byte, bounded
		// by the tokens. Measured with the harness's limits on 1 MiB of
		// one-digit tokens: ref 102 B per request byte (the key, its bigram
		// key and the pairs), fast 43.
		Work:   Cost{PerInputByte: 144, PerOutputByte: 8, Fixed: 4 << 20},
		Sample: spec.RadixBigramKeyInput{Tokens: []int64{5, 7, 7, 9}, Value: []spec.SlotIdx{100, 101, 102, 103}, PageSize: 2},
		Shapes: []Shape[spec.RadixBigramKeyInput]{
			{Name: "64K-tokens", Make: func() spec.RadixBigramKeyInput {
				return spec.RadixBigramKeyInput{Tokens: pathScript(65536, 1, 64).Steps[1].Key, PageSize: 64}
			}},
		},
	}
}

// RadixPageHashes registers radix.page_hashes (docs/spec/radix-acks.md §2.4).
func RadixPageHashes() *Op[spec.RadixPageHashesInput, spec.RadixPageHashesOutput] {
	return &Op[spec.RadixPageHashesInput, spec.RadixPageHashesOutput]{
		OpName:  "radix.page_hashes",
		SpecRef: "radix-acks.md §2.4",
		Summary: "HiCache storage hashes of a key's pages (tokens or bigrams as LE32 words), chained, with event ids",
		Ref:     ref.RadixPageHashes,
		Fast:    fast.RadixPageHashes,
		Sample:  spec.RadixPageHashesInput{Tokens: []int64{1, 2, 3, 4}, PageSize: 2},
		// The output is one 64-hex-digit hash and one event id per page, and
		// a page can be one token: up to ~44 output bytes per request byte
		// ("1," per token), bounded by the token list, not by a number. Its
		// strings, lists and canonical encoding cost, measured with the
		// harness's limits on a 1 MiB list of 1-digit tokens at page_size 1:
		// ref 379 B per request byte (bigram; 359 without), fast 272; 185–214
		// and 148 at page_size 2, 33–53 and 28 at page_size 64. 512 leaves
		// ref a third of headroom.
		Work: Cost{PerInputByte: 512, PerOutputByte: 8, Fixed: 4 << 20},
		Shapes: []Shape[spec.RadixPageHashesInput]{
			{Name: "64K-tokens-bigram", Make: func() spec.RadixPageHashesInput {
				return spec.RadixPageHashesInput{Tokens: pathScript(65536, 1, 64).Steps[1].Key, Bigram: true, PageSize: 64}
			}},
		},
	}
}
