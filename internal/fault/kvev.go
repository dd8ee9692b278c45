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
}
