package spec

import "io"

// ErrBadSnapshot: an index snapshot that is truncated, has a bad magic,
// version or checksum, declares a length past its bytes or a count past
// the restoring index's bounds, or encodes a state no index can reach
// (docs/spec/kv-events.md §2.10 A12).
var ErrBadSnapshot = NewSentinel("bad_snapshot", "an index snapshot in A12's format whose state an index can hold")

// Snapshot format constants (§2.10 A12).
const (
	// KVEvSnapshotMagic opens every snapshot.
	KVEvSnapshotMagic = "KVTWSNAP"
	// KVEvSnapshotVersion is the format version this code writes and reads.
	KVEvSnapshotVersion = 1
	// KVEvSnapshotHeaderBytes is the header's size: magic (8), version
	// (u32), covers (u64) and the seven config fields (i64 each).
	KVEvSnapshotHeaderBytes = 8 + 4 + 8 + 7*8
	// KVEvSnapshotMinBytes is the smallest snapshot: the header, the
	// stream and engine counts (u64 each) and the SHA-256 trailer.
	KVEvSnapshotMinBytes = KVEvSnapshotHeaderBytes + 8 + 8 + 32
)

// KVEvSnapshotter is an index that can write its snapshot (§2.10 A12).
// It is separate from KVEvIndex so that the wrappers and test doubles
// that implement KVEvIndex need not write one.
type KVEvSnapshotter interface {
	// Snapshot returns the canonical encoding of the index's state,
	// tagged with covers, the JetStream stream sequence it covers.
	Snapshot(covers uint64) ([]byte, error)
}

// KVEvFreezer is an index whose snapshot is taken in two phases (§2.10
// A12, "Taking a snapshot without stopping ingest"): Freeze copies the
// state a snapshot encodes, under the index's locks, in time linear in the
// index's memory but with no per-page work (bulk copies of its arrays);
// the returned KVEvFrozen encodes it later, on any goroutine, while the
// index goes on changing. Snapshot(covers) is Freeze(covers) then Encode.
type KVEvFreezer interface {
	KVEvSnapshotter
	// Freeze copies the index's state, held messages included, tagged
	// with covers. It sees one consistent state: no call on the index is
	// half applied in it.
	Freeze(covers uint64) (KVEvFrozen, error)
}

// KVEvFrozen is an index's state as Freeze copied it (§2.10 A12): nothing
// the index does after Freeze returned changes its bytes. Its methods may
// be called any number of times, from any goroutines, at once.
type KVEvFrozen interface {
	// Covers is the sequence the frozen state is tagged with.
	Covers() uint64
	// Encode returns the frozen state's snapshot: the bytes Snapshot
	// would have returned at the freeze.
	Encode() ([]byte, error)
	// WriteTo streams the same bytes to w (io.WriterTo), in chunks, and
	// returns how many it wrote and w's first error.
	WriteTo(w io.Writer) (int64, error)
}

// RestoreKVEvIndexFunc builds an index from a snapshot under cfg (§2.10
// A12) and returns it with the sequence the snapshot covers.
type RestoreKVEvIndexFunc func(cfg KVEvConfig, snapshot []byte) (KVEvIndex, uint64, error)

// KVEvSnapshotContent is a snapshot decoded and checked (§2.10 A12): the
// state both twins write and restore. Derived values (a stream's Held
// count and Engines, an engine's Tokens, a page's Resident) are filled
// in by the decoder, never read from the bytes.
type KVEvSnapshotContent struct {
	// Covers is the stream sequence the snapshot covers.
	Covers uint64
	// Config is the index's configuration after defaults, its engine
	// share included.
	Config KVEvConfig
	// Streams are the streams in configuration order.
	Streams []KVEvSnapshotStream
	// Engines are the engines sorted by (source, dp_rank), pages in A8's
	// pre-order.
	Engines []KVEvEngineState
}

// KVEvSnapshotStream is one stream of a snapshot: its configuration, its
// cursor and counters, and the frames of its held messages.
type KVEvSnapshotStream struct {
	// Config is the stream's configuration.
	Config KVEvStream
	// State is the stream's cursor and counters as State reports them.
	State KVEvStreamState
	// PastEnd says seq 2^64-1 was applied (A9).
	PastEnd bool
	// Held are the held live messages' frames, the triggering one first (A7).
	Held [][][]byte
}

// KVEvSnapshotInput is the input of kvev.snapshot: a kvev.apply script
// whose final index is snapshotted, tagged with Covers.
type KVEvSnapshotInput struct {
	// Config bounds the index.
	Config KVEvConfig `json:"config,omitzero"`
	// Streams are the publisher streams, names unique.
	Streams []KVEvStream `json:"streams"`
	// Steps run in order, as in kvev.apply.
	Steps []KVEvStep `json:"steps"`
	// Covers is the stream sequence the snapshot is tagged with.
	Covers uint64 `json:"covers,omitzero"`
}

// KVEvSnapshotOutput is the output of kvev.snapshot.
type KVEvSnapshotOutput struct {
	// Snapshot is the index's snapshot (§2.10 A12).
	Snapshot HexBytes `json:"snapshot"`
	// Covers is the sequence the restored snapshot says it covers.
	Covers uint64 `json:"covers"`
	// State is the state of the index restored from Snapshot, which
	// equals the state the script left.
	State KVEvState `json:"state"`
}
