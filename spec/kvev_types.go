package spec

import (
	"cmp"
	"encoding/hex"
	"fmt"
	"strconv"
)

var (
	// ErrFrameCount: a live message whose frame count is not 3 (§1.2).
	ErrFrameCount = NewSentinel("frame_count", "a live message has exactly 3 frames")
	// ErrSeqWidth: a seq frame that is not exactly 8 bytes (§1.2).
	ErrSeqWidth = NewSentinel("seq_width", "the seq frame is exactly 8 bytes")
	// ErrTrailingBytes: bytes after the payload's msgpack value (§1.3).
	ErrTrailingBytes = NewSentinel("trailing_bytes", "bytes after the batch's msgpack value")
	// ErrBatchShape: a batch that is not a 2..4-element array (or the
	// tolerated map), a non-numeric ts, events not an array, or a bad rank (§1.3).
	ErrBatchShape = NewSentinel("batch_shape", "malformed event batch")
	// ErrEventShape: an event that is neither a tagged array nor a map with
	// a string "type", a map key that is not a string, or a duplicate key (§1.4).
	ErrEventShape = NewSentinel("event_shape", "malformed event")
	// ErrMissingField: a required event field is absent (§1.4 rule 3).
	ErrMissingField = NewSentinel("missing_field", "a required event field is missing")
	// ErrFieldType: an event field of the wrong msgpack type or range, or
	// nested deeper than MaxMsgpackDepth (§1.4 rule 4).
	ErrFieldType = NewSentinel("field_type", "an event field has the wrong type")
	// ErrEmptyHashes: a BlockStored or BlockRemoved with no block hashes (§1.4 rule 4).
	ErrEmptyHashes = NewSentinel("empty_hashes", "block_hashes is empty")
	// ErrHashEncoding: a block hash that is not an int or a non-empty bin (§1.5).
	ErrHashEncoding = NewSentinel("hash_encoding", "a block hash is an int or a non-empty bin")
	// ErrReplayProtocol: a replay reply with the wrong frame layout, or a
	// reply while no replay is outstanding (§3.2).
	ErrReplayProtocol = NewSentinel("replay_protocol", "malformed replay reply")
	// ErrPoolBudget: a store past the engine's token budget (§2.10 A5).
	ErrPoolBudget = NewSentinel("pool_budget", "an engine's pages hold at most max_tokens_per_engine tokens")
	// ErrEngineBudget: a batch for a new engine past its stream's share,
	// max_engines_per_stream (§2.10 A2, A5).
	ErrEngineBudget = NewSentinel("engine_budget", "a stream feeds at most max_engines_per_stream engines")
	// ErrEngineOwner: a batch for an engine another stream feeds (§2.10 A2).
	ErrEngineOwner = NewSentinel("engine_owner", "one stream feeds each engine")
	// ErrUnknownStream: a step naming a stream the index was not configured with.
	ErrUnknownStream = NewSentinel("unknown_stream", "the stream is one of the configured streams")
	// ErrSnapshotProtocol: a snapshot reply with the wrong frame layout,
	// past the reply bounds, or while no snapshot is outstanding (§3.5,
	// §2.10 A13).
	ErrSnapshotProtocol = NewSentinel("snapshot_protocol", "malformed snapshot reply")
)

// MaxMsgpackDepth bounds the nesting of any msgpack value a decoder walks
// or skips (§2.10 A6): deeper values are ErrFieldType (inside an event) or
// ErrBatchShape, so a publisher cannot make a decoder recurse without bound.
const MaxMsgpackDepth = 32

// KVEvMaxCopyWalk bounds the pages a tokenless tier update (§2.3 step 6)
// creates for one hash (§2.10 A14): the named page and its ancestors
// that have no copy in the target tier. A hash whose page has more is an
// orphan (counted, nothing changed, not stale), so a hash costs at most
// this many pages whatever the chain's depth. vLLM offloads a request's
// blocks in order, so each hash's parent has its copy already (one page).
const KVEvMaxCopyWalk = 64

// Event type names of §1.4; an unknown tag decodes as EventUnknown.
const (
	EventStored  = "BlockStored"
	EventRemoved = "BlockRemoved"
	EventCleared = "AllBlocksCleared"
	EventUnknown = "Unknown"
)

// EvHash is a block hash normalised to 64 bits (docs/spec/kv-events.md
// §1.5). JSON carries it as 16 lower-case hex digits, because JSON numbers
// lose integers above 2^53.
type EvHash uint64

// MarshalJSON writes h as a 16-digit hex string.
func (h EvHash) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, `"%016x"`, uint64(h)), nil
}

// UnmarshalJSON reads a 16-digit hex string.
func (h *EvHash) UnmarshalJSON(b []byte) error {
	var p PrefixHash
	if err := p.UnmarshalJSON(b); err != nil {
		return fmt.Errorf("block hash %s: want a string of 16 hex digits", b)
	}
	*h = EvHash(p)
	return nil
}

// HexBytes is raw bytes (a ZMQ frame) carried in JSON as lower-case hex,
// the form of docs/spec/kv-events.md §5.
type HexBytes []byte

// MarshalJSON writes b as a hex string.
func (b HexBytes) MarshalJSON() ([]byte, error) {
	return strconv.AppendQuote(nil, hex.EncodeToString(b)), nil
}

// UnmarshalJSON reads a hex string (either case).
func (b *HexBytes) UnmarshalJSON(data []byte) error {
	s, err := strconv.Unquote(string(data))
	if err != nil {
		return fmt.Errorf("frame %.40s: want a hex string", data)
	}
	v, err := hex.DecodeString(s)
	if err != nil {
		return fmt.Errorf("frame %.40s: want a hex string: %v", data, err)
	}
	*b = v
	return nil
}

// KVEvent is one decoded event in canonical form (§1.4): the fields the
// index reads, whichever encoding (array or map) carried them. Fields an
// event type does not have are left at their zero value.
type KVEvent struct {
	// Type is BlockStored, BlockRemoved, AllBlocksCleared or Unknown.
	Type string `json:"type"`
	// Tag is an Unknown event's tag string.
	Tag string `json:"tag,omitzero"`
	// Form is "array" (form A) or "map" (form B).
	Form string `json:"form"`
	// BlockHashes are the normalised block hashes (stored, removed).
	BlockHashes []EvHash `json:"block_hashes,omitzero"`
	// ParentBlockHash is the parent's hash, nil for the first block of a sequence (stored).
	ParentBlockHash *EvHash `json:"parent_block_hash,omitzero"`
	// TokenIDs are the blocks' tokens, each < 2^32 (stored; empty for a tokenless tier update).
	TokenIDs []uint32 `json:"token_ids,omitzero"`
	// BlockSize is the tokens per block, >= 1 (stored).
	BlockSize int64 `json:"block_size,omitzero"`
	// LoraID is the deprecated LoRA id, nil when unset (stored).
	LoraID *int64 `json:"lora_id,omitzero"`
	// Medium is the tier string as sent, nil when unset (stored, removed).
	Medium *string `json:"medium,omitzero"`
	// LoraName is the LoRA adapter name, nil when unset (stored).
	LoraName *string `json:"lora_name,omitzero"`
	// GroupIdx is the KV-cache group, nil when unset (stored, removed).
	GroupIdx *int64 `json:"group_idx,omitzero"`
	// KVCacheSpecKind is the attention kind, nil when unset (stored; informational).
	KVCacheSpecKind *string `json:"kv_cache_spec_kind,omitzero"`
}

// KVBatch is one decoded batch (§1.3).
type KVBatch struct {
	// Form is "array", or "map" for the tolerated map-shaped batch.
	Form string `json:"form"`
	// TS is the publisher's wall clock in seconds; it never affects state.
	TS float64 `json:"ts"`
	// Events are the batch's events in order.
	Events []KVEvent `json:"events"`
	// DPRank is data_parallel_rank, nil when absent or nil.
	DPRank *int64 `json:"data_parallel_rank,omitzero"`
	// PublisherID is the optional 16-byte publisher id (§3.5), nil when absent.
	PublisherID HexBytes `json:"publisher_id,omitzero"`
}

// KVMessage is one decoded live message (§1.2): topic, seq and batch.
type KVMessage struct {
	// Topic is frame 1 as valid UTF-8: each invalid byte sequence becomes
	// U+FFFD (strings.ToValidUTF8), so every JSON encoder writes the same
	// bytes for it.
	Topic string `json:"topic"`
	// TopicHex is frame 1's raw bytes, set only when they are not valid
	// UTF-8 (Topic then lost some of them).
	TopicHex HexBytes `json:"topic_hex,omitzero"`
	// Seq is frame 2, big-endian unsigned.
	Seq uint64 `json:"seq"`
	// Batch is frame 3 decoded.
	Batch KVBatch `json:"batch"`
}

// KVEvConfig bounds an index (§2.10 A5). Zero fields take the defaults of
// DefaultKVEvConfig (MaxEnginesPerStream: EngineShare's fair share);
// Validate rejects negatives and values past the hard caps.
type KVEvConfig struct {
	// MaxEngines bounds the engines of the whole index.
	MaxEngines int `json:"max_engines,omitzero"`
	// MaxTokensPerEngine bounds the tokens of an engine's pages, holes
	// included, over all its pools.
	MaxTokensPerEngine int64 `json:"max_tokens_per_engine,omitzero"`
	// MaxHeld bounds the live messages a stream holds while a replay runs (§3.2).
	MaxHeld int `json:"max_held,omitzero"`
	// MaxEnginesPerStream bounds the engines one stream creates (its
	// share, §2.10 A2, A5), so that no stream can take another's; zero is
	// the fair share floor(MaxEngines / streams). Streams × share never
	// exceeds MaxEngines (EngineShare).
	MaxEnginesPerStream int `json:"max_engines_per_stream,omitzero"`
	// MaxEvents bounds the events of one message (§2.10 A10).
	MaxEvents int `json:"max_events,omitzero"`
	// MaxDecodeRatio bounds one message's decoded cost per payload byte,
	// beyond KVDecodeFloor (§2.10 A10).
	MaxDecodeRatio int64 `json:"max_decode_ratio,omitzero"`
	// MaxHeldBytes bounds the bytes of the live messages a stream holds
	// while a replay runs (§2.10 A7).
	MaxHeldBytes int64 `json:"max_held_bytes,omitzero"`
}

// KVEvStream configures one publisher stream (§2.1, §3).
type KVEvStream struct {
	// Name is the stream's name: the source name of its engines unless the
	// topic has the kv@<source>@<model> form.
	Name string `json:"name"`
	// Rank is the DP rank of batches whose data_parallel_rank is nil.
	Rank int64 `json:"rank,omitzero"`
	// Replay says the stream has a replay endpoint (§3.2).
	Replay bool `json:"replay,omitzero"`
	// Snapshot says the stream has vLLM's snapshot endpoint (§3.5, §2.10
	// A13): the index then tracks the publisher id and answers a gap that
	// replay cannot fill with a snapshot request.
	Snapshot bool `json:"snapshot,omitzero"`
}

// Script step kinds of kvev.apply (§2.10 A1): what a subscriber observes on
// its sockets, and the scores a router asks for.
const (
	// KVStepLive is a message received on the SUB socket (frames: all of them).
	KVStepLive = "live"
	// KVStepReplay is one reply received on the DEALER socket (frames: all
	// of them, the leading empty delimiter included).
	KVStepReplay = "replay"
	// KVStepReplayFailed is an outstanding replay that ended without its
	// sentinel (reason: timeout, protocol, unavailable).
	KVStepReplayFailed = "replay_failed"
	// KVStepRestart is an operator's or discovery's signal that the
	// stream's publisher was replaced (§3.4).
	KVStepRestart = "restart"
	// KVStepScore scores tokens against every engine (§2.8).
	KVStepScore = "score"
	// KVStepAddStream adds the stream config describes at run time (§2.10 A11).
	KVStepAddStream = "add_stream"
	// KVStepRemoveStream removes the named stream and drops its engines
	// (§2.10 A11).
	KVStepRemoveStream = "remove_stream"
	// KVStepSnapshotReply is the reply received on the stream's snapshot
	// (REQ) socket: all of its frames, [seq, publisher id, chunk…]
	// (§3.5, §2.10 A13).
	KVStepSnapshotReply = "snapshot_reply"
	// KVStepSnapshotFailed is an outstanding snapshot request that got no
	// usable reply (reason: timeout, protocol, unavailable; §2.10 A13).
	KVStepSnapshotFailed = "snapshot_failed"
	// KVStepHeartbeatLost is the subscriber's observation that the
	// stream's live socket was silent past the heartbeat bound (§3.5,
	// §2.10 A13).
	KVStepHeartbeatLost = "heartbeat_lost"
)

// KVSnapshotRequestFrame is the single frame a subscriber sends on its
// snapshot (REQ) socket (§3.5).
const KVSnapshotRequestFrame = "snapshot"

// KVPublisherIDBytes is the length of a publisher id (§1.3 field 3, §3.5).
const KVPublisherIDBytes = 16

// Replay failure reasons of a replay_failed step.
const (
	ReplayReasonTimeout     = "timeout"
	ReplayReasonProtocol    = "protocol"
	ReplayReasonUnavailable = "unavailable"
)

// KVEvStep is one step of a kvev.apply script. Which fields apply depends on Op.
type KVEvStep struct {
	// Op is live, replay, replay_failed, restart, score, add_stream,
	// remove_stream, snapshot_reply, snapshot_failed or heartbeat_lost.
	Op string `json:"op"`
	// Stream names the configured stream (live, replay, replay_failed,
	// restart, remove_stream).
	Stream string `json:"stream,omitzero"`
	// Config is the stream to add (add_stream; §2.10 A11).
	Config *KVEvStream `json:"config,omitzero"`
	// Frames are the received frames (live, replay, snapshot_reply).
	Frames []HexBytes `json:"frames,omitzero"`
	// Reason is why a replay or snapshot failed (replay_failed, snapshot_failed).
	Reason string `json:"reason,omitzero"`
	// Tokens are the prompt's token ids, each in [0, 2^32) (score).
	Tokens []int64 `json:"tokens,omitzero"`
	// Namespace is the prompt's namespace (§2.2), "" for the base model (score).
	Namespace string `json:"namespace,omitzero"`
	// Group is the KV-cache group (score).
	Group int64 `json:"group,omitzero"`
	// Tier is the tier, "" for GPU (score; upper-cased like medium).
	Tier string `json:"tier,omitzero"`
	// Exact scores by comparing tokens instead of prefix hashes (score).
	Exact bool `json:"exact,omitzero"`
}

// KVEvGap is a run of seqs [From, To) whose batches are lost (§3.3).
type KVEvGap struct {
	// From is the first lost seq.
	From uint64 `json:"from"`
	// To is the first seq after the run.
	To uint64 `json:"to"`
}

// KVEvEventError is a batch or event the index refused (§2.7).
type KVEvEventError struct {
	// Seq is the batch's seq.
	Seq uint64 `json:"seq"`
	// Event is the event's index in the batch, -1 for the whole batch.
	Event int `json:"event"`
	// Engine is the engine the batch maps to when it was refused for that
	// engine (ErrEngineBudget, ErrEngineOwner; §2.10 A9), so that a log
	// line or a router can name the source and rank without parsing the
	// error's value; nil otherwise.
	Engine *KVEvEngineKey `json:"engine,omitzero"`
	// Error is the canonical error.
	Error ErrorObject `json:"error"`
}

// KVEvScore is one engine's score of a prompt (§2.8).
type KVEvScore struct {
	// Source is the engine's source name.
	Source string `json:"source"`
	// DPRank is the engine's DP rank.
	DPRank int64 `json:"dp_rank"`
	// Blocks is the number of leading resident pages.
	Blocks int `json:"blocks"`
	// Tokens is Blocks × PageSize.
	Tokens int64 `json:"tokens"`
	// PageSize is the pool's page size.
	PageSize int64 `json:"page_size"`
	// Stale says the engine may have missed events (§3.3).
	Stale bool `json:"stale"`
}

// KVEvStepResult is what one step did.
type KVEvStepResult struct {
	// Op echoes the step's op.
	Op string `json:"op"`
	// Applied are the seqs applied by this step, in order.
	Applied []uint64 `json:"applied,omitzero"`
	// Duplicates are the seqs dropped as already applied.
	Duplicates []uint64 `json:"duplicates,omitzero"`
	// Held is the number of live messages the stream holds after the step.
	Held int `json:"held,omitzero"`
	// ReplayRequest are the frames the subscriber must send on its DEALER
	// socket now: [empty, 8-byte big-endian start] (§3.2).
	ReplayRequest []HexBytes `json:"replay_request,omitzero"`
	// ReplayDone is set when this step completed the outstanding replay.
	ReplayDone bool `json:"replay_done,omitzero"`
	// SnapshotRequest are the frames the subscriber must send on its
	// snapshot (REQ) socket now: the single frame "snapshot" (§3.5, §2.10 A13).
	SnapshotRequest []HexBytes `json:"snapshot_request,omitzero"`
	// SnapshotDone is set when this step installed a snapshot (§2.10 A13).
	SnapshotDone bool `json:"snapshot_done,omitzero"`
	// Lost are the runs of seqs this step found unrecoverable (§3.3).
	Lost []KVEvGap `json:"lost,omitzero"`
	// Restart is set when this step dropped the stream's engines (§3.4).
	Restart bool `json:"restart,omitzero"`
	// Errors are the batches and events refused while applying.
	Errors []KVEvEventError `json:"errors,omitzero"`
	// Scores are a score step's results, sorted by (source, dp_rank).
	Scores []KVEvScore `json:"scores,omitzero"`
	// Error is the step's own rejection (unknown stream, malformed frames,
	// a reply without an outstanding replay); the index did not change.
	Error *ErrorObject `json:"error,omitzero"`
}

// KVEvStreamState is a stream's cursor and counters (§3.1, §3.3).
type KVEvStreamState struct {
	// Name is the stream's name.
	Name string `json:"name"`
	// Known is false until the first message (and after a restart).
	Known bool `json:"known"`
	// Next is the first seq not yet applied.
	Next uint64 `json:"next"`
	// LastLive is the highest seq seen on the live socket.
	LastLive uint64 `json:"last_live"`
	// Replaying is set while a replay is outstanding.
	Replaying bool `json:"replaying"`
	// ReplayTarget is the held live seq that triggered the replay or the
	// snapshot request.
	ReplayTarget uint64 `json:"replay_target,omitzero"`
	// Snapshotting is set while a snapshot request is outstanding (§2.10 A13).
	Snapshotting bool `json:"snapshotting,omitzero"`
	// Resync is set by heartbeat_lost: the next live message asks for a
	// snapshot (§2.10 A13).
	Resync bool `json:"resync,omitzero"`
	// PublisherID is the publisher id the stream recorded (streams with a
	// snapshot endpoint only; §2.10 A13).
	PublisherID HexBytes `json:"publisher_id,omitzero"`
	// Held is the number of live messages held during the replay.
	Held int `json:"held"`
	// StaleSince is set once the stream lost batches: engines it creates
	// later start stale (§2.10 A3).
	StaleSince *uint64 `json:"stale_since,omitzero"`
	// Engines are the engines this stream fed since its last restart, sorted.
	Engines []KVEvEngineKey `json:"engines"`
	// Counters are the stream's counters.
	Counters KVEvStreamCounters `json:"counters"`
}

// KVEvStreamCounters count what happened to a stream's messages.
type KVEvStreamCounters struct {
	// Batches counts batches applied (decoded or refused).
	Batches uint64 `json:"batches"`
	// Duplicates counts batches dropped as already applied.
	Duplicates uint64 `json:"duplicates"`
	// Malformed counts live messages dropped for their frames (§1.2).
	Malformed uint64 `json:"malformed"`
	// DecodeErrors counts batches refused by the decoder (§2.7).
	DecodeErrors uint64 `json:"decode_errors"`
	// Gaps counts unrecoverable gaps (§3.3).
	Gaps uint64 `json:"gaps"`
	// GapBatchesLost counts the seqs inside them.
	GapBatchesLost uint64 `json:"gap_batches_lost"`
	// ReplaysOK counts replays that ended with their sentinel.
	ReplaysOK uint64 `json:"replays_ok"`
	// ReplaysFailed counts replays that did not.
	ReplaysFailed uint64 `json:"replays_failed"`
	// HeldOverflow counts live messages dropped because the hold queue was full.
	HeldOverflow uint64 `json:"held_overflow"`
	// Restarts counts publisher restarts (§3.4).
	Restarts uint64 `json:"restarts"`
	// EnginesRefused counts batches refused whole for their engine: past
	// the stream's share (ErrEngineBudget) or fed by another stream
	// (ErrEngineOwner). They decoded, so they are not DecodeErrors (§2.10 A2).
	EnginesRefused uint64 `json:"engines_refused"`
	// SnapshotsOK counts snapshots installed (§2.10 A13).
	SnapshotsOK uint64 `json:"snapshots_ok,omitzero"`
	// SnapshotsFailed counts snapshot requests that ended without one
	// (snapshot_failed, an unavailable reply, a chunk that did not decode).
	SnapshotsFailed uint64 `json:"snapshots_failed,omitzero"`
	// OtherPublisher counts held messages dropped after a snapshot because
	// another publisher id sent them (§2.10 A13).
	OtherPublisher uint64 `json:"other_publisher,omitzero"`
}

// KVEvEngineKey identifies an engine (§2.1).
type KVEvEngineKey struct {
	// Source is the source name.
	Source string `json:"source"`
	// DPRank is the data-parallel rank.
	DPRank int64 `json:"dp_rank"`
}

// KVEvEngineState is an engine's observable state.
type KVEvEngineState struct {
	// Source is the source name.
	Source string `json:"source"`
	// DPRank is the data-parallel rank.
	DPRank int64 `json:"dp_rank"`
	// Stream is the stream that feeds the engine.
	Stream string `json:"stream"`
	// Model is the model name of a kv@<source>@<model> topic, "" otherwise.
	Model string `json:"model,omitzero"`
	// Stale says the engine may have missed events (§3.3).
	Stale bool `json:"stale"`
	// StaleSince is the seq that made it stale.
	StaleSince uint64 `json:"stale_since,omitzero"`
	// Tokens is the tokens of all its pages, holes included (the budget's measure).
	Tokens int64 `json:"tokens"`
	// Counters are the engine's event counters.
	Counters KVEvEngineCounters `json:"counters"`
	// Pools are its pools sorted by (group, tier).
	Pools []KVEvPoolState `json:"pools"`
}

// KVEvEngineCounters count an engine's events.
type KVEvEngineCounters struct {
	// Stored counts BlockStored events applied.
	Stored uint64 `json:"stored"`
	// Removed counts BlockRemoved events applied.
	Removed uint64 `json:"removed"`
	// Cleared counts AllBlocksCleared events.
	Cleared uint64 `json:"cleared"`
	// Refused counts events refused (§2.7).
	Refused uint64 `json:"refused"`
	// OrphanStores counts stores (or tokenless hashes) whose parent was unknown (§2.3).
	OrphanStores uint64 `json:"orphan_stores"`
	// UnknownRemovals counts removed hashes that named no page (§2.4).
	UnknownRemovals uint64 `json:"unknown_removals"`
	// UnknownEvents counts events with an unknown tag (§1.4 rule 2).
	UnknownEvents uint64 `json:"unknown_events"`
}

// KVEvPoolState is one pool: a (group, tier) of an engine.
type KVEvPoolState struct {
	// Group is the KV-cache group.
	Group int64 `json:"group"`
	// Tier is the upper-cased medium.
	Tier string `json:"tier"`
	// PageSize is the tokens per page.
	PageSize int64 `json:"page_size"`
	// Pages are the pages in pre-order, children sorted by (namespace, tokens).
	Pages []KVEvPageState `json:"pages"`
	// PageCount is set, and Pages left nil, by an index's Summary (the
	// server's cheap view, never an op's output, hence no JSON).
	PageCount int `json:"-"`
}

// KVEvPageState is one page of a pool.
type KVEvPageState struct {
	// Depth is the page's depth, 0 for a child of the root.
	Depth int `json:"depth"`
	// Namespace is the page's namespace (§2.2).
	Namespace string `json:"namespace,omitzero"`
	// Tokens are the page's tokens.
	Tokens []uint32 `json:"tokens"`
	// Resident is the page's residency count, the sum of its bindings' counts; 0 is a hole.
	Resident int64 `json:"resident"`
	// Bindings are the block hashes bound to the page, sorted by hash (§2.10 A4).
	Bindings []KVEvBinding `json:"bindings,omitzero"`
}

// KVEvBinding is one block hash bound to a page and its residency count.
type KVEvBinding struct {
	// Hash is the block hash.
	Hash EvHash `json:"hash"`
	// Count is the copies of the block the engine holds under this hash.
	Count int64 `json:"count"`
}

// KVEvState is an index's observable state.
type KVEvState struct {
	// Streams are the streams in configuration order.
	Streams []KVEvStreamState `json:"streams"`
	// Engines are the engines sorted by (source, dp_rank).
	Engines []KVEvEngineState `json:"engines"`
	// Digest is the hex SHA-256 of the canonical encoding (§4.3).
	Digest string `json:"digest"`
}

// KVEvScoreQuery is a score request (§2.8).
type KVEvScoreQuery struct {
	// Tokens are the prompt's token ids, each in [0, 2^32).
	Tokens []int64
	// Namespace is the prompt's namespace, "" for the base model.
	Namespace string
	// Group is the KV-cache group.
	Group int64
	// Tier is the tier; "" means GPU; compared upper-cased.
	Tier string
	// Exact compares tokens instead of prefix hashes.
	Exact bool
}

// KVEvIndex is the event-fed prefix index of docs/spec/kv-events.md §2-§3:
// streams' cursors and engines' pools. Each method is one thing a
// subscriber observed; the result says what the index did and what the
// subscriber must do next (ReplayRequest). Implementations are safe for
// concurrent use: calls for different streams may run in parallel with
// each other and with Score; calls for one stream are made in order.
type KVEvIndex interface {
	// Live handles a message received on the stream's SUB socket.
	Live(stream string, frames [][]byte) KVEvStepResult
	// Replay handles one reply received on the stream's DEALER socket.
	Replay(stream string, frames [][]byte) KVEvStepResult
	// ReplayFailed ends the stream's outstanding replay without its sentinel.
	ReplayFailed(stream string, reason string) KVEvStepResult
	// Restart handles a signal that the stream's publisher was replaced.
	Restart(stream string) KVEvStepResult
	// Score scores a prompt against every engine with a pool for the
	// query's (group, tier), sorted by (source, dp_rank).
	Score(q KVEvScoreQuery) ([]KVEvScore, error)
	// State returns the observable state, digest included.
	State() KVEvState
	// Digest returns the SHA-256 of the canonical encoding (§4.3).
	Digest() [32]byte
	// AddStream adds a stream at run time with the share every stream
	// has, fixed when the index was built (§2.10 A11).
	AddStream(s KVEvStream) error
	// RemoveStream removes a stream, dropping its engines, cursor and
	// held messages (§2.10 A11).
	RemoveStream(name string) error
}

// KVEvBootstrapper is an index that serves vLLM's snapshot bootstrap
// (§3.5, §2.10 A13). It is separate from KVEvIndex so that wrappers (the
// relay's, the state verifier's) need not forward it; a subscriber
// refuses a snapshot= source when its index does not implement it.
type KVEvBootstrapper interface {
	// SnapshotReply handles the reply received on the stream's snapshot
	// socket: all of its frames.
	SnapshotReply(stream string, frames [][]byte) KVEvStepResult
	// SnapshotFailed ends the outstanding snapshot request without a reply
	// (reason: timeout, protocol, unavailable).
	SnapshotFailed(stream string, reason string) KVEvStepResult
	// HeartbeatLost tells the index that the stream's live socket was
	// silent past the heartbeat bound.
	HeartbeatLost(stream string) KVEvStepResult
}

// NewKVEvIndexFunc builds an index over the given streams.
type NewKVEvIndexFunc func(cfg KVEvConfig, streams []KVEvStream) (KVEvIndex, error)

// Hard caps of KVEvConfig: a configuration past them is refused, so no
// configuration can size an allocation a publisher could then fill.
const (
	// MaxKVEvEngines caps KVEvConfig.MaxEngines.
	MaxKVEvEngines = 1 << 16
	// MaxKVEvTokensPerEngine caps KVEvConfig.MaxTokensPerEngine.
	MaxKVEvTokensPerEngine = 1 << 32
	// MaxKVEvHeld caps KVEvConfig.MaxHeld.
	MaxKVEvHeld = 1 << 20
)

// DefaultKVEvConfig is the configuration zero fields take: 256 engines,
// 4 Mi tokens per engine (a 70B model's GPU cache at 16-token pages holds
// far fewer), 10,000 held messages (vLLM's buffer_steps) of at most 64 MiB
// together, and the default bounds of one message (KVDecodeLimits). The
// engine share per stream depends on the streams and is left zero:
// EngineShare.
func DefaultKVEvConfig() KVEvConfig {
	return KVEvConfig{MaxEngines: 256, MaxTokensPerEngine: 4 << 20, MaxHeld: 10000}.withBoundDefaults()
}

// WithDefaults returns c with its zero fields set from DefaultKVEvConfig.
func (c KVEvConfig) WithDefaults() KVEvConfig {
	d := DefaultKVEvConfig()
	if c.MaxEngines == 0 {
		c.MaxEngines = d.MaxEngines
	}
	if c.MaxTokensPerEngine == 0 {
		c.MaxTokensPerEngine = d.MaxTokensPerEngine
	}
	if c.MaxHeld == 0 {
		c.MaxHeld = d.MaxHeld
	}
	return c.withBoundDefaults()
}

// Validate rejects a negative bound or one past its hard cap, naming
// config.<field>.
func (c KVEvConfig) Validate() error {
	if c.MaxEngines < 0 || c.MaxEngines > MaxKVEvEngines {
		return Reject(ErrTooLarge, "config.max_engines", c.MaxEngines, fmt.Sprintf("in [0, %d]", MaxKVEvEngines))
	}
	if c.MaxTokensPerEngine < 0 || c.MaxTokensPerEngine > MaxKVEvTokensPerEngine {
		return Reject(ErrTooLarge, "config.max_tokens_per_engine", c.MaxTokensPerEngine, fmt.Sprintf("in [0, %d]", int64(MaxKVEvTokensPerEngine)))
	}
	if c.MaxHeld < 0 || c.MaxHeld > MaxKVEvHeld {
		return Reject(ErrTooLarge, "config.max_held", c.MaxHeld, fmt.Sprintf("in [0, %d]", MaxKVEvHeld))
	}
	if c.MaxEnginesPerStream < 0 || c.MaxEnginesPerStream > MaxKVEvEngines {
		return Reject(ErrTooLarge, "config.max_engines_per_stream", c.MaxEnginesPerStream, fmt.Sprintf("in [0, %d]", MaxKVEvEngines))
	}
	return c.validateBounds()
}

// EngineShare is the engines each of streams streams may create (§2.10
// A5): MaxEnginesPerStream when set, else the fair share
// floor(MaxEngines / streams), zero fields taking their defaults (no
// streams count as one). It refuses (ErrTooLarge) more streams than
// MaxEngines, since every stream's share is at least one engine, and an
// explicit share above floor(MaxEngines / streams), so that streams ×
// share <= MaxEngines: no stream's engines can ever use up another's.
// Precondition: c.Validate() passed.
func (c KVEvConfig) EngineShare(streams int) (int, error) {
	maxEngines := c.WithDefaults().MaxEngines
	n := max(streams, 1)
	if n > maxEngines {
		return 0, Reject(ErrTooLarge, "config.max_engines", maxEngines,
			fmt.Sprintf(">= %d, the number of streams: every stream's share is at least one engine", n))
	}
	fair := maxEngines / n
	if c.MaxEnginesPerStream > fair {
		return 0, Reject(ErrTooLarge, "config.max_engines_per_stream", c.MaxEnginesPerStream,
			fmt.Sprintf("<= %d = max_engines %d / %d streams, so that every stream keeps its share", fair, maxEngines, n))
	}
	return cmp.Or(c.MaxEnginesPerStream, fair), nil
}

func FrameBytes(fs []HexBytes) [][]byte {
	out := make([][]byte, len(fs))
	for i, f := range fs {
		out[i] = f
	}
	return out
}
