package ref

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kvtwin/kvtwin/spec"
)

// The snapshot format of docs/spec/kv-events.md §2.10 A12: the
// reference's encoder, and the decoder both twins restore with (one set
// of refusals, so a refusal's words cannot differ between them). The fast
// twin writes the bytes with its own encoder (fast/kvev_snapshot_encode.go),
// from a frozen copy of its pools, so that the differential suite compares
// two encoders byte for byte.
// Decoding checks every declared length against the bytes left before it
// allocates, every count against the restoring config's bounds, and the
// state's own consistency, so that a restore never builds a state that
// applying events could not have built.

// Minimal encoded sizes, which bound what a declared count may claim by
// the bytes left (A12): no hostile count sizes an allocation.
const (
	snapStreamMin  = 8 + 8 + 1 + 1 + 1 + 8 + 1 + 8 + 1 + 8 + 1 + 1 + 8 + 1 + 8 + 14*8 + 8
	snapHeldMin    = 3 * 8
	snapEngineMin  = 8 + 8 + 8 + 8 + 1 + 8 + 7*8 + 8
	snapPoolMin    = 8 + 8 + 8 + 8
	snapPageMin    = 8 + 8 + 8 + 8
	snapBindingMin = 16
	snapTokenBytes = 4
)

// EncodeKVEvSnapshot writes c in A12's canonical encoding with its
// SHA-256 trailer. Derived values (a stream's Held and Engines, an
// engine's Tokens, a page's Resident) are not written.
func EncodeKVEvSnapshot(c spec.KVEvSnapshotContent) []byte {
	var w kvevCanon
	w.b = append(w.b, spec.KVEvSnapshotMagic...)
	w.u32(spec.KVEvSnapshotVersion)
	w.u64(c.Covers)
	for _, v := range snapConfigFields(c.Config) {
		w.i64(v.value)
	}
	w.u64(uint64(len(c.Streams)))
	for _, s := range c.Streams {
		encodeSnapStream(&w, s)
	}
	w.u64(uint64(len(c.Engines)))
	for _, e := range c.Engines {
		encodeSnapEngine(&w, e)
	}
	sum := sha256.Sum256(w.b)
	return append(w.b, sum[:]...)
}

func encodeSnapStream(w *kvevCanon, s spec.KVEvSnapshotStream) {
	st := s.State
	w.str(s.Config.Name)
	w.i64(s.Config.Rank)
	w.flag(s.Config.Replay)
	w.flag(s.Config.Snapshot)
	w.str(string(st.PublisherID))
	w.flag(st.Known)
	w.u64(st.Next)
	w.flag(s.PastEnd)
	w.u64(st.LastLive)
	w.flag(st.Replaying)
	w.flag(st.Snapshotting)
	w.flag(st.Resync)
	w.u64(st.ReplayTarget)
	w.flag(st.StaleSince != nil)
	if st.StaleSince != nil {
		w.u64(*st.StaleSince)
	} else {
		w.u64(0)
	}
	for _, v := range streamCounterList(&st.Counters) {
		w.u64(*v)
	}
	w.u64(uint64(len(s.Held)))
	for _, m := range s.Held {
		for _, f := range m {
			w.str(string(f))
		}
	}
}

func encodeSnapEngine(w *kvevCanon, e spec.KVEvEngineState) {
	w.str(e.Source)
	w.i64(e.DPRank)
	w.str(e.Stream)
	w.str(e.Model)
	w.flag(e.Stale)
	w.u64(e.StaleSince)
	for _, v := range engineCounterList(&e.Counters) {
		w.u64(*v)
	}
	w.u64(uint64(len(e.Pools)))
	for _, p := range e.Pools {
		w.i64(p.Group)
		w.str(p.Tier)
		w.i64(p.PageSize)
		w.u64(uint64(len(p.Pages)))
		for _, pg := range p.Pages {
			w.u64(uint64(pg.Depth))
			w.str(pg.Namespace)
			w.u64(uint64(len(pg.Tokens)))
			for _, t := range pg.Tokens {
				w.u32(t)
			}
			w.u64(uint64(len(pg.Bindings)))
			for _, b := range pg.Bindings {
				w.u64(uint64(b.Hash))
				w.i64(b.Count)
			}
		}
	}
}

// snapConfigField is one header config field: its name and value.
type snapConfigField struct {
	name  string
	value int64
}

// snapConfigFields lists the header's config fields in A12's order.
func snapConfigFields(c spec.KVEvConfig) []snapConfigField {
	return []snapConfigField{
		{"max_engines", int64(c.MaxEngines)},
		{"max_engines_per_stream", int64(c.MaxEnginesPerStream)},
		{"max_tokens_per_engine", c.MaxTokensPerEngine},
		{"max_held", int64(c.MaxHeld)},
		{"max_held_bytes", c.MaxHeldBytes},
		{"max_events", int64(c.MaxEvents)},
		{"max_decode_ratio", c.MaxDecodeRatio},
	}
}

// streamCounterList lists a stream's counters in A12's order (their
// declaration order).
func streamCounterList(c *spec.KVEvStreamCounters) []*uint64 {
	return []*uint64{&c.Batches, &c.Duplicates, &c.Malformed, &c.DecodeErrors, &c.Gaps,
		&c.GapBatchesLost, &c.ReplaysOK, &c.ReplaysFailed, &c.HeldOverflow, &c.Restarts, &c.EnginesRefused,
		&c.SnapshotsOK, &c.SnapshotsFailed, &c.OtherPublisher}
}

// engineCounterList lists an engine's counters in A12's order.
func engineCounterList(c *spec.KVEvEngineCounters) []*uint64 {
	return []*uint64{&c.Stored, &c.Removed, &c.Cleared, &c.Refused, &c.OrphanStores, &c.UnknownRemovals, &c.UnknownEvents}
}

// badSnapshotError is A12's refusal of a snapshot at field.
func badSnapshotError(field string, value any, bound string) error {
	return spec.Reject(spec.ErrBadSnapshot, field, value, bound)
}

// snapReader reads A12's integers and strings from the body (the bytes
// before the trailer). The first error sticks; later reads return zeros.
type snapReader struct {
	b   []byte
	off int
	err error
}

func (r *snapReader) fail(field string, value any, bound string) {
	if r.err == nil {
		r.err = badSnapshotError(field, value, bound)
	}
}

// snapAt is a field's path built only when an error names it,
// base[k]sub[i]leaf with k or i left out when negative: a restore reads
// millions of pages, and building every page's paths eagerly took about a
// third of its time.
type snapAt struct {
	base string
	k    int
	sub  string
	i    int
	leaf string
}

// field is a plain path as a snapAt.
func field(s string) snapAt { return snapAt{base: s, k: -1, i: -1} }

func (a snapAt) String() string {
	s := a.base
	if a.k >= 0 {
		s = spec.Idx(s, a.k)
	}
	s += a.sub
	if a.i >= 0 {
		s = spec.Idx(s, a.i)
	}
	return s + a.leaf
}

// with is a's path with leaf as its last part.
func (a snapAt) with(leaf string) snapAt { a.leaf = leaf; return a }

func (r *snapReader) failAt(f snapAt, value any, bound string) {
	if r.err == nil {
		r.fail(f.String(), value, bound)
	}
}

func (r *snapReader) left() int { return len(r.b) - r.off }

// take returns the next n bytes, or fails at f with Truncated.
func (r *snapReader) takeAt(f snapAt, n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > r.left() {
		r.failAt(f, spec.Truncated, fmt.Sprintf("%d more bytes", n))
		return nil
	}
	out := r.b[r.off : r.off+n]
	r.off += n
	return out
}

func (r *snapReader) take(f string, n int) []byte { return r.takeAt(field(f), n) }

func (r *snapReader) u64At(f snapAt) uint64 {
	if b := r.takeAt(f, 8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (r *snapReader) u64(f string) uint64 { return r.u64At(field(f)) }

func (r *snapReader) i64At(f snapAt) int64 { return int64(r.u64At(f)) }

func (r *snapReader) i64(f string) int64 { return int64(r.u64(f)) }

// flag reads one byte that must be 0 or 1, so that every state has one
// encoding.
func (r *snapReader) flag(f string) bool {
	b := r.take(f, 1)
	if b == nil {
		return false
	}
	if b[0] > 1 {
		r.fail(f, int(b[0]), "0 or 1")
	}
	return b[0] == 1
}

// lengthAt reads a declared count of elements of at least minBytes bytes
// each and checks it against the bytes left, then against bound (a
// negative bound: none; boundText(n) says it), before the caller
// allocates anything for it.
func (r *snapReader) lengthAt(f snapAt, minBytes int, bound int64, boundText func() string) int {
	n := r.u64At(f)
	if r.err != nil {
		return 0
	}
	if fit := uint64(r.left() / minBytes); n > fit {
		r.failAt(f, n, fmt.Sprintf("at most %d, what the %d bytes left can hold", fit, r.left()))
		return 0
	}
	if bound >= 0 && n > uint64(bound) {
		r.failAt(f, n, boundText())
		return 0
	}
	return int(n)
}

func (r *snapReader) length(f string, minBytes int, bound int64, boundText string) int {
	return r.lengthAt(field(f), minBytes, bound, func() string { return boundText })
}

// bytesAt reads a u64 length and that many bytes, copied.
func (r *snapReader) bytesAt(f snapAt) []byte {
	n := r.lengthAt(f, 1, -1, nil)
	return bytes.Clone(r.takeAt(f, n))
}

func (r *snapReader) bytes(f string) []byte { return r.bytesAt(field(f)) }

func (r *snapReader) str(f string) string { return string(r.bytes(f)) }

// DecodeKVEvSnapshot reads and checks a snapshot for an index configured
// with cfg (§2.10 A12): the framing first (size, magic, version,
// checksum), then the header's config against cfg's, then the streams and
// engines in order, each declared length against the bytes left and each
// count against cfg's bounds, then the state's consistency. The first
// failure is ErrBadSnapshot naming the field, the value and the bound.
// Precondition: none; cfg is validated here.
func DecodeKVEvSnapshot(cfg spec.KVEvConfig, b []byte) (spec.KVEvSnapshotContent, error) {
	var c spec.KVEvSnapshotContent
	err := DecodeKVEvSnapshotEach(cfg, b, func(head spec.KVEvSnapshotContent) { c = head },
		func(e spec.KVEvEngineState) { c.Engines = append(c.Engines, e) })
	if err != nil {
		return spec.KVEvSnapshotContent{}, err
	}
	fillSnapStreamEngines(&c)
	return c, nil
}

// DecodeKVEvSnapshotEach is DecodeKVEvSnapshot for a restore that builds
// as it reads, so that a snapshot of millions of pages is never held
// decoded whole: head receives the covers, config and streams (streams'
// Engines not filled), then engine each engine once its own checks pass,
// in order. The snapshot is accepted only when it returns nil; after an
// error the caller discards what it built.
func DecodeKVEvSnapshotEach(cfg spec.KVEvConfig, b []byte, head func(spec.KVEvSnapshotContent), engine func(spec.KVEvEngineState)) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := checkSnapFraming(b); err != nil {
		return err
	}
	r := &snapReader{b: b[:len(b)-sha256.Size], off: 8 + 4}
	var c spec.KVEvSnapshotContent
	c.Covers = r.u64("covers")
	c.Config = readSnapConfig(r, cfg)
	if r.err == nil {
		c.Streams = readSnapStreams(r, c.Config)
	}
	if r.err == nil {
		head(c)
		readSnapEngines(r, c.Config, c.Streams, engine)
	}
	if r.err == nil && r.left() > 0 {
		r.fail("snapshot", r.left(), "no bytes between the last engine and the checksum")
	}
	return r.err
}

// checkSnapFraming checks the size, magic, version and checksum.
func checkSnapFraming(b []byte) error {
	if len(b) < spec.KVEvSnapshotMinBytes {
		return badSnapshotError("snapshot", len(b), fmt.Sprintf("at least %d bytes", spec.KVEvSnapshotMinBytes))
	}
	if string(b[:8]) != spec.KVEvSnapshotMagic {
		return badSnapshotError("magic", fmt.Sprintf("%x", b[:8]), fmt.Sprintf("%x (%q)", spec.KVEvSnapshotMagic, spec.KVEvSnapshotMagic))
	}
	if v := binary.LittleEndian.Uint32(b[8:12]); v != spec.KVEvSnapshotVersion {
		return badSnapshotError("version", v, fmt.Sprint(spec.KVEvSnapshotVersion))
	}
	body := b[:len(b)-sha256.Size]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], b[len(body):]) {
		return badSnapshotError("checksum", fmt.Sprintf("%x", b[len(body):]), fmt.Sprintf("%x, the SHA-256 of the bytes before it", sum))
	}
	return nil
}

// readSnapConfig reads the header's config, which must be cfg's after
// defaults; its engine share, which depends on the streams the index was
// built with, is taken from the snapshot unless cfg sets one.
func readSnapConfig(r *snapReader, cfg spec.KVEvConfig) spec.KVEvConfig {
	want := snapConfigFields(cfg.WithDefaults())
	got := make([]int64, len(want))
	for i, f := range want {
		got[i] = r.i64("config." + f.name)
	}
	if r.err != nil {
		return spec.KVEvConfig{}
	}
	for i, f := range want {
		if f.name == "max_engines_per_stream" && f.value == 0 {
			if got[i] < 1 || got[i] > want[0].value {
				r.fail("config."+f.name, got[i], fmt.Sprintf("in [1, %d], max_engines", want[0].value))
			}
			continue
		}
		if got[i] != f.value {
			r.fail("config."+f.name, got[i], fmt.Sprintf("%d, the restoring index's", f.value))
		}
	}
	out := cfg.WithDefaults()
	out.MaxEnginesPerStream = int(got[1])
	return out
}

// readSnapStreams reads the streams: at most max_engines / share of them,
// so that streams × share <= max_engines (A5).
func readSnapStreams(r *snapReader, cfg spec.KVEvConfig) []spec.KVEvSnapshotStream {
	most := cfg.MaxEngines / cfg.MaxEnginesPerStream
	n := r.length("streams", snapStreamMin, int64(most),
		fmt.Sprintf("at most %d = max_engines %d / share %d", most, cfg.MaxEngines, cfg.MaxEnginesPerStream))
	out := make([]spec.KVEvSnapshotStream, 0, n)
	seen := make(map[string]bool, n)
	for i := 0; i < n && r.err == nil; i++ {
		s := readSnapStream(r, cfg, spec.Idx("streams", i))
		if r.err == nil && seen[s.Config.Name] {
			r.fail(spec.Idx("streams", i)+".name", s.Config.Name, "a non-empty name no other stream has")
		}
		seen[s.Config.Name] = true
		out = append(out, s)
	}
	return out
}

func readSnapStream(r *snapReader, cfg spec.KVEvConfig, at string) spec.KVEvSnapshotStream {
	var s spec.KVEvSnapshotStream
	st := &s.State
	s.Config.Name = r.str(at + ".name")
	s.Config.Rank = r.i64(at + ".rank")
	s.Config.Replay = r.flag(at + ".replay")
	s.Config.Snapshot = r.flag(at + ".snapshot")
	if pid := r.bytes(at + ".publisher_id"); len(pid) > 0 {
		st.PublisherID = pid
	}
	st.Name = s.Config.Name
	st.Known = r.flag(at + ".known")
	st.Next = r.u64(at + ".next")
	s.PastEnd = r.flag(at + ".past_end")
	st.LastLive = r.u64(at + ".last_live")
	st.Replaying = r.flag(at + ".replaying")
	st.Snapshotting = r.flag(at + ".snapshotting")
	st.Resync = r.flag(at + ".resync")
	st.ReplayTarget = r.u64(at + ".replay_target")
	staleSet := r.flag(at + ".stale_set")
	staleSince := r.u64(at + ".stale_since")
	if staleSet {
		st.StaleSince = &staleSince
	}
	for _, v := range streamCounterList(&st.Counters) {
		*v = r.u64(at + ".counters")
	}
	n := r.length(at+".held", snapHeldMin, int64(cfg.MaxHeld), fmt.Sprintf("at most %d (max_held)", cfg.MaxHeld))
	for i := 0; i < n && r.err == nil; i++ {
		f := spec.Idx(at+".held", i)
		s.Held = append(s.Held, [][]byte{r.bytes(f + ".topic"), r.bytes(f + ".seq"), r.bytes(f + ".payload")})
	}
	st.Held = len(s.Held)
	if r.err == nil {
		checkSnapStream(r, s, staleSet, staleSince, at)
	}
	return s
}

// checkSnapStream refuses a cursor no stream can be in (A7, A9).
func checkSnapStream(r *snapReader, s spec.KVEvSnapshotStream, staleSet bool, staleSince uint64, at string) {
	st := s.State
	waiting := st.Replaying || st.Snapshotting
	switch {
	case s.Config.Name == "":
		r.fail(at+".name", "", "a non-empty name no other stream has")
	case s.Config.Rank < 0:
		r.fail(at+".rank", s.Config.Rank, ">= 0")
	case !staleSet && staleSince != 0:
		r.fail(at+".stale_since", staleSince, "0 when stale_set is 0")
	case s.PastEnd && st.Next != math.MaxUint64:
		r.fail(at+".next", st.Next, "2^64-1 when past_end is 1")
	case st.Replaying && !s.Config.Replay:
		r.fail(at+".replaying", 1, "0 for a stream without a replay endpoint")
	case !s.Config.Snapshot && (st.Snapshotting || st.Resync || len(st.PublisherID) > 0):
		r.fail(at+".snapshot", 0, "1 for a stream that records a publisher id, resyncs or waits for a snapshot (A13)")
	case st.Replaying && st.Snapshotting:
		r.fail(at+".snapshotting", 1, "0 while replaying (A13)")
	case st.Resync && (!st.Known || waiting):
		r.fail(at+".resync", 1, "0 while the cursor is unknown or a reply is outstanding (A13)")
	case !waiting && (st.ReplayTarget != 0 || len(s.Held) != 0):
		r.fail(at+".held", len(s.Held), "0, and replay_target 0, while neither replaying nor snapshotting")
	case waiting && len(s.Held) == 0:
		r.fail(at+".held", 0, "at least 1 while replaying or snapshotting: the triggering message")
	}
	for i, m := range s.Held {
		if len(m[1]) != 8 {
			r.fail(spec.Idx(at+".held", i)+".seq", len(m[1]), "8 bytes")
		}
	}
	if r.err == nil && waiting && binary.BigEndian.Uint64(s.Held[0][1]) != st.ReplayTarget {
		r.fail(at+".held[0].seq", binary.BigEndian.Uint64(s.Held[0][1]), fmt.Sprintf("%d, the replay target", st.ReplayTarget))
	}
}

// readSnapEngines reads the engines, strictly ascending by (source,
// dp_rank), each fed by a stream of the snapshot within its share, and
// hands each to emit once its checks pass.
func readSnapEngines(r *snapReader, cfg spec.KVEvConfig, streams []spec.KVEvSnapshotStream, emit func(spec.KVEvEngineState)) {
	n := r.length("engines", snapEngineMin, int64(cfg.MaxEngines), fmt.Sprintf("at most %d (max_engines)", cfg.MaxEngines))
	fed := make(map[string]int, len(streams))
	for _, s := range streams {
		fed[s.Config.Name] = 0
	}
	var prev spec.KVEvEngineKey
	for i := 0; i < n && r.err == nil; i++ {
		at := spec.Idx("engines", i)
		e := readSnapEngine(r, cfg, at)
		if r.err != nil {
			break
		}
		key := spec.KVEvEngineKey{Source: e.Source, DPRank: e.DPRank}
		count, ok := fed[e.Stream]
		switch {
		case i > 0 && compareEngineKeys(prev, key) >= 0:
			r.fail(at, fmt.Sprintf("%s/%d", e.Source, e.DPRank), "an engine after the one before in (source, dp_rank) order")
		case e.Source == "" || e.DPRank < 0:
			r.fail(at, fmt.Sprintf("%s/%d", e.Source, e.DPRank), "a non-empty source and a dp_rank >= 0")
		case !ok:
			r.fail(at+".stream", e.Stream, "a stream of the snapshot")
		case count >= cfg.MaxEnginesPerStream:
			r.fail(at+".stream", e.Stream, fmt.Sprintf("a stream feeding at most %d engines (max_engines_per_stream)", cfg.MaxEnginesPerStream))
		}
		fed[e.Stream] = count + 1
		prev = key
		if r.err == nil {
			emit(e)
		}
	}
}

func readSnapEngine(r *snapReader, cfg spec.KVEvConfig, at string) spec.KVEvEngineState {
	var e spec.KVEvEngineState
	e.Source = r.str(at + ".source")
	e.DPRank = r.i64(at + ".dp_rank")
	e.Stream = r.str(at + ".stream")
	e.Model = r.str(at + ".model")
	e.Stale = r.flag(at + ".stale")
	e.StaleSince = r.u64(at + ".stale_since")
	for _, v := range engineCounterList(&e.Counters) {
		*v = r.u64(at + ".counters")
	}
	n := r.length(at+".pools", snapPoolMin+snapPageMin, -1, "")
	e.Pools = make([]spec.KVEvPoolState, 0, n)
	for j := 0; j < n && r.err == nil; j++ {
		pat := spec.Idx(at+".pools", j)
		p := readSnapPool(r, cfg.MaxTokensPerEngine-e.Tokens, pat)
		if r.err == nil && j > 0 && comparePoolStates(e.Pools[j-1], p) >= 0 {
			r.fail(pat, fmt.Sprintf("%d/%s", p.Group, p.Tier), "a pool after the one before in (group, tier) order")
		}
		e.Tokens += int64(len(p.Pages)) * p.PageSize // bounded by readSnapPool
		e.Pools = append(e.Pools, p)
	}
	return e
}

func comparePoolStates(a, b spec.KVEvPoolState) int {
	return cmp.Or(cmp.Compare(a.Group, b.Group), strings.Compare(a.Tier, b.Tier))
}

// readSnapPool reads one pool whose pages may hold at most budget tokens
// (what is left of the engine's max_tokens_per_engine).
func readSnapPool(r *snapReader, budget int64, at string) spec.KVEvPoolState {
	p := spec.KVEvPoolState{Group: r.i64(at + ".group"), Tier: r.str(at + ".tier"), PageSize: r.i64(at + ".page_size")}
	if r.err == nil && (p.PageSize < 1 || p.PageSize > budget) {
		r.fail(at+".page_size", p.PageSize, fmt.Sprintf("in [1, %d], the engine's tokens left under max_tokens_per_engine", budget))
	}
	if r.err != nil {
		return p
	}
	most := budget / p.PageSize
	n := r.length(at+".pages", snapPageMin, most, fmt.Sprintf("at most %d pages of %d tokens, the engine's tokens left under max_tokens_per_engine", most, p.PageSize))
	if r.err == nil && n == 0 {
		r.fail(at+".pages", 0, "at least 1: a pool exists while it has a page (A5)")
	}
	p.Pages = make([]spec.KVEvPageState, 0, n)
	pages := at + ".pages"
	for k := 0; k < n && r.err == nil; k++ {
		p.Pages = append(p.Pages, readSnapPage(r, p.PageSize, snapAt{base: pages, k: k, i: -1}))
	}
	if r.err == nil {
		checkSnapPool(r, p, at)
	}
	return p
}

// readSnapPage reads the page at (its path, built only for an error).
func readSnapPage(r *snapReader, pageSize int64, at snapAt) spec.KVEvPageState {
	var pg spec.KVEvPageState
	depth := r.u64At(at.with(".depth"))
	pg.Depth = int(min(depth, math.MaxInt32)) // checked against its parent's in checkSnapPool
	pg.Namespace = string(r.bytesAt(at.with(".namespace")))
	pageSizeText := func() string { return fmt.Sprintf("%d, the pool's page_size", pageSize) }
	n := r.lengthAt(at.with(".tokens"), snapTokenBytes, pageSize, pageSizeText)
	if r.err == nil && int64(n) != pageSize {
		r.failAt(at.with(".tokens"), n, pageSizeText())
	}
	if r.err != nil {
		return pg
	}
	// lengthAt checked that the n tokens' bytes are there.
	raw := r.takeAt(at.with(".tokens"), n*snapTokenBytes)
	pg.Tokens = make([]uint32, n)
	for i := range pg.Tokens {
		pg.Tokens[i] = binary.LittleEndian.Uint32(raw[i*snapTokenBytes:])
	}
	nb := r.lengthAt(at.with(".bindings"), snapBindingMin, -1, nil)
	if nb > 0 {
		pg.Bindings = make([]spec.KVEvBinding, 0, nb)
	}
	bat := at
	bat.sub = ".bindings"
	for i := 0; i < nb && r.err == nil; i++ {
		bat.i = i
		b := spec.KVEvBinding{Hash: spec.EvHash(r.u64At(bat.with(".hash"))), Count: r.i64At(bat.with(".count"))}
		switch {
		case r.err != nil:
		case b.Count < 0:
			r.failAt(bat.with(".count"), b.Count, ">= 0")
		case i > 0 && b.Hash <= pg.Bindings[i-1].Hash:
			r.failAt(bat.with(".hash"), fmt.Sprintf("%016x", uint64(b.Hash)), "a hash above the binding before's")
		}
		pg.Resident = satAddI64(pg.Resident, b.Count)
		pg.Bindings = append(pg.Bindings, b)
	}
	return pg
}

// checkSnapPool refuses pages no pool can hold: a depth past its
// parent's plus one (a page whose parent is missing), siblings out of A8's
// order (or twice), a hash bound to two pages, two pages with one prefix
// hash (A4), and a hole with no resident descendant (pruning, §2.4).
func checkSnapPool(r *snapReader, p spec.KVEvPoolState, at string) {
	parents := make([]int, len(p.Pages))
	var path []int // path[d]: the last page seen at depth d
	bound := make(map[spec.EvHash]bool)
	prefixes := make(map[spec.PrefixHash]bool, len(p.Pages))
	chains := make([]spec.PrefixHash, len(p.Pages))
	pages := at + ".pages"
	for k, pg := range p.Pages {
		pat := snapAt{base: pages, k: k, i: -1}
		if pg.Depth > len(path) {
			r.failAt(pat.with(".depth"), pg.Depth, fmt.Sprintf("at most %d: a page's parent comes before it", len(path)))
			return
		}
		if pg.Depth < len(path) && compareSnapPages(p.Pages[path[pg.Depth]], pg) >= 0 {
			r.failAt(pat, pg.Namespace, "a page after its previous sibling in (namespace, tokens) order")
			return
		}
		path = append(path[:pg.Depth], k)
		parents[k] = -1
		if pg.Depth > 0 {
			parents[k] = path[pg.Depth-1]
		}
		chains[k] = snapPrefixHash(p.Pages, chains, parents[k], pg)
		if prefixes[chains[k]] {
			r.failAt(pat, fmt.Sprintf("%016x", uint64(chains[k])), "a prefix hash no other page of the pool has (A4)")
			return
		}
		prefixes[chains[k]] = true
		for _, b := range pg.Bindings {
			if bound[b.Hash] {
				r.failAt(pat.with(".bindings"), fmt.Sprintf("%016x", uint64(b.Hash)), "a hash bound to no other page of the pool (A4)")
				return
			}
			bound[b.Hash] = true
		}
	}
	checkSnapHoles(r, p, parents, at)
}

// compareSnapPages orders siblings by (namespace bytewise, tokens by value) (A8).
func compareSnapPages(a, b spec.KVEvPageState) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), slices.Compare(a.Tokens, b.Tokens))
}

// snapPrefixHash is A4's prefix hash of page pg (as amended by A14), one
// step from its parent's, chains[q] (q < 0: the root).
func snapPrefixHash(pages []spec.KVEvPageState, chains []spec.PrefixHash, q int, pg spec.KVEvPageState) spec.PrefixHash {
	var base spec.PrefixHash
	switch {
	case q < 0:
		base = kvevSeed(pg.Namespace)
	case pages[q].Namespace == pg.Namespace:
		base = chains[q]
	default:
		base = kvevSwitch(kvevSeed(pg.Namespace), chains[q])
	}
	return kvevNext(base, pg.Tokens)
}

// checkSnapHoles refuses a hole none of whose descendants is resident:
// pruning (§2.4) deletes it after every event.
func checkSnapHoles(r *snapReader, p spec.KVEvPoolState, parents []int, at string) {
	live := make([]bool, len(p.Pages))
	for k := len(p.Pages) - 1; k >= 0; k-- {
		if p.Pages[k].Resident > 0 {
			live[k] = true
		}
		if live[k] && parents[k] >= 0 {
			live[parents[k]] = true
		}
	}
	for k, ok := range live {
		if !ok {
			r.fail(spec.Idx(at+".pages", k), "a hole without a resident descendant", "a resident page, or a hole above one (pruning, §2.4)")
			return
		}
	}
}

// fillSnapStreamEngines sets each stream's Engines, derived from the
// engines' streams, sorted like the engines.
func fillSnapStreamEngines(c *spec.KVEvSnapshotContent) {
	at := make(map[string]int, len(c.Streams))
	for i := range c.Streams {
		at[c.Streams[i].Config.Name] = i
		c.Streams[i].State.Engines = []spec.KVEvEngineKey{}
	}
	for _, e := range c.Engines {
		st := &c.Streams[at[e.Stream]].State
		st.Engines = append(st.Engines, spec.KVEvEngineKey{Source: e.Source, DPRank: e.DPRank})
	}
}
