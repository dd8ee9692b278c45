package mutants

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// Reach classes of stateful ops: every key of every eviction order, a
// batch redelivered at its seq, holes at every offset of a score walk, a
// pruned page whose hash was bound more than once. The plants are fast
// twins with a reach switch of internal/fault on; a switch standing for a
// bug in a helper both twins call (ref.EvictOrder) runs as both twins.

type (
	radixIn  = spec.RadixScriptInput
	radixOut = spec.RadixScriptOutput
)

// radixPolicyPlant runs radix.script on fast trees with f switched on for
// trees of policy p only (the empty policy is LRU), so that only p's
// cases can kill it.
func radixPolicyPlant(p spec.EvictPolicy, f fault.Radix) catalog.Func[radixIn, radixOut] {
	newTree := func(cfg spec.TreeConfig) (spec.RadixTree, error) {
		pol := cfg.Policy
		if pol == "" {
			pol = spec.PolicyLRU
		}
		if pol != p {
			return fault.Installed().NewRadixTree(cfg, fault.Radix{})
		}
		return fault.Installed().NewRadixTree(cfg, f)
	}
	return func(lim spec.Limits, in radixIn) (radixOut, error) { return ref.RunRadixScript(lim, in, newTree) }
}

// evictOrderExample is hand-derived from radix-acks.md §0.2 rules 2 and 3
// on a page-size-1 tree in simulation mode (slots = tokens): three leaves
// [10] (priority 1), [20] (priority 5), [30] (priority 1) inserted at
// ticks 1, 2, 3 (ids 1, 2, 3, created 1, 2, 3), then a match of [10] at
// tick 4, then Evict(3) frees them one by one. lastAccess is 4, 2, 3 and
// hitCount 0 on the plain tree, so
//
//	lru (lastAccess, id)          20 30 10
//	lfu (0, lastAccess, id)       20 30 10
//	fifo (created, id)            10 20 30
//	mru (−lastAccess, id)         10 30 20
//	filo (−created, id)           30 20 10
//	priority (priority, la, id)   30 10 20
//
// Each key a policy has changes its order if dropped, except fifo's
// created (ids are minted in creation order, so (created, id) and id
// order agree on every tree) and lfu's hitCount (0 on every node): those
// two plants are equivalent to production and left out.
func evictOrderExample(p spec.EvictPolicy, want ...spec.SlotIdx) handExample[radixIn, radixOut] {
	ins := func(tok int64, prio int) spec.RadixStep {
		return spec.RadixStep{Op: spec.StepInsert, Key: []int64{tok}, Priority: prio}
	}
	in := radixIn{Steps: []spec.RadixStep{{Op: spec.StepCreate, PageSize: 1, Policy: p},
		ins(10, 1), ins(20, 5), ins(30, 1), {Op: spec.StepMatch, Key: []int64{10}}, {Op: spec.StepEvict, NumTokens: 3}}}
	return handExample[radixIn, radixOut]{"evict-order-" + string(p), in, func(out radixOut, err error) error {
		if err != nil {
			return err
		}
		ev := out.Trace[len(out.Trace)-1].Evict
		var got []spec.SlotIdx
		for _, f := range ev.Freed {
			got = append(got, f...)
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("victims %v, want %v", got, want)
		}
		return nil
	}}
}

// evictTieExample is hand-derived from §0.2 rule 3's id tie-break and
// §1.6's split: inserting [1 2 4] over leaf [1 2 3] (id 1) splits it into
// [1 2] (fresh id 2) and [3] (keeps id 1), then adds leaf [4] (id 3); the
// insert stamps all three with the same tick, so under lru, lfu, mru and
// priority (equal priorities) the leaves [3] and [4] tie and the lower id
// goes first: Evict(1) frees [3]'s slot 12.
func evictTieExample(p spec.EvictPolicy) handExample[radixIn, radixOut] {
	in := radixIn{Steps: []spec.RadixStep{{Op: spec.StepCreate, PageSize: 1, Policy: p},
		{Op: spec.StepInsert, Key: []int64{1, 2, 3}, Value: []spec.SlotIdx{10, 11, 12}},
		{Op: spec.StepInsert, Key: []int64{1, 2, 4}, Value: []spec.SlotIdx{20, 21, 22}},
		{Op: spec.StepEvict, NumTokens: 1}}}
	return handExample[radixIn, radixOut]{"evict-tie-" + string(p), in, func(out radixOut, err error) error {
		if err != nil {
			return err
		}
		if f := out.Trace[3].Evict.Freed; len(f) != 1 || !slices.Equal(f[0], []spec.SlotIdx{12}) {
			return fmt.Errorf("freed %v, want [[12]]", f)
		}
		return nil
	}}
}

// TestReachEveryKeyOfEveryEvictionOrder: for every policy of §0.2 and
// every key of its tuple that can decide an order, a plant that forgets
// the key, once in fast's heap alone and once in ref.EvictOrder, which
// both twins call. The id tie-break is pinned by the evict-tie examples
// and boundary cases (fast keeps its own comparison, ref its own).
func TestReachEveryKeyOfEveryEvictionOrder(t *testing.T) {
	keys := []struct {
		p    spec.EvictPolicy
		k    int
		name string
	}{
		{spec.PolicyLRU, 1, "lastAccess"}, {spec.PolicyLFU, 2, "lastAccess"}, {spec.PolicyMRU, 1, "-lastAccess"},
		{spec.PolicyFILO, 1, "-created"}, {spec.PolicyPriority, 1, "priority"}, {spec.PolicyPriority, 2, "lastAccess"},
	}
	c := reachClass[radixIn, radixOut]{spec: equiv.RadixScript(), cases: 200, examples: []handExample[radixIn, radixOut]{
		evictOrderExample(spec.PolicyLRU, 20, 30, 10), evictOrderExample(spec.PolicyLFU, 20, 30, 10),
		evictOrderExample(spec.PolicyFIFO, 10, 20, 30), evictOrderExample(spec.PolicyMRU, 10, 30, 20),
		evictOrderExample(spec.PolicyFILO, 30, 20, 10), evictOrderExample(spec.PolicyPriority, 30, 10, 20),
		evictTieExample(spec.PolicyLRU), evictTieExample(spec.PolicyLFU), evictTieExample(spec.PolicyMRU), evictTieExample(spec.PolicyPriority),
	}}
	for _, k := range keys {
		fn := radixPolicyPlant(k.p, fault.Radix{EvictKeyDropped: k.k})
		c.plants = append(c.plants,
			reachPlant[radixIn, radixOut]{name: fmt.Sprintf("fast: %s's %s forgotten by the heap", k.p, k.name), fn: fn},
			reachPlant[radixIn, radixOut]{name: fmt.Sprintf("shared: %s's %s forgotten by ref.EvictOrder", k.p, k.name), fn: fn, shared: true})
	}
	c.run(t)
}

// kvApplyPlants are kvev.apply plants, one reach switch each, all in the
// fast twin (its cursor and pools share no code with ref's).
func kvApplyPlants(switches map[string]fault.KVEv) []reachPlant[spec.KVEvApplyInput, spec.KVEvApplyOutput] {
	var ps []reachPlant[spec.KVEvApplyInput, spec.KVEvApplyOutput]
	for name, f := range switches {
		ps = append(ps, reachPlant[spec.KVEvApplyInput, spec.KVEvApplyOutput]{name: "fast: " + name, fn: faultyKVEvApply(f)})
	}
	slices.SortFunc(ps, func(a, b reachPlant[spec.KVEvApplyInput, spec.KVEvApplyOutput]) int {
		return strings.Compare(a.name, b.name)
	})
	return ps
}

// TestReachBatchRedeliveredAtTheSameSeq: a batch that comes again at the
// seq it was applied at, replayed (a duplicate, §3.1 step 3) or live (a
// new publisher incarnation, step 2), through the event-fed index. The
// JetStream applier's own rule is events/scaleout's
// TestReachBatchRedeliveredAtTheSameSeqThroughTheApplier.
func TestReachBatchRedeliveredAtTheSameSeq(t *testing.T) {
	reachClass[spec.KVEvApplyInput, spec.KVEvApplyOutput]{spec: equiv.KVEvApply(), cases: 150, plants: kvApplyPlants(map[string]fault.KVEv{
		"a replayed batch at next-1 is applied again":        {ReplayRedeliveryApplied: true},
		"a live batch at lastLive is dropped as a duplicate": {LiveRepeatIsDuplicate: true},
	})}.run(t)
}

// TestReachHolesAtEveryPageOffsetOfAWalk: a score walk over a chain with
// a hole at each page offset, inside the fast twin's block fast path
// (kvWalkBlock pages compared at once), at a block's last page, and on
// the page-by-page path.
func TestReachHolesAtEveryPageOffsetOfAWalk(t *testing.T) {
	reachClass[spec.KVEvApplyInput, spec.KVEvApplyOutput]{spec: equiv.KVEvApply(), cases: 150, plants: kvApplyPlants(map[string]fault.KVEv{
		"the block fast path does not check its last page": {WalkBlockLastPageUnchecked: true},
		"the block fast path checks even offsets only":     {WalkBlockOddPagesUnchecked: true},
		"the next-slot guess does not check for a hole":    {WalkNextSlotHoleUnchecked: true},
	})}.run(t)
}

// TestReachPrunedPageWhoseHashWasBoundMoreThanOnce: a page bound to two
// hashes (a second hash for the same page, §2.3 step 4), removed and
// pruned (§2.4), its hashes then used again.
func TestReachPrunedPageWhoseHashWasBoundMoreThanOnce(t *testing.T) {
	reachClass[spec.KVEvApplyInput, spec.KVEvApplyOutput]{spec: equiv.KVEvApply(), cases: 150, plants: kvApplyPlants(map[string]fault.KVEv{
		"pruning unbinds the page's first hash only":    {PruneUnbindsFirstOnly: true},
		"a removal decrements the page's first binding": {RemoveDecrementsFirstBinding: true},
	})}.run(t)
}

// TestReachASnapshotBootstrap: streams with vLLM's snapshot endpoint
// (§3.5, §2.10 A13) answered with snapshot replies, failures and
// heartbeat losses while their publishers lose batches.
func TestReachASnapshotBootstrap(t *testing.T) {
	reachClass[spec.KVEvApplyInput, spec.KVEvApplyOutput]{spec: equiv.KVEvApply(), cases: 150, plants: kvApplyPlants(map[string]fault.KVEv{
		"an installed snapshot applies the held batch at its seq again": {SnapshotSeqAppliedAgain: true},
	})}.run(t)
}

// TestReachAStreamRemovedAtRunTime: a stream removed while the index runs
// (§2.10 A11), its publisher going on, the stream added again later.
func TestReachAStreamRemovedAtRunTime(t *testing.T) {
	reachClass[spec.KVEvApplyInput, spec.KVEvApplyOutput]{spec: equiv.KVEvApply(), cases: 150, plants: kvApplyPlants(map[string]fault.KVEv{
		"a removed stream's engines stay in the index": {RemoveStreamKeepsEngines: true},
	})}.run(t)
}

// TestReachAChainThatSwitchesNamespaces: a page stored under a parent of
// another namespace (§2.10 A14), where its prefix hash starts over its
// parent's.
func TestReachAChainThatSwitchesNamespaces(t *testing.T) {
	reachClass[spec.KVEvApplyInput, spec.KVEvApplyOutput]{spec: equiv.KVEvApply(), cases: 150, plants: kvApplyPlants(map[string]fault.KVEv{
		"a namespace switch chains from the seed alone": {SwitchChainsFromSeed: true},
	})}.run(t)
}

// TestReachATokenlessCopyAtItsBound: a tokenless update whose hash needs
// exactly KVEvMaxCopyWalk pages, and one more (§2.10 A14).
func TestReachATokenlessCopyAtItsBound(t *testing.T) {
	reachClass[spec.KVEvApplyInput, spec.KVEvApplyOutput]{spec: equiv.KVEvApply(), cases: 150, plants: kvApplyPlants(map[string]fault.KVEv{
		"the copy bound is one page short": {CopyWalkOneShort: true},
	})}.run(t)
}
