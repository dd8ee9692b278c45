package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
)

// RadixScript registers radix.script (docs/spec/radix-acks.md §1): a step script
// against one radix tree, the trace of results and the final tree.
func RadixScript() *Op[ref.RadixScriptInput, ref.RadixScriptOutput] {
	return &Op[ref.RadixScriptInput, ref.RadixScriptOutput]{
		OpName:  "radix.script",
		SpecRef: "radix-acks.md §1",
		Summary: "radix prefix cache: run create/insert/match/lock/unlock/evict steps, trace the results and the final tree",
		Ref:     ref.RadixScript,
		Fast:    fast.RadixScript,
		// Per step a trace entry, a refused one with its canonical error:
		// up to 11 output bytes per request byte, bounded by the step list.
		// Measured with the harness's limits on 1 MiB of steps: both twins
		// 115 B per request byte ({"op":"lock","node":3}, each refused), 109
		// (match without a key), 93 (the harness's variant: one inserted
		// key grown to 1 MiB).
		Work: Cost{PerInputByte: 160, PerOutputByte: 8, Fixed: 4 << 20},
		Sample: ref.RadixScriptInput{Steps: []ref.RadixStep{
			{Op: ref.StepCreate, PageSize: 1},
			{Op: ref.StepInsert, Key: []int64{1, 2, 3}, Value: []ref.SlotIdx{10, 11, 12}},
			{Op: ref.StepInsert, Key: []int64{1, 2, 4}, Value: []ref.SlotIdx{20, 21, 22}},
			{Op: ref.StepMatch, Key: []int64{1, 2, 4}},
			{Op: ref.StepLock, Node: 3},
			{Op: ref.StepEvict, NumTokens: 4},
		}},
		Shapes: []Shape[ref.RadixScriptInput]{
			// The seed's 64K-token shapes are Go benchmarks on the trees
			// themselves (fast/radix_bench_test.go); a whole script also
			// builds the path, which the copying reference does in O(L·k²).
			{Name: "8K-tokens-16-node-path-full-hit", Make: func() ref.RadixScriptInput { return pathScript(8192, 16, 64) }},
			{Name: "8K-tokens-128-node-path-full-hit", Make: func() ref.RadixScriptInput { return pathScript(8192, 128, 64) }},
			// §4.7's plan at script scale (the 10,000-leaf shape is a Go
			// benchmark on the trees, fast/owners_bench_test.go).
			{Name: "owner-plan-256-leaves-16-pages-cp-8", Make: func() ref.RadixScriptInput { return ownerPlanScript(256, 16, 16, 8) }},
		},
	}
}

// pathScript is the seed's benchmark shape (docs/spec/radix-acks.md §1.12): a tokens-
// long sequence stored as a nodes-node path by inserting its prefixes of
// length tokens·i/nodes in order, then a full-hit match.
func pathScript(tokens, nodes, pageSize int) ref.RadixScriptInput {
	seq := make([]int64, tokens)
	for i := range seq {
		seq[i] = int64(i*7919) % 151936
	}
	steps := []ref.RadixStep{{Op: ref.StepCreate, PageSize: pageSize}}
	for i := 1; i <= nodes; i++ {
		steps = append(steps, ref.RadixStep{Op: ref.StepInsert, Key: seq[:tokens*i/nodes]})
	}
	steps = append(steps, ref.RadixStep{Op: ref.StepMatch, Key: seq})
	return ref.RadixScriptInput{Steps: steps}
}

// ownerPlanScript builds leaves sibling leaves of pages pages each at page
// size ps under a cp-rank tree, then dry-runs an owner-lane plan whose lane
// 0 can never be covered, so every leaf is scanned (docs/spec/radix-acks.md §4.7).
func ownerPlanScript(leaves, pages, ps, cp int) ref.RadixScriptInput {
	steps := []ref.RadixStep{{Op: ref.StepCreate, PageSize: ps, CPSize: cp}}
	for i := range leaves {
		key := make([]int64, pages*ps)
		for j := range key {
			key[j] = int64(i*len(key) + j)
		}
		steps = append(steps, ref.RadixStep{Op: ref.StepInsert, Key: key})
	}
	need, free := make([]int, cp), make([]int, cp)
	need[0] = leaves * pages
	return ref.RadixScriptInput{Steps: append(steps, ref.RadixStep{Op: ref.StepPlanEvict, Need: need, Free: free, DryRun: true})}
}

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
