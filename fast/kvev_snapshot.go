package fast

import (
	"bytes"
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// The fast twin of kvev.snapshot (docs/spec/kv-events.md §2.10 A12). The
// bytes are written by fast's own encoder (kvev_snapshot_encode.go) from
// a frozen copy of the pools, so that an encoder bug is not shared with
// ref and the differential suite sees it; they are read by ref's decoder
// (DecodeKVEvSnapshot: one set of refusals), and what is the fast index's
// own on restore is how a decoded snapshot is built back into the slot
// arrays, slot by slot, without replaying any event.

var (
	_ spec.KVEvSnapshotter = (*kvIndex)(nil)
	_ spec.KVEvFreezer     = (*kvIndex)(nil)
)

// Snapshot implements spec.KVEvSnapshotter (§2.10 A12): Freeze, then
// Encode. The caller (a replica pausing its consumer at sequence covers)
// makes no other call meanwhile only so that covers is exact.
func (ix *kvIndex) Snapshot(covers uint64) ([]byte, error) {
	fz, err := ix.Freeze(covers)
	if err != nil {
		return nil, err
	}
	return fz.Encode()
}

// Freeze implements spec.KVEvFreezer (§2.10 A12). It holds every stream
// like State, so it sees one consistent state, and copies what the
// encoding needs: each stream's cursor and counters, each engine's flags
// and counters, and each pool's pointer-free arrays whole (kvPool.frozen),
// with no per-page work; the slow part, the canonical walk, runs later
// in Encode, without a lock.
func (ix *kvIndex) Freeze(covers uint64) (spec.KVEvFrozen, error) {
	streams, release := ix.holdAll()
	defer release()
	fz := &kvFrozen{covers: covers, cfg: ix.cfg, f: ix.f, streams: make([]kvFrozenStream, 0, len(streams))}
	for _, st := range streams {
		fz.streams = append(fz.streams, st.frozen())
	}
	engines := *ix.sorted.Load()
	fz.engines = make([]kvFrozenEngine, 0, len(engines))
	for _, e := range engines {
		e.mu.RLock()
		fz.engines = append(fz.engines, e.frozen())
		e.mu.RUnlock()
	}
	return fz, nil
}

// RestoreKVEvIndex builds the production index a snapshot encodes, under
// cfg (§2.10 A12), with the sequence the snapshot covers; the contract is
// ref.RestoreKVEvIndex's, and so are the refusals.
func RestoreKVEvIndex(cfg spec.KVEvConfig, snapshot []byte) (spec.KVEvIndex, uint64, error) {
	var ix *kvIndex
	var set *kvStreamSet
	var covers uint64
	var buildErr error
	head := func(c spec.KVEvSnapshotContent) {
		streams := make([]spec.KVEvStream, len(c.Streams))
		for i, s := range c.Streams {
			streams[i] = s.Config
		}
		if ix, buildErr = newKVIndex(c.Config, streams, fault.KVEv{}); buildErr != nil {
			return // unreachable: the decoder checked the config and streams
		}
		set, covers = ix.streams.Load(), c.Covers
		for _, s := range c.Streams {
			restoreKVStream(set.byName[s.Config.Name], s)
		}
	}
	// Each engine is built as soon as it is read and checked, so the
	// decoded pages of one engine at a time are alive, not the snapshot's.
	engine := func(es spec.KVEvEngineState) {
		if buildErr != nil {
			return
		}
		st := set.byName[es.Stream]
		e := ix.restoreEngine(es, st)
		ix.engines[e.key] = e
		st.engines[e.key] = e
	}
	if err := ref.DecodeKVEvSnapshotEach(cfg, snapshot, head, engine); err != nil {
		return nil, 0, err
	}
	if buildErr != nil {
		return nil, 0, buildErr
	}
	ix.publish()
	return ix, covers, nil
}

// restoreKVStream sets st's cursor, counters and hold queue from s.
func restoreKVStream(st *kvStream, s spec.KVEvSnapshotStream) {
	st.known, st.next, st.pastEnd, st.lastLive = s.State.Known, s.State.Next, s.PastEnd, s.State.LastLive
	st.replaying, st.target, st.c = s.State.Replaying, s.State.ReplayTarget, s.State.Counters
	st.snapshotting, st.resync, st.pid = s.State.Snapshotting, s.State.Resync, bytes.Clone(s.State.PublisherID)
	if s.State.StaleSince != nil {
		st.staleSet, st.staleSince = true, *s.State.StaleSince
	}
	q := make([]kvHeld, 0, len(s.Held))
	for _, m := range s.Held {
		q = append(q, kvHoldCopy(m))
	}
	st.setHeld(q)
}

// restoreEngine builds an engine's pools from their pre-order pages: each
// page is attached under the last slot one level up, its prefix hash
// chained as a store chains it, its bindings entered in byHash.
func (ix *kvIndex) restoreEngine(es spec.KVEvEngineState, st *kvStream) *kvEngine {
	e := &kvEngine{
		key:    spec.KVEvEngineKey{Source: es.Source, DPRank: es.DPRank},
		stream: st, model: es.Model, stale: es.Stale, staleSince: es.StaleSince,
		c: es.Counters, pools: make(map[kvPoolKey]*kvPool, len(es.Pools)),
	}
	var h kvHasher
	for _, ps := range es.Pools {
		pl := newKVPool(ps.Group, ps.Tier, ps.PageSize)
		pl.faults = ix.f
		path := []int32{0}
		for _, pg := range ps.Pages {
			parent := path[pg.Depth]
			s := e.create(pl, parent, pg.Namespace, pg.Tokens, h.childPrefix(pl, parent, pg.Namespace, pg.Tokens))
			for _, b := range pg.Bindings {
				pl.addBinding(s, uint64(b.Hash))
				pl.binding(s, uint64(b.Hash)).count = b.Count
				pl.byHash.set(uint64(b.Hash), s)
			}
			pl.setResident(s, pg.Resident)
			path = append(path[:pg.Depth+1], s)
		}
		e.pools[kvPoolKey{group: ps.Group, tier: ps.Tier}] = pl
	}
	e.log = e.log[:0] // nothing to undo: the pages are the state
	return e
}

// KVEvSnapshot is the fast twin of kvev.snapshot (§2.10 A12): the shared
// script interpreter run on the fast index, snapshotted and restored.
func KVEvSnapshot(lim spec.Limits, in spec.KVEvSnapshotInput) (spec.KVEvSnapshotOutput, error) {
	return ref.RunKVEvSnapshot(lim, in, NewKVEvIndex, RestoreKVEvIndex)
}
