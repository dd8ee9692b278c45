package fault

// Ack selects the historic write-ack queue bugs (docs/spec/radix-acks.md
// §3.5) that Hooks.NewAckQueue puts back; the zero value is the
// fixed queue.
type Ack struct {
	// FunnelBypass is docs/spec/radix-acks.md §3.5 B3.a: the zero-owned-rank
	// final ack and the non-CP write ack are pushed without raising
	// MaxAppended, so the max-appended shortcut answers "no undrained ack"
	// for a queued id.
	FunnelBypass bool
	// RollbackNoScrub is docs/spec/radix-acks.md §3.5 B3.b (after-ack
	// variant): RollbackPendingBackup leaves the node's queued final ack
	// behind as an orphan that later completes a fresh registration of the
	// same id.
	RollbackNoScrub bool
	// RollbackKeepsLayerState is docs/spec/radix-acks.md §3.5 B3.b
	// (mid-layer variant): RollbackPendingBackup leaves the half-written
	// layer-write state alive, so later forwards keep writing into the freed
	// host slots.
	RollbackKeepsLayerState bool
	// ForgetCompleted is docs/spec/radix-acks.md §3.5 B3.c: the consumer has
	// no completed-ack memory, so a duplicate of a completed ack is an
	// unknown ack (the KeyError that killed the scheduler).
	ForgetCompleted bool
	// BlindPop is docs/spec/radix-acks.md §3.5 B3.d, the rejected design: an
	// unknown ack id is popped with a default and silently ignored.
	BlindPop bool
	// ZeroOwnedReturnsEarly is the early return that lets ranks diverge
	// (docs/spec/radix-acks.md §3.2, §3.3 W11): a rank owning no page of the
	// node returns from the reservation without registering, so it never
	// produces the final ack its peers produce and MIN-draining pops
	// different ids on different ranks.
	ZeroOwnedReturnsEarly bool
	// EarlyReturnOnEmptyOngoing is upstream's WritingCheck early return on
	// an empty Ongoing alone (docs/spec/radix-acks.md §3.2 op 9, §6 item 4):
	// queued duplicates of completed acks are stranded and never drain.
	EarlyReturnOnEmptyOngoing bool
}
