package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/spec"
)

func kvevDecodeMutant(id, about string, f fault.KVEv) equiv.Killable {
	return &equiv.Mutant[spec.KVEvDecodeInput, spec.KVEvDecodeOutput]{
		Spec:    equiv.KVEvDecode(),
		ID:      id,
		Section: "kv-events.md §1.5",
		About:   about,
		Fn:      switched(fault.Installed().KVEvDecode, f),
	}
}

// U64HashesOnly is Dynamo's decoder before its PR #3180
// (docs/spec/kv-events.md §1.5): a block hash is read as a u64 only, so
// SGLang's signed hashes (negative fixint, int64) are ErrHashEncoding.
func U64HashesOnly() equiv.Killable {
	return kvevDecodeMutant("unsigned-hashes-only",
		"block hashes read as u64 only: SGLang's negative int64 hashes are refused instead of taken as two's complement",
		fault.KVEv{UnsignedHashesOnly: true})
}

// I64HashesOnly is the converse decoder (docs/spec/kv-events.md §1.5):
// a block hash is read as an i64 only, so vLLM's hashes >= 2^63 (msgpack
// uint64) are ErrHashEncoding.
func I64HashesOnly() equiv.Killable {
	return kvevDecodeMutant("signed-hashes-only",
		"block hashes read as i64 only: vLLM's uint64 hashes >= 2^63 are refused",
		fault.KVEv{SignedHashesOnly: true})
}
