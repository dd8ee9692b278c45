package ref

import (
	"strings"
	"unicode/utf8"

	"github.com/kvtwin/kvtwin/spec"
)

// Types shared by the kvev family (docs/spec/kv-events.md): the decoded
// message, the index's script, its trace and its observable state. The
// decoder is kvev_decode.go, the index kvev_index.go, the per-stream cursor
// kvev_cursor.go and the script interpreter kvev_apply.go.

// Sentinels of docs/spec/kv-events.md §2.9, plus the §2.10 amendments.
var (
	// errTokenCount: a BlockStored whose token count is neither 0 nor
	// len(block_hashes)·block_size (§2.3 step 1).
	errTokenCount = spec.NewSentinel("token_count", "token_ids holds len(block_hashes)·block_size tokens or none")
	// errBlockSizeChange: a store whose block_size differs from the pool's page size (§2.3 step 2).
	errBlockSizeChange = spec.NewSentinel("block_size_change", "block_size equals the pool's page size")
	// errHashConflict: a block hash already bound to a different page (§2.3 step 4).
	errHashConflict = spec.NewSentinel("hash_conflict", "a block hash names one page")
	// errChainCollision: a store that would give a new page the prefix-hash
	// chain value of another page of the pool (§2.10 A4).
	errChainCollision = spec.NewSentinel("chain_collision", "page prefix hashes are unique within a pool")
)

// CheckKVEvStreams rejects an empty or duplicate stream name
// (ErrBadEnum) and a negative rank (ErrNegative), naming streams[i].field.
// Token ids outside [0, 2^32) are the radix family's ErrTokenRange.
func CheckKVEvStreams(streams []spec.KVEvStream) error {
	seen := make(map[string]bool, len(streams))
	for i, s := range streams {
		at := spec.Idx("streams", i)
		if s.Name == "" || seen[s.Name] {
			return spec.Reject(spec.ErrBadEnum, at+".name", s.Name, "a non-empty name no other stream has")
		}
		seen[s.Name] = true
		if s.Rank < 0 {
			return spec.Reject(spec.ErrNegative, at+".rank", s.Rank, ">= 0")
		}
	}
	return nil
}

// KVValidString is a decoded msgpack str as the decoders output it: each
// invalid UTF-8 sequence replaced by U+FFFD (§2.10 A6), so every JSON
// encoder writes the same bytes for it and the index names namespaces and
// tiers by the string it reports. Both twins' decoders call it for every
// str they output (an unknown event's tag, medium, lora_name,
// kv_cache_spec_kind); map keys are compared raw.
func KVValidString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// KVMessageOf is the decoded message of a topic frame, seq and batch: the
// topic made valid UTF-8, its raw bytes kept beside it when it was not
// (§2.10 A6). Both twins' decoders build their result with it.
func KVMessageOf(topic []byte, seq uint64, b spec.KVBatch) spec.KVMessage {
	m := spec.KVMessage{Topic: string(topic), Seq: seq, Batch: b}
	if !utf8.Valid(topic) {
		m.Topic = strings.ToValidUTF8(m.Topic, "\uFFFD")
		m.TopicHex = append(spec.HexBytes{}, topic...)
	}
	return m
}
