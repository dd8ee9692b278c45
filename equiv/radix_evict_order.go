package equiv

import (
	"github.com/kvtwin/kvtwin/spec"
)

// radixEvictOrderCases pin every key of every eviction policy's order
// (docs/spec/radix-acks.md §0.2 rule 3), a reach class of issue 30: three
// page-size-1 leaves [10], [20], [30] inserted with priorities 1, 5, 1 at
// ticks 1-3, [10] matched again at tick 4, then Evict(3) frees all three,
// one at a time. lastAccess (4, 2, 3), created (1, 2, 3) and priority
// disagree pairwise, so each policy's victims (lru and lfu 20 30 10, fifo
// 10 20 30, mru 10 30 20, filo 30 20 10, priority 30 10 20) change if any
// key of its tuple is forgotten, the first or a later one (fifo's created
// and lfu's hitCount excepted: ids follow creation, and the plain tree
// counts no hits). The id tie-break is evictTie's.
func radixEvictOrderCases() []Case[spec.RadixScriptInput] {
	var cs []Case[spec.RadixScriptInput]
	for _, p := range []spec.EvictPolicy{spec.PolicyLRU, spec.PolicyLFU, spec.PolicyFIFO, spec.PolicyMRU, spec.PolicyFILO, spec.PolicyPriority} {
		c := create(1)
		c.Policy = p
		ins := func(tok int64, prio int) spec.RadixStep {
			return spec.RadixStep{Op: spec.StepInsert, Key: []int64{tok}, Priority: prio}
		}
		cs = append(cs, Case[spec.RadixScriptInput]{"evict-order-every-key-" + string(p), steps(c,
			ins(10, 1), ins(20, 5), ins(30, 1), mat(10), spec.RadixStep{Op: spec.StepEvict, NumTokens: 3})})
	}
	return cs
}
