package fault

// KVEv selects the historic KV-event consumer bugs (docs/spec/kv-events.md
// §2-§3, the bug zoo of issue 19) that fast's kvev twins put back; the
// zero value is the fixed index and decoder.
type KVEv struct {
	// OrphanAtRoot is llm-d's fallback (§2.3 step 3): a store whose parent
	// was never seen is attached at the root instead of being counted as an
	// orphan, so its blocks are indexed at token position 0 and score as
	// false prefix hits; the engine is not marked stale.
	OrphanAtRoot bool
	// ReplayNoDelimiter is the AIBrix client and Mooncake conductor bug
	// (§3.2): the replay request is sent as the bare 8-byte start, without
	// the empty delimiter frame, which a ROUTER-based replay service ignores.
	ReplayNoDelimiter bool
	// GapsOnlyLogged (§3.1, §3.3): a gap is counted but neither replayed nor
	// marked stale, so an index that missed batches is served as fresh.
	GapsOnlyLogged bool
	// ClearIgnored (§2.6): AllBlocksCleared is counted and otherwise ignored
	// (llm-d only logs it), so a reset engine keeps scoring its old blocks.
	ClearIgnored bool
	// CountsAsSet (§2.5): residency is a set, not a count: a store of an
	// already resident hash leaves it at 1, so removing one duplicate copy
	// evicts a block another copy still holds.
	CountsAsSet bool
	// UnsignedHashesOnly is Dynamo's decoder before its PR #3180 (§1.5): a
	// block hash is read as an unsigned 64-bit int only, so SGLang's negative
	// int64 hashes are rejected (ErrHashEncoding) instead of normalised by
	// two's complement.
	UnsignedHashesOnly bool
	// SignedHashesOnly is the converse decoder (§1.5): a block hash is read
	// as a signed 64-bit int only, so vLLM's hashes >= 2^63 (msgpack uint64)
	// are rejected instead of taken as they are.
	SignedHashesOnly bool

	// The switches below are reach plants (issue 30 item 7), not historic
	// bugs: plausible mistakes in the places the generators used to reach
	// least, each of which equiv/mutants' reach tests require the suite to
	// catch.

	// ReplayRedeliveryApplied (§3.1 step 3, §3.2): a replayed batch at the
	// seq applied last (next − 1) is applied again instead of dropped as a
	// duplicate: its stores count twice.
	ReplayRedeliveryApplied bool
	// LiveRepeatIsDuplicate (§3.1 step 2): a live batch at the seq seen
	// last (lastLive) is dropped as a duplicate instead of taken for a new
	// publisher incarnation.
	LiveRepeatIsDuplicate bool
	// WalkBlockLastPageUnchecked (§2.8): the score walk's block fast path
	// does not check its last page's namespace-and-hole word, so a hole
	// there is counted as resident.
	WalkBlockLastPageUnchecked bool
	// WalkBlockOddPagesUnchecked (§2.8): the block fast path checks the
	// link words of the even pages only, so a hole at an odd offset inside
	// the block is counted as resident.
	WalkBlockOddPagesUnchecked bool
	// WalkNextSlotHoleUnchecked (§2.8): the page-by-page walk, guessing
	// that the next page is at the next slot, compares its prefix hash but
	// not its namespace-and-hole word, so a hole there is counted.
	WalkNextSlotHoleUnchecked bool
	// PruneUnbindsFirstOnly (§2.4 pruning): a pruned page unbinds only its
	// first hash, so a second hash bound to it still names a page that is
	// gone.
	PruneUnbindsFirstOnly bool
	// RemoveDecrementsFirstBinding (§2.4, A4): a removal decrements the
	// page's first binding instead of the one its hash names.
	RemoveDecrementsFirstBinding bool
	// RemoveStreamKeepsEngines (§2.10 A11): removing a stream forgets its
	// cursor but leaves its engines in the index, so a pod that is gone
	// keeps scoring its old blocks and holding its engine keys.
	RemoveStreamKeepsEngines bool
	// SnapshotSeqAppliedAgain (§2.10 A13): an installed snapshot sets next
	// to its seq instead of seq + 1, so the held batch at the seq the
	// snapshot covers is applied on top of it: its stores count twice.
	SnapshotSeqAppliedAgain bool
	// SwitchChainsFromSeed (§2.10 A14): a page under a parent of another
	// namespace chains from its namespace's seed alone, not over its
	// parent's prefix hash, so two pages of one namespace and tokens
	// under different parents collide and the second store is refused.
	SwitchChainsFromSeed bool
	// CopyWalkOneShort (§2.10 A14): a tokenless update's copy bound is
	// taken one page short, so a hash whose copy needs exactly
	// KVEvMaxCopyWalk pages is counted as an orphan instead of copied.
	CopyWalkOneShort bool
	// SnapshotSiblingsUnsorted (§2.10 A12, A8's pre-order): fast's
	// snapshot encoder writes a page's children in the pool's sibling
	// order (newest first) instead of sorted by (namespace, tokens), so
	// the bytes differ from the canonical ones (and a restore refuses them).
	SnapshotSiblingsUnsorted bool
	// SnapshotBindingsUnsorted (§2.10 A12): fast's snapshot encoder writes
	// a page's bindings in the pool's order (the first, then the newest)
	// instead of sorted by hash.
	SnapshotBindingsUnsorted bool
}
