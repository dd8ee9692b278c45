package ref

import (
	"fmt"
	"io"

	"github.com/kvtwin/kvtwin/spec"
)

// The reference twin of kvev.snapshot (docs/spec/kv-events.md §2.10
// A12): the index's state as a spec.KVEvSnapshotContent, written by
// EncodeKVEvSnapshot, and a restore that builds the plain index from a
// decoded snapshot page by page.

var (
	_ spec.KVEvSnapshotter = (*refKVEvIndex)(nil)
	_ spec.KVEvFreezer     = (*refKVEvIndex)(nil)
)

// Snapshot implements spec.KVEvSnapshotter (§2.10 A12): the index's
// state, held messages included, tagged with covers.
func (ix *refKVEvIndex) Snapshot(covers uint64) ([]byte, error) {
	f, err := ix.Freeze(covers)
	if err != nil {
		return nil, err
	}
	return f.Encode()
}

// Freeze implements spec.KVEvFreezer (§2.10 A12) plainly: the state is
// copied as a spec.KVEvSnapshotContent under the index's lock (pages and
// tokens cloned; held frames are copies the index never writes again).
func (ix *refKVEvIndex) Freeze(covers uint64) (spec.KVEvFrozen, error) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	c := spec.KVEvSnapshotContent{Covers: covers, Config: ix.cfg}
	for _, st := range ix.streams {
		s := spec.KVEvSnapshotStream{Config: st.cfg, State: ix.streamState(st), PastEnd: st.pastEnd}
		for _, m := range st.held {
			s.Held = append(s.Held, m.frames)
		}
		c.Streams = append(c.Streams, s)
	}
	for _, e := range ix.sortedEngines() {
		c.Engines = append(c.Engines, snapEngineState(e))
	}
	return refKVEvFrozen{c}, nil
}

// refKVEvFrozen is the reference index's frozen state: the content
// EncodeKVEvSnapshot writes. It is never written after Freeze.
type refKVEvFrozen struct{ c spec.KVEvSnapshotContent }

// Covers implements spec.KVEvFrozen.
func (f refKVEvFrozen) Covers() uint64 { return f.c.Covers }

// Encode implements spec.KVEvFrozen: A12's bytes of the content.
func (f refKVEvFrozen) Encode() ([]byte, error) { return EncodeKVEvSnapshot(f.c), nil }

// WriteTo implements spec.KVEvFrozen: Encode's bytes written to w.
func (f refKVEvFrozen) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(EncodeKVEvSnapshot(f.c))
	return int64(n), err
}

// RestoreKVEvIndex builds the reference index a snapshot encodes, under
// cfg (§2.10 A12), and returns it with the stream sequence the snapshot
// covers. The snapshot's streams are the index's streams; its config must
// be cfg's after defaults (its engine share is kept unless cfg sets one).
// A snapshot DecodeKVEvSnapshot refuses is refused with its error.
func RestoreKVEvIndex(cfg spec.KVEvConfig, snapshot []byte) (spec.KVEvIndex, uint64, error) {
	c, err := DecodeKVEvSnapshot(cfg, snapshot)
	if err != nil {
		return nil, 0, err
	}
	ix := &refKVEvIndex{
		cfg:     c.Config,
		byName:  map[string]*kvevStream{},
		engines: map[spec.KVEvEngineKey]*kvevEngine{},
		seed:    kvevSeed,
		next:    kvevNext,
	}
	for _, s := range c.Streams {
		st := restoreStream(s)
		ix.streams = append(ix.streams, st)
		ix.byName[st.cfg.Name] = st
	}
	for _, es := range c.Engines {
		e := ix.restoreEngine(es)
		ix.engines[e.key] = e
	}
	return ix, c.Covers, nil
}

// restoreStream is the cursor s describes; the replay target's topic is
// the triggering message's, held first (A7).
func restoreStream(s spec.KVEvSnapshotStream) *kvevStream {
	st := &kvevStream{
		cfg: s.Config, known: s.State.Known, next: s.State.Next, pastEnd: s.PastEnd,
		lastLive: s.State.LastLive, replaying: s.State.Replaying, target: s.State.ReplayTarget,
		counters: s.State.Counters, snapshotting: s.State.Snapshotting, resync: s.State.Resync,
	}
	if len(s.State.PublisherID) > 0 {
		st.pid = s.State.PublisherID
	}
	if s.State.StaleSince != nil {
		st.staleSince = new(*s.State.StaleSince)
	}
	q := make([]kvevLiveMsg, 0, len(s.Held))
	for _, m := range s.Held {
		q = append(q, kvevLiveMsg{frames: m, seq: beSeq(m[1])})
	}
	st.setHeld(q)
	if st.replaying || st.snapshotting {
		st.targetTopic = q[0].topic()
	}
	return st
}

// beSeq reads an 8-byte big-endian seq frame.
func beSeq(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

// restoreEngine builds an engine and its pools; each page goes under the
// last page one level up (A8's pre-order), with its prefix hash computed
// from its path as a store computes it.
func (ix *refKVEvIndex) restoreEngine(es spec.KVEvEngineState) *kvevEngine {
	e := &kvevEngine{
		key:    spec.KVEvEngineKey{Source: es.Source, DPRank: es.DPRank},
		stream: es.Stream, model: es.Model, stale: es.Stale, staleSince: es.StaleSince,
		counters: es.Counters, pools: map[kvevPoolKey]*kvevPool{},
	}
	for _, ps := range es.Pools {
		pool := newKVEvPool(ps.PageSize)
		path := []*kvevPage{pool.root}
		for _, pg := range ps.Pages {
			parent := path[pg.Depth]
			k := kvevPageKey{ns: pg.Namespace, tokens: pg.Tokens}
			p := newKVEvPage(parent, k, ix.childPrefix(parent, k))
			parent.children[childKeyOf(k)] = p
			for _, b := range pg.Bindings {
				p.bindings[b.Hash] = b.Count
				pool.byHash[b.Hash] = p
			}
			pool.byPrefix[p.prefix] = p
			path = append(path[:pg.Depth+1], p)
		}
		e.pools[kvevPoolKey{group: ps.Group, tier: ps.Tier}] = pool
	}
	return e
}

// RunKVEvSnapshot runs a kvev.apply script on an index newIndex builds,
// snapshots it, restores the snapshot with restore and reports the
// restored state. Both twins call it with their own index and restore.
func RunKVEvSnapshot(lim spec.Limits, in spec.KVEvSnapshotInput, newIndex spec.NewKVEvIndexFunc, restore spec.RestoreKVEvIndexFunc) (spec.KVEvSnapshotOutput, error) {
	var ix spec.KVEvIndex
	build := func(cfg spec.KVEvConfig, streams []spec.KVEvStream) (spec.KVEvIndex, error) {
		x, err := newIndex(cfg, streams)
		ix = x
		return x, err
	}
	if _, err := RunKVEvApply(lim, spec.KVEvApplyInput{Config: in.Config, Streams: in.Streams, Steps: in.Steps}, build); err != nil {
		return spec.KVEvSnapshotOutput{}, err
	}
	sn, ok := ix.(spec.KVEvSnapshotter)
	if !ok {
		return spec.KVEvSnapshotOutput{}, fmt.Errorf("kvev.snapshot: index %T writes no snapshot", ix)
	}
	b, err := sn.Snapshot(in.Covers)
	if err != nil {
		return spec.KVEvSnapshotOutput{}, err
	}
	if err := lim.CheckOutput("steps", int64(len(b)), 2); err != nil {
		return spec.KVEvSnapshotOutput{}, err
	}
	rx, covers, err := restore(in.Config, b)
	if err != nil {
		return spec.KVEvSnapshotOutput{}, err
	}
	return spec.KVEvSnapshotOutput{Snapshot: b, Covers: covers, State: rx.State()}, nil
}

// KVEvSnapshot is the reference twin of kvev.snapshot (§2.10 A12): the
// script's final reference index, snapshotted and restored.
func KVEvSnapshot(lim spec.Limits, in spec.KVEvSnapshotInput) (spec.KVEvSnapshotOutput, error) {
	return RunKVEvSnapshot(lim, in, NewKVEvIndex, RestoreKVEvIndex)
}
