package fast

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"io"
	"slices"
	"strings"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/spec"
)

// fast's own A12 encoder (docs/spec/kv-events.md §2.10 A12), written
// apart from ref's EncodeKVEvSnapshot so that a bug in either is a
// difference the differential suite sees. It works in two phases:
//
//   - Freeze (kvev_snapshot.go), under the index's locks, copies each
//     pool's pointer-free arrays whole (link words, pages, tokens,
//     overflow bindings, namespace names and reference counts): a few
//     large memmoves per pool, no per-page allocation, so ingest pauses
//     for a fraction of the encoding. The tables (byHash, byPrefix) and
//     prefix hashes are not copied: nothing in A12 reads them.
//   - Encode / WriteTo, on any goroutine and without a lock, walks the
//     copies in A8's pre-order (children sorted by (namespace, tokens),
//     bindings by hash) and streams the bytes, in chunks, into SHA-256
//     and the writer: no spec struct per page, and the only buffer the
//     size of the snapshot is Encode's result.
//
// A held message's frames are shared with the stream, not copied: a
// stream copies a message when it holds it (kvHoldCopy) and never writes
// those bytes again, it only drops them.

// kvFrozen is the fast index's state at a Freeze. Nothing in it is
// written after Freeze returns, so any number of encodings may read it at
// once.
type kvFrozen struct {
	covers  uint64
	cfg     spec.KVEvConfig
	streams []kvFrozenStream
	engines []kvFrozenEngine
	// f are the index's bug-zoo switches (zero in production); the
	// encoder's plants read them.
	f fault.KVEv
}

// kvFrozenStream is a stream's configuration, cursor, counters and held
// frames at the freeze.
type kvFrozenStream struct {
	name         string
	rank         int64
	replay       bool
	snapshot     bool   // A13: the stream has a snapshot endpoint
	pid          []byte // A13: the publisher id recorded, nil when none
	known        bool
	next         uint64
	pastEnd      bool
	lastLive     uint64
	replaying    bool
	snapshotting bool // A13: a snapshot request outstanding
	resync       bool // A13: the next live message asks for a snapshot
	target       uint64
	staleSet     bool
	staleSince   uint64
	c            spec.KVEvStreamCounters
	held         [][][]byte
}

// kvFrozenEngine is an engine's key, flags, counters and pools (frozen
// copies, sorted by (group, tier)) at the freeze.
type kvFrozenEngine struct {
	source     string
	dpRank     int64
	stream     string
	model      string
	stale      bool
	staleSince uint64
	c          spec.KVEvEngineCounters
	pools      []*kvPool
}

// frozen copies st's cursor, counters and held frames (st.mu held).
func (st *kvStream) frozen() kvFrozenStream {
	fs := kvFrozenStream{
		name: st.name, rank: st.rank, replay: st.replay, snapshot: st.snapshot, pid: bytes.Clone(st.pid),
		known: st.known, next: st.next, pastEnd: st.pastEnd, lastLive: st.lastLive,
		replaying: st.replaying, snapshotting: st.snapshotting, resync: st.resync, c: st.c,
		held: make([][][]byte, len(st.held)),
	}
	if st.replaying || st.snapshotting {
		fs.target = st.target
	}
	if st.staleSet {
		fs.staleSet, fs.staleSince = true, st.staleSince
	}
	for i, m := range st.held {
		fs.held[i] = m.frames
	}
	return fs
}

// frozen copies e's flags, counters and pools (e.mu held), the pools in
// (group, tier) order.
func (e *kvEngine) frozen() kvFrozenEngine {
	fe := kvFrozenEngine{
		source: e.key.Source, dpRank: e.key.DPRank, stream: e.stream.name, model: e.model,
		stale: e.stale, c: e.c, pools: make([]*kvPool, 0, len(e.pools)),
	}
	if e.stale {
		fe.staleSince = e.staleSince
	}
	for _, pl := range e.pools {
		fe.pools = append(fe.pools, pl.frozen())
	}
	slices.SortFunc(fe.pools, func(a, b *kvPool) int {
		return cmp.Or(cmp.Compare(a.group, b.group), strings.Compare(a.tier, b.tier))
	})
	return fe
}

// frozen is a copy of pl holding what A12's walk reads, with bulk copies
// of its pointer-free arrays: a pool of its own whose tables are empty
// and whose prefix hashes are absent, read only by the encoder.
func (pl *kvPool) frozen() *kvPool {
	return &kvPool{
		group: pl.group, tier: pl.tier, pageSize: pl.pageSize, pages: pl.pages,
		link:    slices.Clone(pl.link),
		page:    slices.Clone(pl.page),
		toks:    slices.Clone(pl.toks),
		binds:   slices.Clone(pl.binds),
		nsNames: slices.Clone(pl.nsNames),
		nsRefs:  slices.Clone(pl.nsRefs),
	}
}

// Covers implements spec.KVEvFrozen.
func (fz *kvFrozen) Covers() uint64 { return fz.covers }

// Encode implements spec.KVEvFrozen: the snapshot in one buffer of
// exactly its size (size), so building it never copies it.
func (fz *kvFrozen) Encode() ([]byte, error) {
	var b bytes.Buffer
	b.Grow(fz.size())
	if _, err := fz.WriteTo(&b); err != nil {
		return nil, err // unreachable: a bytes.Buffer takes every write
	}
	return b.Bytes(), nil
}

// WriteTo implements spec.KVEvFrozen (io.WriterTo): A12's bytes in
// order, the SHA-256 trailer last, in chunks of about kvSnapChunk bytes.
// After w's first error nothing more is written to it.
func (fz *kvFrozen) WriteTo(w io.Writer) (int64, error) {
	enc := &kvSnapEnc{w: w, sha: sha256.New(), buf: make([]byte, 0, kvSnapChunk+1024)}
	enc.header(fz)
	enc.u64(uint64(len(fz.streams)))
	for i := range fz.streams {
		enc.stream(&fz.streams[i])
	}
	enc.u64(uint64(len(fz.engines)))
	for i := range fz.engines {
		enc.engine(&fz.engines[i], fz.f)
	}
	enc.flush()
	if enc.err == nil {
		n, err := w.Write(enc.sha.Sum(nil))
		enc.n += int64(n)
		enc.err = err
	}
	return enc.n, enc.err
}

// Encoded sizes of A12's fixed parts (§2.10 A12, "Encoding").
const (
	// kvSnapStreamFixed is a stream's bytes but its name's, publisher
	// id's and held frames': name length, rank, replay, snapshot, the
	// publisher id's length, known, next, past_end, last_live, replaying,
	// snapshotting, resync, replay_target, stale_set, stale_since, the
	// fourteen counters and the held count (A12 as A13 amends it).
	kvSnapStreamFixed = 8 + 8 + 1 + 1 + 8 + 1 + 8 + 1 + 8 + 1 + 1 + 1 + 8 + 1 + 8 + 14*8 + 8
	// kvSnapEngineFixed is an engine's bytes but its strings' and pools':
	// three string lengths (source, stream, model), dp_rank, stale,
	// stale_since, the seven counters and the pool count.
	kvSnapEngineFixed = 3*8 + 8 + 1 + 8 + 7*8 + 8
	// kvSnapPoolFixed is a pool's bytes but its tier's and pages': group,
	// tier length, page size, page count.
	kvSnapPoolFixed = 4 * 8
	// kvSnapPageFixed is a page's bytes but its namespace's, tokens' and
	// bindings': depth, namespace length, token count, binding count.
	kvSnapPageFixed = 4 * 8
	// kvSnapChunk is how many bytes WriteTo gathers per write.
	kvSnapChunk = 64 << 10
)

// size is the snapshot's length, computed from the frozen arrays without
// walking the trees: a pool's pages each cost the same but for their
// namespace (an id's name times its reference count, one per page) and
// bindings (each page's count).
func (fz *kvFrozen) size() int {
	n := spec.KVEvSnapshotHeaderBytes + 8 + 8 + sha256.Size
	for i := range fz.streams {
		s := &fz.streams[i]
		n += kvSnapStreamFixed + len(s.name) + len(s.pid)
		for _, m := range s.held {
			for _, f := range m {
				n += 8 + len(f)
			}
		}
	}
	for i := range fz.engines {
		e := &fz.engines[i]
		n += kvSnapEngineFixed + len(e.source) + len(e.stream) + len(e.model)
		for _, pl := range e.pools {
			n += kvSnapPoolFixed + len(pl.tier) + pl.pages*(kvSnapPageFixed+4*int(pl.pageSize))
			for id, name := range pl.nsNames {
				n += int(pl.nsRefs[id]) * len(name)
			}
			for s := range pl.page {
				n += 16 * int(pl.page[s].nbind)
			}
		}
	}
	return n
}

// kvSnapEnc streams A12's encoding: integers and strings gathered in buf,
// which goes to SHA-256 and w at every kvSnapChunk bytes.
type kvSnapEnc struct {
	w   io.Writer
	sha hash.Hash
	buf []byte
	n   int64
	err error
	// Scratch of the walk.
	stack []kvSnapFrame
	binds []kvBinding
}

// kvSnapFrame is a page of the walk and its depth (0 under the root).
type kvSnapFrame struct {
	s     int32
	depth int
}

// flush sends buf to SHA-256 and, until it fails, to w.
func (enc *kvSnapEnc) flush() {
	if len(enc.buf) == 0 {
		return
	}
	enc.sha.Write(enc.buf)
	if enc.err == nil {
		n, err := enc.w.Write(enc.buf)
		enc.n += int64(n)
		if err == nil && n < len(enc.buf) {
			err = io.ErrShortWrite
		}
		enc.err = err
	}
	enc.buf = enc.buf[:0]
}

// maybeFlush flushes once a chunk is gathered.
func (enc *kvSnapEnc) maybeFlush() {
	if len(enc.buf) >= kvSnapChunk {
		enc.flush()
	}
}

func (enc *kvSnapEnc) u64(v uint64) { enc.buf = binary.LittleEndian.AppendUint64(enc.buf, v) }
func (enc *kvSnapEnc) i64(v int64)  { enc.u64(uint64(v)) }
func (enc *kvSnapEnc) u32(v uint32) { enc.buf = binary.LittleEndian.AppendUint32(enc.buf, v) }

func (enc *kvSnapEnc) flag(v bool) {
	var b byte
	if v {
		b = 1
	}
	enc.buf = append(enc.buf, b)
}

// bytes writes a byte string: its u64 length, then its bytes (a long
// one, a held payload, straight from its own memory).
func (enc *kvSnapEnc) bytes(b []byte) {
	enc.u64(uint64(len(b)))
	if len(b) < kvSnapChunk {
		enc.buf = append(enc.buf, b...)
		enc.maybeFlush()
		return
	}
	enc.flush()
	enc.buf = b
	enc.flush()
	enc.buf = make([]byte, 0, kvSnapChunk+1024)
}

func (enc *kvSnapEnc) str(s string) {
	enc.u64(uint64(len(s)))
	enc.buf = append(enc.buf, s...)
	enc.maybeFlush()
}

// tokens writes a page's tokens, u32 each, in one step.
func (enc *kvSnapEnc) tokens(toks []uint32) {
	o := len(enc.buf)
	enc.buf = slices.Grow(enc.buf, 4*len(toks))[:o+4*len(toks)]
	for i, t := range toks {
		binary.LittleEndian.PutUint32(enc.buf[o+4*i:], t)
	}
}

// header is A12's magic, version, covers and config.
func (enc *kvSnapEnc) header(fz *kvFrozen) {
	c := fz.cfg
	enc.buf = append(enc.buf, spec.KVEvSnapshotMagic...)
	enc.u32(spec.KVEvSnapshotVersion)
	enc.u64(fz.covers)
	for _, v := range []int64{int64(c.MaxEngines), int64(c.MaxEnginesPerStream), c.MaxTokensPerEngine,
		int64(c.MaxHeld), c.MaxHeldBytes, int64(c.MaxEvents), c.MaxDecodeRatio} {
		enc.i64(v)
	}
}

// stream is one stream in A12's order.
func (enc *kvSnapEnc) stream(s *kvFrozenStream) {
	enc.str(s.name)
	enc.i64(s.rank)
	enc.flag(s.replay)
	enc.flag(s.snapshot)
	enc.bytes(s.pid)
	enc.flag(s.known)
	enc.u64(s.next)
	enc.flag(s.pastEnd)
	enc.u64(s.lastLive)
	enc.flag(s.replaying)
	enc.flag(s.snapshotting)
	enc.flag(s.resync)
	enc.u64(s.target)
	enc.flag(s.staleSet)
	enc.u64(s.staleSince)
	c := &s.c
	for _, v := range [...]uint64{c.Batches, c.Duplicates, c.Malformed, c.DecodeErrors, c.Gaps,
		c.GapBatchesLost, c.ReplaysOK, c.ReplaysFailed, c.HeldOverflow, c.Restarts, c.EnginesRefused,
		c.SnapshotsOK, c.SnapshotsFailed, c.OtherPublisher} {
		enc.u64(v)
	}
	enc.u64(uint64(len(s.held)))
	for _, m := range s.held {
		for _, f := range m {
			enc.bytes(f)
		}
	}
}

// engine is one engine in A12's order, its pools' pages walked.
func (enc *kvSnapEnc) engine(e *kvFrozenEngine, f fault.KVEv) {
	enc.str(e.source)
	enc.i64(e.dpRank)
	enc.str(e.stream)
	enc.str(e.model)
	enc.flag(e.stale)
	enc.u64(e.staleSince)
	c := &e.c
	for _, v := range [...]uint64{c.Stored, c.Removed, c.Cleared, c.Refused, c.OrphanStores, c.UnknownRemovals, c.UnknownEvents} {
		enc.u64(v)
	}
	enc.u64(uint64(len(e.pools)))
	for _, pl := range e.pools {
		enc.pool(pl, f)
	}
}

// pool writes a frozen pool's header and its pages in A8's pre-order: a
// stack of slots, each page's children pushed in reverse canonical order
// so that the smallest is written next.
func (enc *kvSnapEnc) pool(pl *kvPool, f fault.KVEv) {
	enc.i64(pl.group)
	enc.str(pl.tier)
	enc.i64(pl.pageSize)
	enc.u64(uint64(pl.pages))
	stack := enc.pushChildren(pl, enc.stack[:0], kvSnapFrame{s: 0, depth: -1}, f)
	for len(stack) > 0 && enc.err == nil {
		fr := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		enc.page(pl, fr, f)
		stack = enc.pushChildren(pl, stack, fr, f)
	}
	enc.stack = stack[:0]
}

// pushChildren pushes parent's children onto stack, largest first.
func (enc *kvSnapEnc) pushChildren(pl *kvPool, stack []kvSnapFrame, parent kvSnapFrame, f fault.KVEv) []kvSnapFrame {
	start := len(stack)
	for k := kvLinkFirst(pl.link[parent.s]); k != 0; k = pl.page[k].next {
		stack = append(stack, kvSnapFrame{s: k, depth: parent.depth + 1})
	}
	if kids := stack[start:]; len(kids) > 1 && !f.SnapshotSiblingsUnsorted {
		slices.SortFunc(kids, func(a, b kvSnapFrame) int { return pl.pageCompare(b.s, a.s) })
	}
	return stack
}

// page writes one page: depth, namespace, tokens, bindings by hash.
func (enc *kvSnapEnc) page(pl *kvPool, fr kvSnapFrame, f fault.KVEv) {
	enc.u64(uint64(fr.depth))
	enc.str(pl.nsOf(fr.s))
	toks := pl.tokensOf(fr.s)
	enc.u64(uint64(len(toks)))
	enc.tokens(toks)
	binds := pl.appendBindings(enc.binds[:0], fr.s)
	if len(binds) > 1 && !f.SnapshotBindingsUnsorted {
		slices.SortFunc(binds, func(a, b kvBinding) int { return cmp.Compare(a.hash, b.hash) })
	}
	enc.u64(uint64(len(binds)))
	for _, b := range binds {
		enc.u64(b.hash)
		enc.i64(b.count)
	}
	enc.binds = binds[:0]
	enc.maybeFlush()
}
