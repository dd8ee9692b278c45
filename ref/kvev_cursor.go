package ref

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"

	"github.com/kvtwin/kvtwin/spec"
)

// The reference per-stream cursor (docs/spec/kv-events.md §3.1-§3.4 and
// §2.10 A3, A7): which live and replayed batches reach the index, in what
// order, which are duplicates, which seqs are lost, and when the publisher
// restarted. The index it feeds is kvev_index.go.

// kvevStream is one publisher stream's cursor and counters.
type kvevStream struct {
	cfg spec.KVEvStream
	// known is false until the first message and after a restart.
	known bool
	// next is the first seq not yet applied; pastEnd says seq 2^64-1 was
	// applied, so next is 2^64, which no uint64 holds: every seq is then
	// below next.
	next    uint64
	pastEnd bool
	// lastLive is the highest seq seen on the live socket.
	lastLive uint64
	// While replaying, target is the seq of the live message that revealed
	// the gap, targetTopic its topic (2-frame replies are named from it),
	// and held the live messages waiting, the triggering one first.
	replaying   bool
	target      uint64
	targetTopic string
	held        []kvevLiveMsg
	// heldBytes is the held messages' frames' bytes together (A7).
	heldBytes int64
	// staleSince is set once the stream lost a batch (A3).
	staleSince *uint64
	// A13 (streams with a snapshot endpoint): pid is the publisher id
	// recorded, snapshotting says a snapshot request is outstanding
	// (target, targetTopic and held serve it as they serve a replay), and
	// resync that the next live message asks for one (heartbeat_lost).
	pid          []byte
	snapshotting bool
	resync       bool
	counters     spec.KVEvStreamCounters
}

// kvevLiveMsg is a live message whose frames passed §1.2's checks: three
// frames, an 8-byte seq. The frames are the index's own copies.
type kvevLiveMsg struct {
	frames [][]byte
	seq    uint64
}

// setHeld makes q the stream's hold queue and counts its bytes (A7).
func (st *kvevStream) setHeld(q []kvevLiveMsg) {
	st.held, st.heldBytes = q, 0
	for _, m := range q {
		st.heldBytes += KVMessageBytes(m.frames)
	}
}

func (m kvevLiveMsg) topic() string { return string(m.frames[0]) }

// below reports s < next.
func (st *kvevStream) below(s uint64) bool { return st.pastEnd || s < st.next }

// advance moves next past the applied seq s.
func (st *kvevStream) advance(s uint64) {
	if s == math.MaxUint64 {
		st.next, st.pastEnd = math.MaxUint64, true
		return
	}
	st.next = s + 1
}

// kvEvReplayRequest is the request a subscriber sends on its DEALER socket
// to replay from start (§3.2): an empty delimiter frame, then start as 8
// big-endian bytes.
func kvEvReplayRequest(start uint64) []spec.HexBytes {
	return []spec.HexBytes{{}, binary.BigEndian.AppendUint64(nil, start)}
}

// The words of the cursor's step errors (§2.10 A7).

// KVReplayNotOutstandingError: a replay reply, or a replay_failed with
// reason, while the stream has no replay outstanding.
func KVReplayNotOutstandingError(field string, value any) error {
	return spec.Reject(spec.ErrReplayProtocol, field, value, "a replay outstanding on the stream")
}

// KVReplayLayoutError: a replay reply of n frames (§3.2).
func KVReplayLayoutError(n int) error {
	return spec.Reject(spec.ErrReplayProtocol, "frames", n, "3 frames [empty, seq, payload] or 4 frames [empty, topic, seq, payload]")
}

// KVReplayDelimiterError: a replay reply whose first frame has n bytes.
func KVReplayDelimiterError(n int) error {
	return spec.Reject(spec.ErrReplayProtocol, "frames[0]", n, "an empty delimiter frame")
}

// KVReplaySeqWidthError: a replay reply whose seq frame (frames[k]) has n bytes.
func KVReplaySeqWidthError(k, n int) error {
	return spec.Reject(spec.ErrReplayProtocol, spec.Idx("frames", k), n, "8 bytes")
}

// stepError records a step's own rejection.
func stepError(r *spec.KVEvStepResult, err error) {
	r.Error = new(spec.ErrorObjectOf(err))
}

// Live implements KVEvIndex (§3.1, §2.10 A7).
func (ix *refKVEvIndex) Live(stream string, frames [][]byte) (r spec.KVEvStepResult) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	r = spec.KVEvStepResult{Op: spec.KVStepLive}
	st := ix.byName[stream]
	if st == nil {
		stepError(&r, KVUnknownStreamError(stream))
		return r
	}
	defer func() { r.Held = len(st.held) }()
	// §1.2: a malformed message is dropped and counted; its seq is not
	// received, even while replaying.
	if len(frames) != 3 {
		st.counters.Malformed = satAddU64(st.counters.Malformed, 1)
		stepError(&r, KVFrameCountError(len(frames)))
		return r
	}
	if len(frames[1]) != 8 {
		st.counters.Malformed = satAddU64(st.counters.Malformed, 1)
		stepError(&r, KVSeqWidthError(len(frames[1])))
		return r
	}
	m := kvevLiveMsg{frames: cloneFrames(frames), seq: binary.BigEndian.Uint64(frames[1])}
	if st.replaying || st.snapshotting {
		// A7 (and A13 while a snapshot is outstanding): held unread; on a full queue (max_held messages, or
		// max_held_bytes passed with this one) dropped, and its batch is
		// lost at its seq. The frame checks above run first ("even while
		// replaying"), so a dropped message always has its 8-byte seq and
		// A7's fallback to next never applies.
		size := KVMessageBytes(m.frames)
		if len(st.held) >= ix.cfg.MaxHeld || st.heldBytes+size > ix.cfg.MaxHeldBytes {
			st.counters.HeldOverflow = satAddU64(st.counters.HeldOverflow, 1)
			ix.loseAt(st, m.seq)
			return r
		}
		st.held = append(st.held, m)
		st.heldBytes += size
		return r
	}
	ix.liveRules(st, &r, m)
	return r
}

func cloneFrames(frames [][]byte) [][]byte {
	out := make([][]byte, len(frames))
	for i, f := range frames {
		out[i] = slices.Clone(f)
	}
	return out
}

// liveRules runs §3.1's live rules on m: first message, restart,
// duplicate, apply, gap.
func (ix *refKVEvIndex) liveRules(st *kvevStream, r *spec.KVEvStepResult, m kvevLiveMsg) {
	s := m.seq
	// A13: on a stream with a snapshot endpoint, a publisher id other than
	// the recorded one is a restart (§3.4), and the recorded one says the
	// publisher is the same whatever the seq.
	pid := ix.livePublisherID(st, m)
	if pid != nil && st.pid != nil && !bytes.Equal(pid, st.pid) {
		ix.restart(st, r)
	}
	same := pid != nil && st.pid != nil
	if st.known && !same && s <= st.lastLive {
		// Step 2: a new publisher incarnation (§3.4); m is its first message.
		ix.restart(st, r)
	}
	if pid != nil && st.pid == nil {
		st.pid = slices.Clone(pid)
	}
	if !st.known {
		// Step 1.
		st.known, st.lastLive, st.next, st.pastEnd = true, s, 0, false
		if s == 0 {
			ix.applyLive(st, r, m)
			return
		}
		ix.gap(st, r, m)
		return
	}
	// Step 3.
	st.lastLive = max(st.lastLive, s)
	if st.resync {
		// A13: heartbeat_lost asked for a snapshot at the next message.
		st.resync = false
		ix.requestSnapshot(st, r, m)
		return
	}
	ix.nextRule(st, r, m)
}

// nextRule is §3.1 step 3's comparison of m's seq with next.
func (ix *refKVEvIndex) nextRule(st *kvevStream, r *spec.KVEvStepResult, m kvevLiveMsg) {
	switch s := m.seq; {
	case st.below(s):
		ix.duplicate(st, r, s)
	case s == st.next:
		ix.applyLive(st, r, m)
	default:
		ix.gap(st, r, m)
	}
}

// gap handles the gap [next, m.seq) that m revealed (§3.2, §3.3, A7): with
// a replay endpoint, m is held and a replay from next requested; without
// one, the gap is lost and m applied.
func (ix *refKVEvIndex) gap(st *kvevStream, r *spec.KVEvStepResult, m kvevLiveMsg) {
	if st.cfg.Replay {
		// The trigger is always held: the queue is empty (A7).
		st.replaying, st.target, st.targetTopic = true, m.seq, m.topic()
		st.setHeld([]kvevLiveMsg{m})
		r.ReplayRequest = kvEvReplayRequest(st.next)
		return
	}
	if st.cfg.Snapshot {
		// A13: without replay, a snapshot fills the gap.
		ix.requestSnapshot(st, r, m)
		return
	}
	ix.lose(st, r, st.next, m.seq)
	ix.applyLive(st, r, m)
}

// lose records the unrecoverable run [from, to) and moves next to to
// (§3.3); the loss is at seq to (A3).
func (ix *refKVEvIndex) lose(st *kvevStream, r *spec.KVEvStepResult, from, to uint64) {
	st.counters.Gaps = satAddU64(st.counters.Gaps, 1)
	st.counters.GapBatchesLost = satAddU64(st.counters.GapBatchesLost, to-from)
	r.Lost = append(r.Lost, spec.KVEvGap{From: from, To: to})
	ix.loseAt(st, to)
	st.next = to
}

// loseAt applies A3 for a batch whose effect the stream lost at seq s:
// every engine of the stream becomes stale unless it is, and the stream
// remembers s for the engines it creates later.
func (ix *refKVEvIndex) loseAt(st *kvevStream, s uint64) {
	for _, e := range ix.engines {
		if e.stream == st.cfg.Name {
			e.markStale(s)
		}
	}
	if st.staleSince == nil {
		st.staleSince = &s
	}
}

func (ix *refKVEvIndex) duplicate(st *kvevStream, r *spec.KVEvStepResult, s uint64) {
	st.counters.Duplicates = satAddU64(st.counters.Duplicates, 1)
	r.Duplicates = append(r.Duplicates, s)
}

// applyLive applies live message m, whose seq is next.
func (ix *refKVEvIndex) applyLive(st *kvevStream, r *spec.KVEvStepResult, m kvevLiveMsg) {
	msg, err := decodeKVMessageWithin(m.frames, ix.cfg.DecodeLimits())
	ix.applyBatch(st, r, m.seq, m.topic(), msg.Batch, err)
	st.advance(m.seq)
}

// Replay implements KVEvIndex (§3.2, §2.10 A7).
func (ix *refKVEvIndex) Replay(stream string, frames [][]byte) (r spec.KVEvStepResult) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	r = spec.KVEvStepResult{Op: spec.KVStepReplay}
	st := ix.byName[stream]
	if st == nil {
		stepError(&r, KVUnknownStreamError(stream))
		return r
	}
	defer func() { r.Held = len(st.held) }()
	if !st.replaying {
		stepError(&r, KVReplayNotOutstandingError("frames", len(frames)))
		return r
	}
	if len(frames) != 3 && len(frames) != 4 {
		stepError(&r, KVReplayLayoutError(len(frames)))
		return r
	}
	if len(frames[0]) != 0 {
		stepError(&r, KVReplayDelimiterError(len(frames[0])))
		return r
	}
	k := len(frames) - 2 // the seq frame
	if len(frames[k]) != 8 {
		stepError(&r, KVReplaySeqWidthError(k, len(frames[k])))
		return r
	}
	s, payload := binary.BigEndian.Uint64(frames[k]), frames[k+1]
	if s == math.MaxUint64 && len(payload) == 0 {
		// The sentinel: the replay is complete.
		st.counters.ReplaysOK = satAddU64(st.counters.ReplaysOK, 1)
		r.ReplayDone = true
		ix.endReplay(st, &r)
		return r
	}
	topic := st.targetTopic
	if len(frames) == 4 {
		topic = string(frames[1])
	}
	switch {
	case st.below(s):
		ix.duplicate(st, &r, s)
		return r
	case s != st.next:
		// The history before s is gone.
		ix.lose(st, &r, st.next, s)
	}
	b, err := decodeKVBatchWithin(payload, ix.cfg.DecodeLimits())
	ix.applyBatch(st, &r, s, topic, b, err)
	st.advance(s)
	return r
}

// ReplayFailed implements KVEvIndex (§3.2, §2.10 A7).
func (ix *refKVEvIndex) ReplayFailed(stream string, reason string) (r spec.KVEvStepResult) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	r = spec.KVEvStepResult{Op: spec.KVStepReplayFailed}
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
	if !st.replaying {
		stepError(&r, KVReplayNotOutstandingError("reason", reason))
		return r
	}
	st.counters.ReplaysFailed = satAddU64(st.counters.ReplaysFailed, 1)
	ix.endReplay(st, &r)
	return r
}

// endReplay ends the outstanding replay (sentinel or failure, A7): what
// it did not bring up to the triggering seq is lost, then the held
// messages drain in arrival order.
func (ix *refKVEvIndex) endReplay(st *kvevStream, r *spec.KVEvStepResult) {
	if !st.pastEnd && st.next < st.target {
		ix.lose(st, r, st.next, st.target)
	}
	if st.cfg.Snapshot && st.staleSince != nil {
		// A13: the replay left the stream stale; a snapshot resyncs it,
		// and the held messages wait for it.
		st.replaying, st.snapshotting = false, true
		r.SnapshotRequest = kvEvSnapshotRequest()
		return
	}
	q := st.held
	st.replaying, st.target, st.targetTopic = false, 0, ""
	st.setHeld(nil)
	ix.drain(st, r, q, false)
}

// Restart implements KVEvIndex (§3.4, A7).
func (ix *refKVEvIndex) Restart(stream string) spec.KVEvStepResult {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	r := spec.KVEvStepResult{Op: spec.KVStepRestart}
	st := ix.byName[stream]
	if st == nil {
		stepError(&r, KVUnknownStreamError(stream))
		return r
	}
	ix.restart(st, &r)
	return r
}

// restart is §3.4's action: the stream's engines are dropped, its cursor
// is unknown again, its StaleSince cleared, and an outstanding replay is
// abandoned with its held messages.
func (ix *refKVEvIndex) restart(st *kvevStream, r *spec.KVEvStepResult) {
	for k, e := range ix.engines {
		if e.stream == st.cfg.Name {
			delete(ix.engines, k)
		}
	}
	st.known, st.next, st.pastEnd, st.lastLive = false, 0, false, 0
	st.replaying, st.target, st.targetTopic = false, 0, ""
	st.snapshotting, st.resync, st.pid = false, false, nil
	st.setHeld(nil)
	st.staleSince = nil
	st.counters.Restarts = satAddU64(st.counters.Restarts, 1)
	r.Restart = true
}

// streamState is the stream's observable cursor (KVEvStreamState).
func (ix *refKVEvIndex) streamState(st *kvevStream) spec.KVEvStreamState {
	out := spec.KVEvStreamState{
		Name: st.cfg.Name, Known: st.known, Next: st.next, LastLive: st.lastLive,
		Replaying: st.replaying, ReplayTarget: st.target, Held: len(st.held),
		Snapshotting: st.snapshotting, Resync: st.resync, PublisherID: slices.Clone(st.pid),
		Engines: []spec.KVEvEngineKey{}, Counters: st.counters,
	}
	if st.staleSince != nil {
		out.StaleSince = new(*st.staleSince)
	}
	for _, e := range ix.sortedEngines() {
		if e.stream == st.cfg.Name {
			out.Engines = append(out.Engines, e.key)
		}
	}
	return out
}
