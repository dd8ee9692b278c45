package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// The historic KV-event consumers' bugs (docs/spec/kv-events.md §2-§3),
// each one switch of fault.KVEv inside fast's event-fed index; the shared
// script interpreter runs it. Each ID is a regression case of
// equiv.KVEvApply, which narrates the bug's minimal scenario.

// faultyKVEvApply runs kvev.apply on fast indexes with the given faults.
func faultyKVEvApply(f fault.KVEv) func(spec.Limits, spec.KVEvApplyInput) (spec.KVEvApplyOutput, error) {
	newIndex := func(cfg spec.KVEvConfig, streams []spec.KVEvStream) (spec.KVEvIndex, error) {
		return fault.Installed().NewKVEvIndex(cfg, streams, f)
	}
	return func(lim spec.Limits, in spec.KVEvApplyInput) (spec.KVEvApplyOutput, error) {
		return ref.RunKVEvApply(lim, in, newIndex)
	}
}

func kvevMutant(id, section, about string, f fault.KVEv) equiv.Killable {
	return &equiv.Mutant[spec.KVEvApplyInput, spec.KVEvApplyOutput]{
		Spec:    equiv.KVEvApply(),
		ID:      id,
		Section: section,
		About:   about,
		Fn:      faultyKVEvApply(f),
		// Each is also a narrated scenario (equiv.TestKVEvScenarios).
		Scenario: "equiv/testdata/kvev_" + id + ".txt",
	}
}

// OrphanStoreAtRoot is llm-d's fallback after its issue #372
// (docs/spec/kv-events.md §2.3 step 3): a store whose parent was never
// seen is attached at the root, indexing its blocks at token position 0.
func OrphanStoreAtRoot() equiv.Killable {
	return kvevMutant("orphan-store-at-root", "kv-events.md §2.3",
		"a store whose parent was never seen is attached at the root: false prefix hits, the engine not stale",
		fault.KVEv{OrphanAtRoot: true})
}

// ReplayWithoutDelimiter is the AIBrix client and Mooncake conductor bug
// (docs/spec/kv-events.md §3.2): the replay request is the bare 8-byte
// start, which a ROUTER-based replay service ignores, so it is never
// answered.
func ReplayWithoutDelimiter() equiv.Killable {
	return kvevMutant("replay-without-delimiter", "kv-events.md §3.2",
		"the replay request omits the empty delimiter frame: the ROUTER never answers it",
		fault.KVEv{ReplayNoDelimiter: true})
}

// GapsOnlyLogged (docs/spec/kv-events.md §3.1, §3.3): a seq gap is
// counted but neither replayed nor marked stale.
func GapsOnlyLogged() equiv.Killable {
	return kvevMutant("gaps-only-logged", "kv-events.md §3.3",
		"a seq gap is only counted: no replay, no stale flag, the incomplete index served as fresh",
		fault.KVEv{GapsOnlyLogged: true})
}

// AllBlocksClearedIgnored is llm-d's handling (docs/spec/kv-events.md
// §2.6): AllBlocksCleared is counted and otherwise ignored.
func AllBlocksClearedIgnored() equiv.Killable {
	return kvevMutant("all-blocks-cleared-ignored", "kv-events.md §2.6",
		"AllBlocksCleared is only counted: a reset engine keeps scoring the blocks it dropped",
		fault.KVEv{ClearIgnored: true})
}

// ResidencyAsSet (docs/spec/kv-events.md §2.5): residency is a set, so
// removing one of two announced copies of a block evicts the block.
func ResidencyAsSet() equiv.Killable {
	return kvevMutant("residency-as-set", "kv-events.md §2.5",
		"residency is a set, not a count: removing one duplicate copy evicts a block another copy holds",
		fault.KVEv{CountsAsSet: true})
}

// UnsignedHashesOnlyIndex is Dynamo's decoder before its PR #3180
// (docs/spec/kv-events.md §1.5) inside the index: SGLang's negative
// hashes refuse the batch.
func UnsignedHashesOnlyIndex() equiv.Killable {
	return kvevMutant("unsigned-hashes-only-index", "kv-events.md §1.5",
		"hashes read as u64 only: every SGLang batch with a negative hash is refused, the engine empty and stale",
		fault.KVEv{UnsignedHashesOnly: true})
}

// SignedHashesOnlyIndex is the converse decoder (docs/spec/kv-events.md
// §1.5) inside the index: vLLM's hashes >= 2^63 refuse the batch.
func SignedHashesOnlyIndex() equiv.Killable {
	return kvevMutant("signed-hashes-only-index", "kv-events.md §1.5",
		"hashes read as i64 only: every vLLM batch with a hash >= 2^63 is refused",
		fault.KVEv{SignedHashesOnly: true})
}
