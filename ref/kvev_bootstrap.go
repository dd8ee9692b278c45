package ref

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/kvtwin/kvtwin/spec"
)

// vLLM's snapshot bootstrap in the reference index (docs/spec/kv-events.md
// §3.5, §2.10 A13): a stream with a snapshot endpoint records its
// publisher's id, answers a gap that replay cannot fill with a snapshot
// request, replaces its engines with what the reply's chunks build, and
// then applies the held live tail with contiguity.

// kvEvSnapshotRequest is the single frame a subscriber sends on its
// snapshot (REQ) socket (§3.5).
func kvEvSnapshotRequest() []spec.HexBytes {
	return []spec.HexBytes{spec.HexBytes(spec.KVSnapshotRequestFrame)}
}

// KVSnapshotReply is a snapshot reply whose layout passed A13's checks.
type KVSnapshotReply struct {
	// Seq is the last seq the snapshot covers; < -1 says unavailable.
	Seq int64
	// PublisherID is the publisher's 16-byte id.
	PublisherID []byte
	// Chunks are the batch payloads that build the publisher's blocks.
	Chunks [][]byte
}

// KVSnapshotNotOutstandingError: a snapshot reply, or a snapshot_failed,
// while the stream has no snapshot request outstanding (A13).
func KVSnapshotNotOutstandingError(field string, value any) error {
	return spec.Reject(spec.ErrSnapshotProtocol, field, value, "a snapshot request outstanding on the stream")
}

// CheckKVSnapshotReply checks a snapshot reply's layout and bounds (§3.5,
// §2.10 A13), in this order: a request outstanding; at least 2 frames; an
// 8-byte seq frame; a 16-byte publisher id; at most max_held chunks; at
// most max_held_bytes bytes in all its frames together; no chunk with seq
// -1 (a publisher that published nothing has no blocks). Each failure is
// ErrSnapshotProtocol naming the frame. Both twins call it, so a refusal's
// words are the same.
func CheckKVSnapshotReply(outstanding bool, frames [][]byte, cfg spec.KVEvConfig) (KVSnapshotReply, error) {
	if !outstanding {
		return KVSnapshotReply{}, KVSnapshotNotOutstandingError("frames", len(frames))
	}
	if len(frames) < 2 {
		return KVSnapshotReply{}, spec.Reject(spec.ErrSnapshotProtocol, "frames", len(frames), "at least 2 frames [seq, publisher_id, chunk…]")
	}
	if len(frames[0]) != 8 {
		return KVSnapshotReply{}, spec.Reject(spec.ErrSnapshotProtocol, "frames[0]", len(frames[0]), "8 bytes (the seq, signed big-endian)")
	}
	if len(frames[1]) != spec.KVPublisherIDBytes {
		return KVSnapshotReply{}, spec.Reject(spec.ErrSnapshotProtocol, "frames[1]", len(frames[1]), fmt.Sprintf("%d bytes (the publisher id)", spec.KVPublisherIDBytes))
	}
	if n := len(frames) - 2; n > cfg.MaxHeld {
		return KVSnapshotReply{}, spec.Reject(spec.ErrSnapshotProtocol, "frames", n, fmt.Sprintf("at most %d chunks (max_held)", cfg.MaxHeld))
	}
	var size int64
	for _, f := range frames {
		size += int64(len(f))
	}
	if size > cfg.MaxHeldBytes {
		return KVSnapshotReply{}, spec.Reject(spec.ErrSnapshotProtocol, "frames", size, fmt.Sprintf("at most %d bytes (max_held_bytes)", cfg.MaxHeldBytes))
	}
	seq := int64(binary.BigEndian.Uint64(frames[0]))
	if seq == -1 && len(frames) > 2 {
		return KVSnapshotReply{}, spec.Reject(spec.ErrSnapshotProtocol, "frames", len(frames)-2, "no chunk in a snapshot at seq -1")
	}
	return KVSnapshotReply{Seq: seq, PublisherID: frames[1], Chunks: frames[2:]}, nil
}

// KVSnapshotChunkError names chunk k's decoding error by its frame
// (frames[k+2]), keeping its sentinel, value and bound (A13).
func KVSnapshotChunkError(k int, err error) error {
	ie, ok := spec.AsInputError(err)
	if !ok {
		return err
	}
	return spec.Reject(ie.Err, spec.Idx("frames", k+2)+"."+ie.Field, ie.Value, ie.Bound)
}

// livePublisherID is the publisher id of a live message on a stream with
// a snapshot endpoint (A13): batch field 3 when the payload decodes and
// carries a non-empty one, nil otherwise (and always nil on other streams).
func (ix *refKVEvIndex) livePublisherID(st *kvevStream, m kvevLiveMsg) []byte {
	if !st.cfg.Snapshot {
		return nil
	}
	b, err := decodeKVBatchWithin(m.frames[2], ix.cfg.DecodeLimits())
	if err != nil || len(b.PublisherID) == 0 {
		return nil
	}
	return b.PublisherID
}

// requestSnapshot makes m the trigger of a snapshot request (A13): the
// gap [next, m.seq) is lost now (the engines are stale until a snapshot
// arrives), m is held, and the request is the step's answer.
func (ix *refKVEvIndex) requestSnapshot(st *kvevStream, r *spec.KVEvStepResult, m kvevLiveMsg) {
	if !st.below(m.seq) && m.seq > st.next {
		ix.lose(st, r, st.next, m.seq)
	}
	st.snapshotting, st.target, st.targetTopic = true, m.seq, m.topic()
	st.setHeld([]kvevLiveMsg{m})
	r.SnapshotRequest = kvEvSnapshotRequest()
}

// SnapshotReply implements spec.KVEvBootstrapper (§3.5, §2.10 A13).
func (ix *refKVEvIndex) SnapshotReply(stream string, frames [][]byte) (r spec.KVEvStepResult) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	r = spec.KVEvStepResult{Op: spec.KVStepSnapshotReply}
	st := ix.byName[stream]
	if st == nil {
		stepError(&r, KVUnknownStreamError(stream))
		return r
	}
	defer func() { r.Held = len(st.held) }()
	rep, err := CheckKVSnapshotReply(st.snapshotting, frames, ix.cfg)
	if err != nil {
		stepError(&r, err)
		return r
	}
	if rep.Seq < -1 {
		// Unavailable: the gap stays lost (§3.3).
		st.counters.SnapshotsFailed = satAddU64(st.counters.SnapshotsFailed, 1)
		ix.endSnapshot(st, &r, false)
		return r
	}
	// Every chunk must decode before anything changes (a private index,
	// §3.5); one that does not fails the snapshot.
	lim := ix.cfg.DecodeLimits()
	for k, c := range rep.Chunks {
		if _, err := decodeKVBatchWithin(c, lim); err != nil {
			r.Errors = append(r.Errors, spec.KVEvEventError{Seq: uint64(max(rep.Seq, 0)), Event: -1, Error: spec.ErrorObjectOf(KVSnapshotChunkError(k, err))})
			st.counters.SnapshotsFailed = satAddU64(st.counters.SnapshotsFailed, 1)
			ix.endSnapshot(st, &r, false)
			return r
		}
	}
	for k, e := range ix.engines {
		if e.stream == st.cfg.Name {
			delete(ix.engines, k)
		}
	}
	if st.pid != nil && !bytes.Equal(st.pid, rep.PublisherID) {
		st.counters.Restarts = satAddU64(st.counters.Restarts, 1)
		r.Restart = true
	}
	st.pid = slices.Clone(rep.PublisherID)
	st.staleSince = nil
	st.known, st.next, st.pastEnd = true, uint64(rep.Seq+1), false
	for _, c := range rep.Chunks {
		b, _ := decodeKVBatchWithin(c, lim)
		ix.applyDecoded(st, &r, uint64(rep.Seq), st.targetTopic, b)
	}
	st.counters.SnapshotsOK = satAddU64(st.counters.SnapshotsOK, 1)
	r.SnapshotDone = true
	ix.endSnapshot(st, &r, true)
	return r
}

// SnapshotFailed implements spec.KVEvBootstrapper (A13).
func (ix *refKVEvIndex) SnapshotFailed(stream string, reason string) (r spec.KVEvStepResult) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	r = spec.KVEvStepResult{Op: spec.KVStepSnapshotFailed}
	st := ix.byName[stream]
	if st == nil {
		stepError(&r, KVUnknownStreamError(stream))
		return r
	}
	defer func() { r.Held = len(st.held) }()
	if !validReplayReason(reason) {
		stepError(&r, spec.Reject(spec.ErrBadEnum, "reason", reason, "one of timeout, protocol, unavailable"))
		return r
	}
	if !st.snapshotting {
		stepError(&r, KVSnapshotNotOutstandingError("reason", reason))
		return r
	}
	st.counters.SnapshotsFailed = satAddU64(st.counters.SnapshotsFailed, 1)
	ix.endSnapshot(st, &r, false)
	return r
}

// HeartbeatLost implements spec.KVEvBootstrapper (A13): on a stream with
// a snapshot endpoint whose cursor is known and that waits for no reply,
// the next live message asks for a snapshot; otherwise nothing.
func (ix *refKVEvIndex) HeartbeatLost(stream string) (r spec.KVEvStepResult) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	r = spec.KVEvStepResult{Op: spec.KVStepHeartbeatLost}
	st := ix.byName[stream]
	if st == nil {
		stepError(&r, KVUnknownStreamError(stream))
		return r
	}
	defer func() { r.Held = len(st.held) }()
	if st.cfg.Snapshot && st.known && !st.replaying && !st.snapshotting {
		st.resync = true
	}
	return r
}

// endSnapshot ends the outstanding snapshot request and drains the hold
// queue as a replay's end does (A7); after an installed snapshot
// (installed), a held message another publisher id sent is dropped.
func (ix *refKVEvIndex) endSnapshot(st *kvevStream, r *spec.KVEvStepResult, installed bool) {
	q := st.held
	st.snapshotting, st.target, st.targetTopic = false, 0, ""
	st.setHeld(nil)
	ix.drain(st, r, q, installed)
}

// drain runs the held messages q in arrival order (A7): the triggering
// one through the next comparison only, the others through the live
// rules, until one starts another replay or snapshot request (the rest
// stay held). filter drops those whose publisher id is not the stream's.
func (ix *refKVEvIndex) drain(st *kvevStream, r *spec.KVEvStepResult, q []kvevLiveMsg, filter bool) {
	for i, m := range q {
		if filter && st.pid != nil {
			if p := ix.livePublisherID(st, m); p != nil && !bytes.Equal(p, st.pid) {
				st.counters.OtherPublisher = satAddU64(st.counters.OtherPublisher, 1)
				continue
			}
		}
		if i == 0 {
			// The triggering message: its lastLive was set when it came.
			ix.nextRule(st, r, m)
		} else {
			ix.liveRules(st, r, m)
		}
		if st.replaying || st.snapshotting {
			// m revealed another gap and is held first; the rest stay held.
			st.setHeld(append(st.held, q[i+1:]...))
			return
		}
	}
}
