package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// RadixScript registers radix.script (docs/spec/radix-acks.md §1): a step script
// against one radix tree, the trace of results and the final tree.
func RadixScript() *Op[spec.RadixScriptInput, spec.RadixScriptOutput] {
	return &Op[spec.RadixScriptInput, spec.RadixScriptOutput]{
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
		Sample: spec.RadixScriptInput{Steps: []spec.RadixStep{
			{Op: spec.StepCreate, PageSize: 1},
			{Op: spec.StepInsert, Key: []int64{1, 2, 3}, Value: []spec.SlotIdx{10, 11, 12}},
			{Op: spec.StepInsert, Key: []int64{1, 2, 4}, Value: []spec.SlotIdx{20, 21, 22}},
			{Op: spec.StepMatch, Key: []int64{1, 2, 4}},
			{Op: spec.StepLock, Node: 3},
			{Op: spec.StepEvict, NumTokens: 4},
		}},
		Shapes: []Shape[spec.RadixScriptInput]{
			// The seed's 64K-token shapes are Go benchmarks on the trees
			// themselves (fast/radix_tree_bench_test.go); a whole script also
			// builds the path, which the copying reference does in O(L·k²).
			{Name: "8K-tokens-16-node-path-full-hit", Make: func() spec.RadixScriptInput { return pathScript(8192, 16, 64) }},
			{Name: "8K-tokens-128-node-path-full-hit", Make: func() spec.RadixScriptInput { return pathScript(8192, 128, 64) }},
			// §4.7's plan at script scale (the 10,000-leaf shape is a Go
			// benchmark on the trees, fast/hicache_owner_counts_bench_test.go).
			{Name: "owner-plan-256-leaves-16-pages-cp-8", Make: func() spec.RadixScriptInput { return ownerPlanScript(256, 16, 16, 8) }},
		},
	}
}

// pathScript is the seed's benchmark shape (docs/spec/radix-acks.md §1.12): a tokens-
// long sequence stored as a nodes-node path by inserting its prefixes of
// length tokens·i/nodes in order, then a full-hit match.
func pathScript(tokens, nodes, pageSize int) spec.RadixScriptInput {
	seq := make([]int64, tokens)
	for i := range seq {
		seq[i] = int64(i*7919) % 151936
	}
	steps := []spec.RadixStep{{Op: spec.StepCreate, PageSize: pageSize}}
	for i := 1; i <= nodes; i++ {
		steps = append(steps, spec.RadixStep{Op: spec.StepInsert, Key: seq[:tokens*i/nodes]})
	}
	steps = append(steps, spec.RadixStep{Op: spec.StepMatch, Key: seq})
	return spec.RadixScriptInput{Steps: steps}
}

// ownerPlanScript builds leaves sibling leaves of pages pages each at page
// size ps under a cp-rank tree, then dry-runs an owner-lane plan whose lane
// 0 can never be covered, so every leaf is scanned (docs/spec/radix-acks.md §4.7).
func ownerPlanScript(leaves, pages, ps, cp int) spec.RadixScriptInput {
	steps := []spec.RadixStep{{Op: spec.StepCreate, PageSize: ps, CPSize: cp}}
	for i := range leaves {
		key := make([]int64, pages*ps)
		for j := range key {
			key[j] = int64(i*len(key) + j)
		}
		steps = append(steps, spec.RadixStep{Op: spec.StepInsert, Key: key})
	}
	need, free := make([]int, cp), make([]int, cp)
	need[0] = leaves * pages
	return spec.RadixScriptInput{Steps: append(steps, spec.RadixStep{Op: spec.StepPlanEvict, Need: need, Free: free, DryRun: true})}
}
