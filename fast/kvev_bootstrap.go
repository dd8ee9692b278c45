package fast

import (
	"bytes"
	"encoding/binary"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// vLLM's snapshot bootstrap in the fast index (docs/spec/kv-events.md
// §3.5, §2.10 A13): publisher ids, the snapshot request a gap that replay
// cannot fill gets, the reply that replaces the stream's engines, and the
// held live tail applied after it.

// kvSnapshotRequest is the single frame "snapshot" (§3.5).
func kvSnapshotRequest() []spec.HexBytes {
	return []spec.HexBytes{[]byte(spec.KVSnapshotRequestFrame)}
}

// publisherID is batch field 3 of a live payload on a snapshot stream
// when the payload decodes and carries a non-empty one (A13), else nil.
// The result may alias the payload or the stream's decode scratch: the
// caller compares it or copies it before the next decode.
func (ix *kvIndex) publisherID(st *kvStream, payload []byte) []byte {
	if !st.snapshot {
		return nil
	}
	b, err := decodeKVBatchScratch(payload, ix.f, ix.cfg.DecodeLimits(), &st.dec)
	if err != nil || len(b.PublisherID) == 0 {
		return nil
	}
	return b.PublisherID
}

// holdForSnapshot makes the live message at s the trigger of a snapshot
// request (A13): [next, s) is lost now, the message held, the request
// answered.
func (ix *kvIndex) holdForSnapshot(st *kvStream, s uint64, frames [][]byte, held bool, r *spec.KVEvStepResult) {
	if !st.below(s) && s > st.next {
		ix.lose(st, st.next, s, r)
	}
	m := kvHeld{frames: frames}
	if !held {
		m = kvHoldCopy(frames)
	}
	st.setHeld(append(st.held[:0], m))
	st.snapshotting, st.target = true, s
	r.SnapshotRequest = kvSnapshotRequest()
}

// SnapshotReply handles the reply on the stream's snapshot socket (A13).
func (ix *kvIndex) SnapshotReply(name string, frames [][]byte) spec.KVEvStepResult {
	st, bad := ix.lockStream(name, spec.KVStepSnapshotReply)
	if bad != nil {
		return *bad
	}
	defer st.mu.Unlock()
	r := spec.KVEvStepResult{Op: spec.KVStepSnapshotReply}
	ix.snapshotReply(st, frames, &r)
	r.Held = len(st.held)
	return r
}

func (ix *kvIndex) snapshotReply(st *kvStream, frames [][]byte, r *spec.KVEvStepResult) {
	rep, err := ref.CheckKVSnapshotReply(st.snapshotting, frames, ix.cfg)
	if err != nil {
		r.Error = new(spec.ErrorObjectOf(err))
		return
	}
	if rep.Seq < -1 {
		st.c.SnapshotsFailed++
		ix.endSnapshot(st, false, r)
		return
	}
	lim := ix.cfg.DecodeLimits()
	for k, c := range rep.Chunks {
		if _, err := decodeKVBatchScratch(c, ix.f, lim, &st.dec); err != nil {
			r.Errors = append(r.Errors, spec.KVEvEventError{Seq: uint64(max(rep.Seq, 0)), Event: -1, Error: spec.ErrorObjectOf(ref.KVSnapshotChunkError(k, err))})
			st.c.SnapshotsFailed++
			ix.endSnapshot(st, false, r)
			return
		}
	}
	ix.dropEngines(st)
	if st.pid != nil && !bytes.Equal(st.pid, rep.PublisherID) {
		st.c.Restarts++
		r.Restart = true
	}
	st.pid = bytes.Clone(rep.PublisherID)
	st.staleSet, st.staleSince = false, 0
	st.known, st.next, st.pastEnd = true, uint64(rep.Seq+1), false
	if ix.f.SnapshotSeqAppliedAgain && rep.Seq >= 0 {
		st.next = uint64(rep.Seq) // the bug zoo's plant: the covered seq again
	}
	topic := st.held[0].frames[0]
	seq := uint64(rep.Seq)
	for _, c := range rep.Chunks {
		batch, _ := decodeKVBatchScratch(c, ix.f, lim, &st.dec)
		key, model := st.engineKeyOf(topic, batch.DPRank)
		e, err := ix.engineFor(st, key, model)
		if err != nil {
			ix.refuseEngine(st, seq, key, err, r)
			continue
		}
		e.mu.Lock()
		ix.applyEvents(e, st, seq, batch.Events, r)
		e.mu.Unlock()
	}
	st.c.SnapshotsOK++
	r.SnapshotDone = true
	ix.endSnapshot(st, true, r)
}

// SnapshotFailed ends the outstanding snapshot request without a reply (A13).
func (ix *kvIndex) SnapshotFailed(name string, reason string) spec.KVEvStepResult {
	st, bad := ix.lockStream(name, spec.KVStepSnapshotFailed)
	if bad != nil {
		return *bad
	}
	defer st.mu.Unlock()
	r := spec.KVEvStepResult{Op: spec.KVStepSnapshotFailed}
	var err error
	switch {
	case reason != spec.ReplayReasonTimeout && reason != spec.ReplayReasonProtocol && reason != spec.ReplayReasonUnavailable:
		err = spec.Reject(spec.ErrBadEnum, "reason", reason, "one of timeout, protocol, unavailable")
	case !st.snapshotting:
		err = ref.KVSnapshotNotOutstandingError("reason", reason)
	}
	if err != nil {
		r.Error = new(spec.ErrorObjectOf(err))
	} else {
		st.c.SnapshotsFailed++
		ix.endSnapshot(st, false, &r)
	}
	r.Held = len(st.held)
	return r
}

// HeartbeatLost notes that the stream's live socket was silent past the
// heartbeat bound (A13): a snapshot stream with a known cursor and no
// reply outstanding asks for a snapshot at its next live message.
func (ix *kvIndex) HeartbeatLost(name string) spec.KVEvStepResult {
	st, bad := ix.lockStream(name, spec.KVStepHeartbeatLost)
	if bad != nil {
		return *bad
	}
	defer st.mu.Unlock()
	if st.snapshot && st.known && !st.replaying && !st.snapshotting {
		st.resync = true
	}
	return spec.KVEvStepResult{Op: spec.KVStepHeartbeatLost, Held: len(st.held)}
}

// endSnapshot closes the outstanding snapshot request and drains the
// hold queue; after an installed snapshot (installed) a held message of
// another publisher id is dropped (A13).
func (ix *kvIndex) endSnapshot(st *kvStream, installed bool, r *spec.KVEvStepResult) {
	q := st.held
	st.snapshotting, st.target = false, 0
	st.setHeld(nil)
	ix.drain(st, q, installed, r)
}

// drain runs the held messages q in arrival order (A7, A13): the trigger
// through the next comparison only, the others through the live rules,
// until one starts another replay or snapshot request (the rest stay
// held); filter drops those another publisher id sent.
func (ix *kvIndex) drain(st *kvStream, q []kvHeld, filter bool, r *spec.KVEvStepResult) {
	for i, m := range q {
		if filter && st.pid != nil {
			if p := ix.publisherID(st, m.frames[2]); p != nil && !bytes.Equal(p, st.pid) {
				st.c.OtherPublisher++
				continue
			}
		}
		if i == 0 {
			ix.advance(st, binary.BigEndian.Uint64(m.frames[1]), m.frames, true, r)
		} else {
			ix.liveRules(st, m.frames, true, r)
		}
		if st.replaying || st.snapshotting {
			// m revealed another gap and is held first; the rest stay held.
			st.setHeld(append(st.held, q[i+1:]...))
			return
		}
	}
}
