package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// faultyAckScript runs hicache.ack_script on fast write states with the
// given faults.
func faultyAckScript(f fault.Ack) func(spec.Limits, spec.HiCacheAckScriptInput) (spec.HiCacheAckScriptOutput, error) {
	newQueue := func(cfg spec.AckConfig) (spec.AckQueue, error) { return fault.Installed().NewAckQueue(cfg, f) }
	return func(lim spec.Limits, in spec.HiCacheAckScriptInput) (spec.HiCacheAckScriptOutput, error) {
		return ref.RunHiCacheAckScript(lim, in, newQueue)
	}
}

func ackMutant(id, section, about string, f fault.Ack) equiv.Killable {
	return &equiv.Mutant[spec.HiCacheAckScriptInput, spec.HiCacheAckScriptOutput]{
		Spec:     equiv.HiCacheAckScript(),
		ID:       id,
		Section:  section,
		About:    about,
		Fn:       faultyAckScript(f),
		Scenario: "equiv/testdata/ack_" + id + ".txt",
	}
}

// AckFunnelBypass is docs/spec/radix-acks.md §3.5 B3.a: the zero-owned-rank and
// non-CP append sites pushed to the queue without raising the max, so the
// max-appended shortcut said "no undrained ack" for a queued id.
func AckFunnelBypass() equiv.Killable {
	return ackMutant("ack-funnel-bypass", "radix-acks.md §3.5 B3.a",
		"zero-owned-rank and non-CP acks skip the max update: Has(id) is a false negative for a queued id",
		fault.Ack{FunnelBypass: true})
}

// RollbackLeavesOrphanAck is docs/spec/radix-acks.md §3.5 B3.b (after-ack): the
// write_backup rollback did not scrub the node's final ack, and the orphan
// later completed a fresh registration of the same id prematurely.
func RollbackLeavesOrphanAck() equiv.Killable {
	return ackMutant("rollback-leaves-orphan-ack", "radix-acks.md §3.5 B3.b",
		"write_backup's rollback leaves the final ack queued: the orphan completes the next registration of the id",
		fault.Ack{RollbackNoScrub: true})
}

// RollbackLeavesLayerState is docs/spec/radix-acks.md §3.5 B3.b (mid-layer): the
// rollback left the half-written layer-write state alive, and later
// forwards wrote that node's layers into host slots now owned by another.
func RollbackLeavesLayerState() equiv.Killable {
	return ackMutant("rollback-leaves-layer-state", "radix-acks.md §3.5 B3.b",
		"write_backup's rollback leaves the layer-write state alive: later forwards write into freed, reused host slots",
		fault.Ack{RollbackKeepsLayerState: true})
}

// ConsumerForgetsCompleted is docs/spec/radix-acks.md §3.5 B3.c: without the
// completed-ack memory a duplicate of a completed ack raised KeyError and
// killed the scheduler.
func ConsumerForgetsCompleted() equiv.Killable {
	return ackMutant("consumer-forgets-completed", "radix-acks.md §3.5 B3.c",
		"the consumer keeps no completed-ack memory: a duplicate ack is an unknown ack and stops the scheduler",
		fault.Ack{ForgetCompleted: true})
}

// BlindPopUnknownAck is docs/spec/radix-acks.md §3.5 B3.d, the rejected design:
// pop(id, None) silently ignores acks for ids never registered.
func BlindPopUnknownAck() equiv.Killable {
	return ackMutant("blind-pop-unknown-ack", "radix-acks.md §3.5 B3.d",
		"unknown ack ids are popped with a default and ignored, hiding corrupt ack state",
		fault.Ack{BlindPop: true})
}

// ZeroOwnedRankReturnsEarly is the early return that lets ranks diverge
// (docs/spec/radix-acks.md §3.2, §3.3 W11): a rank owning no page of the node
// returned before registering, so it never produced the final ack its
// peers produce and MIN-draining popped different ids on different ranks.
func ZeroOwnedRankReturnsEarly() equiv.Killable {
	return ackMutant("zero-owned-rank-returns-early", "radix-acks.md §3.2, §3.3 W11",
		"a rank owning no page of the node returns before registering: its queue and locks diverge from its peers'",
		fault.Ack{ZeroOwnedReturnsEarly: true})
}

// WritingCheckStrandsDuplicates is upstream's writing_check early return
// on an empty ongoing_write_through alone (docs/spec/radix-acks.md §3.2 op 9, §6
// item 4): queued duplicates of completed acks never drain.
func WritingCheckStrandsDuplicates() equiv.Killable {
	return ackMutant("writing-check-strands-duplicates", "radix-acks.md §3.2 op 9, §6 item 4",
		"writing_check returns when nothing is ongoing, though acks are queued: duplicates are stranded forever",
		fault.Ack{EarlyReturnOnEmptyOngoing: true})
}
