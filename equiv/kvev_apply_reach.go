package equiv

import (
	"fmt"
	"slices"

	"github.com/kvtwin/kvtwin/spec"
)

// kvev.apply's boundary cases for three reach classes of issue 30 item 7
// (docs/coverage.md "Reach classes"), which the fleet generator reaches
// rarely or never: a batch redelivered at the seq it was applied at, holes
// at every page offset of a score walk (inside the fast twin's block fast
// path and at the block's last page), and a pruned page whose hash was
// bound more than once.

// kvLongChain is the length of kvReachHoleCases' chain, kvLongWalk the
// pages its prompt covers: a block of kvWalkBlock (64) pages, then one of
// 32 (the fast walk's smallest block), and 4 pages past the prompt so
// that a hole at the prompt's last page has resident descendants and is
// not pruned.
const (
	kvLongChain = 100
	kvLongWalk  = 96
)

// kvReachCases are the reach classes' boundary cases.
func kvReachCases() []Case[spec.KVEvApplyInput] {
	return slices.Concat(kvRedeliveryCases(), []Case[spec.KVEvApplyInput]{kvReachHoleCase(), kvTwoBindingsRemovedCase()}, kvPrunedTwiceBoundCases())
}

// kvRedeliveryCases: §3.1 on a batch that comes again at the seq it was
// applied at. Replayed, it is a duplicate (step 3: s < next) and changes
// nothing; live, it is a new publisher incarnation (step 2: s <= lastLive)
// whose history before seq 1 is lost. Redelivered during a replay, the
// held trigger is a duplicate once the replay passed it.
func kvRedeliveryCases() []Case[spec.KVEvApplyInput] {
	const v = "vllm-0"
	return []Case[spec.KVEvApplyInput]{
		{"replayed-batch-redelivered-at-its-seq-is-a-duplicate", kvScript(kvOne(v, true), kvLive(v, "", 0, kvChainBatch(0)), kvLive(v, "", 3, kvChainBatch(3)),
			kvReplayed(v, nil, 1, kvChainBatch(1)), kvReplayed(v, nil, 1, kvChainBatch(1)), kvReplayed(v, nil, 2, kvChainBatch(2)),
			kvReplayed(v, nil, 2, kvChainBatch(2)), kvSentinelStep(v, false), kvChainScore(4))},
		{"live-batch-redelivered-at-its-seq-is-a-restart", kvScript(kvOne(v, false), kvLive(v, "", 0, kvChainBatch(0)), kvLive(v, "", 1, kvChainBatch(1)),
			kvLive(v, "", 1, kvChainBatch(1)), kvChainScore(2), kvLive(v, "", 2, kvChainBatch(2)), kvChainScore(3))},
		{"first-live-batch-redelivered-at-seq-0-is-a-restart", kvScript(kvOne(v, true), kvLive(v, "", 0, kvChainBatch(0)), kvLive(v, "", 0, kvChainBatch(0)),
			kvChainScore(1))},
	}
}

// kvReachHoleCase stores a chain of kvLongChain one-token pages in one
// event (so the fast pool gives them consecutive slots), then for every
// offset k of the prompt's kvLongWalk pages removes page k (a hole: its
// descendants stay resident), scores the prompt (§2.8: k pages, the walk
// stops at the hole) and stores page k again (it reconnects).
func kvReachHoleCase() Case[spec.KVEvApplyInput] {
	const v = "vllm-0"
	hash := func(i int) uint64 { return 0x5000 + uint64(i) }
	tok := func(i int) uint32 { return 1000 + uint32(i) }
	hashes, tokens := make([]uint64, kvLongChain), make([]uint32, kvLongChain)
	for i := range kvLongChain {
		hashes[i], tokens[i] = hash(i), tok(i)
	}
	prompt := make([]int64, kvLongWalk)
	for i := range prompt {
		prompt[i] = int64(tok(i))
	}
	steps := []spec.KVEvStep{kvLive(v, "", 0, kvB(0, kvSt(hashes, 0, tokens, 1, "GPU"))), kvScoreStep(prompt...)}
	seq := uint64(1)
	for k := range kvLongWalk {
		var parent uint64
		if k > 0 {
			parent = hash(k - 1)
		}
		steps = append(steps, kvLive(v, "", seq, kvB(0, kvRm("GPU", hash(k)))), kvScoreStep(prompt...),
			kvLive(v, "", seq+1, kvB(0, kvSt([]uint64{hash(k)}, parent, toks(tok(k)), 1, "GPU"))))
		seq += 2
	}
	return Case[spec.KVEvApplyInput]{fmt.Sprintf("hole-at-every-offset-of-a-%d-page-walk", kvLongWalk), kvScript(kvOne(v, false), append(steps, kvScoreStep(prompt...))...)}
}

// kvPrunedTwiceBoundCases bind page [1 2] to two hashes (§2.3 step 4: a
// second hash for a page already there), remove both (the page is a hole
// with no descendant: pruned, §2.4) while page [9 9] keeps the pool, and
// use both hashes again: a store under either is an orphan (the engine
// goes stale), a store of one as a new page binds it afresh, and a removal
// of either is an unknown removal, for neither names a page any more.
func kvPrunedTwiceBoundCases() []Case[spec.KVEvApplyInput] {
	const v = "vllm-0"
	bound := []spec.KVEvStep{
		kvLive(v, "", 0, kvB(0, kvSt([]uint64{0xD4}, 0, toks(9, 9), 2, "GPU"),
			kvSt([]uint64{kvH1}, 0, toks(1, 2), 2, "GPU"), kvSt([]uint64{kvH2}, 0, toks(1, 2), 2, "GPU"))),
		kvLive(v, "", 1, kvB(0, kvRm("GPU", kvH1, kvH2))), kvScoreStep(1, 2),
	}
	return []Case[spec.KVEvApplyInput]{
		{"pruned-page-bound-twice-stores-under-its-hashes-are-orphans", kvScript(kvOne(v, false), append(slices.Clone(bound),
			kvLive(v, "", 2, kvB(0, kvSt([]uint64{kvHB}, kvH2, toks(3, 4), 2, "GPU"), kvSt([]uint64{kvHC}, kvH1, toks(5, 6), 2, "GPU"))),
			kvLive(v, "", 3, kvB(0, kvSt([]uint64{kvH2}, 0, toks(7, 8), 2, "GPU"))), kvScoreStep(7, 8), kvScoreStep(1, 2, 3, 4))...)},
		{"pruned-page-bound-twice-removals-of-its-hashes-are-unknown", kvScript(kvOne(v, false), append(slices.Clone(bound),
			kvLive(v, "", 2, kvB(0, kvRm("GPU", kvH2, kvH1))), kvScoreStep(9, 9))...)},
	}
}

// kvTwoBindingsRemovedCase: page [1 2] bound to H1 once and H2 twice
// (residency 3); each removal takes one copy of the hash it names (§2.5),
// so after H2, H2, H1 the page is a hole, pruned, and a fourth removal
// finds nothing.
func kvTwoBindingsRemovedCase() Case[spec.KVEvApplyInput] {
	const v = "vllm-0"
	st := func(h uint64) *mpVal { return kvSt([]uint64{h}, 0, toks(1, 2), 2, "GPU") }
	return Case[spec.KVEvApplyInput]{"page-bound-twice-removals-take-the-named-binding", kvScript(kvOne(v, false),
		kvLive(v, "", 0, kvB(0, st(kvH1), st(kvH2), st(kvH2))),
		kvLive(v, "", 1, kvB(0, kvRm("GPU", kvH2))), kvScoreStep(1, 2),
		kvLive(v, "", 2, kvB(0, kvRm("GPU", kvH2))), kvScoreStep(1, 2),
		kvLive(v, "", 3, kvB(0, kvRm("GPU", kvH1))), kvScoreStep(1, 2),
		kvLive(v, "", 4, kvB(0, kvRm("GPU", kvH1))))}
}
