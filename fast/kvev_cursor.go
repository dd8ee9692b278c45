package fast

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"sync"
	"unsafe"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// The per-stream cursor of the fast index (docs/spec/kv-events.md §3.1-§3.4,
// §2.10 A2, A3, A7): seq watermarks, the replay in flight and its hold
// queue, stale marking on loss, restarts.

// kvHeld is one live message held while a replay runs: its frames copied
// into one buffer (the caller may reuse its own).
type kvHeld struct {
	frames [][]byte
}

func kvHoldCopy(frames [][]byte) kvHeld {
	n := 0
	for _, f := range frames {
		n += len(f)
	}
	buf := make([]byte, 0, n)
	out := make([][]byte, len(frames))
	for i, f := range frames {
		start := len(buf)
		buf = append(buf, f...)
		out[i] = buf[start:len(buf):len(buf)]
	}
	return kvHeld{frames: out}
}

// kvStream is one publisher stream.
type kvStream struct {
	mu       sync.Mutex
	name     string
	rank     int64
	replay   bool
	snapshot bool

	known bool
	// next is the first seq not yet applied; pastEnd says seq 2^64-1 was
	// applied, so next is 2^64: every seq is then below it.
	next      uint64
	pastEnd   bool
	lastLive  uint64
	replaying bool
	target    uint64
	held      []kvHeld
	// heldBytes is the held messages' frames' bytes together (A7).
	heldBytes int64
	// A13: the publisher id recorded (snapshot streams), a snapshot
	// request outstanding (it shares target and held with a replay), and
	// a resync asked for by heartbeat_lost.
	pid          []byte
	snapshotting bool
	resync       bool

	staleSet   bool
	staleSince uint64
	// removed is set, under mu, by RemoveStream (A11): a call that found
	// the stream before then answers as for an unknown stream.
	removed bool
	engines map[spec.KVEvEngineKey]*kvEngine
	c       spec.KVEvStreamCounters

	hasher kvHasher
	dec    kvDecScratch

	// The last topic's engine key (without the batch's rank) and model,
	// for engineKeyOf.
	topicSet   bool
	topic      []byte
	topicKey   spec.KVEvEngineKey
	topicModel string
}

// setHeld makes q the hold queue and counts its bytes (A7).
func (st *kvStream) setHeld(q []kvHeld) {
	st.held, st.heldBytes = q, 0
	for _, m := range q {
		st.heldBytes += ref.KVMessageBytes(m.frames)
	}
}

func (st *kvStream) state() spec.KVEvStreamState {
	s := spec.KVEvStreamState{
		Name: st.name, Known: st.known, Next: st.next, LastLive: st.lastLive,
		Replaying: st.replaying, Held: len(st.held), Counters: st.c,
		Engines:      make([]spec.KVEvEngineKey, 0, len(st.engines)),
		Snapshotting: st.snapshotting, Resync: st.resync, PublisherID: bytes.Clone(st.pid),
	}
	if st.replaying || st.snapshotting {
		s.ReplayTarget = st.target
	}
	if st.staleSet {
		s.StaleSince = new(st.staleSince)
	}
	for k := range st.engines {
		s.Engines = append(s.Engines, k)
	}
	slices.SortFunc(s.Engines, kvEngineLess)
	return s
}

// lockStream returns the stream named name with its mutex held, or op's
// unknown-stream result when the index has no such stream (never had it,
// or RemoveStream took it before the lock was won).
func (ix *kvIndex) lockStream(name string, op string) (*kvStream, *spec.KVEvStepResult) {
	st := ix.streams.Load().byName[name]
	if st != nil {
		st.mu.Lock()
		if !st.removed {
			return st, nil
		}
		st.mu.Unlock()
	}
	return nil, &spec.KVEvStepResult{Op: op, Error: new(spec.ErrorObjectOf(ref.KVUnknownStreamError(name)))}
}

// Live handles a message received on the stream's SUB socket (§3.1, A7).
func (ix *kvIndex) Live(name string, frames [][]byte) spec.KVEvStepResult {
	st, bad := ix.lockStream(name, spec.KVStepLive)
	if bad != nil {
		return *bad
	}
	defer st.mu.Unlock()
	r := spec.KVEvStepResult{Op: spec.KVStepLive}
	// §1.2: a malformed message is dropped and counted; its seq is not
	// received, even while replaying (A7).
	if err := kvLiveFrames(frames); err != nil {
		st.c.Malformed++
		r.Error = new(spec.ErrorObjectOf(err))
		r.Held = len(st.held)
		return r
	}
	if st.replaying || st.snapshotting {
		// A7 (A13 while a snapshot is outstanding): held unread; on a full queue (max_held messages, or
		// max_held_bytes passed with this one) dropped, its batch lost.
		size := ref.KVMessageBytes(frames)
		if len(st.held) >= ix.cfg.MaxHeld || st.heldBytes+size > ix.cfg.MaxHeldBytes {
			st.c.HeldOverflow++
			ix.loseAt(st, binary.BigEndian.Uint64(frames[1]))
		} else {
			st.held = append(st.held, kvHoldCopy(frames))
			st.heldBytes += size
		}
		r.Held = len(st.held)
		return r
	}
	ix.liveRules(st, frames, false, &r)
	r.Held = len(st.held)
	return r
}

// kvLiveFrames is §1.2's frame check.
func kvLiveFrames(frames [][]byte) error {
	if len(frames) != 3 {
		return ref.KVFrameCountError(len(frames))
	}
	if len(frames[1]) != 8 {
		return ref.KVSeqWidthError(len(frames[1]))
	}
	return nil
}

// liveRules runs a well-formed live message through §3.1. held says the
// frames are already owned by the hold queue's copy.
func (ix *kvIndex) liveRules(st *kvStream, frames [][]byte, held bool, r *spec.KVEvStepResult) {
	s := binary.BigEndian.Uint64(frames[1])
	// A13: a publisher id other than the recorded one is a restart; the
	// recorded one rules out a restart by seq.
	pid := ix.publisherID(st, frames[2])
	if pid != nil && st.pid != nil && !bytes.Equal(pid, st.pid) {
		ix.restart(st, r)
	}
	same := pid != nil && st.pid != nil
	if st.known && !same && (s < st.lastLive || s == st.lastLive && !ix.f.LiveRepeatIsDuplicate) {
		ix.restart(st, r)
	}
	if pid != nil && st.pid == nil {
		st.pid = bytes.Clone(pid)
	}
	if !st.known {
		st.known, st.lastLive, st.next, st.pastEnd = true, s, 0, false
		ix.advance(st, s, frames, held, r)
		return
	}
	st.lastLive = max(st.lastLive, s)
	if st.resync {
		st.resync = false
		ix.holdForSnapshot(st, s, frames, held, r)
		return
	}
	ix.advance(st, s, frames, held, r)
}

// advance is §3.1 step 3's next comparison for a live message.
func (ix *kvIndex) advance(st *kvStream, s uint64, frames [][]byte, held bool, r *spec.KVEvStepResult) {
	switch {
	case st.below(s):
		st.c.Duplicates++
		r.Duplicates = append(r.Duplicates, s)
	case s == st.next:
		ix.apply(st, s, frames[0], frames[1], frames[2], r)
	default:
		ix.gap(st, s, frames, held, r)
	}
}

// below reports s < next.
func (st *kvStream) below(s uint64) bool { return st.pastEnd || s < st.next }

// gap is a live gap [next, s) (§3.2, §3.3, A7).
func (ix *kvIndex) gap(st *kvStream, s uint64, frames [][]byte, held bool, r *spec.KVEvStepResult) {
	if ix.f.GapsOnlyLogged {
		st.c.Gaps++
		st.c.GapBatchesLost = kvSatAddU(st.c.GapBatchesLost, s-st.next)
		r.Lost = append(r.Lost, spec.KVEvGap{From: st.next, To: s})
		st.next = s
		ix.apply(st, s, frames[0], frames[1], frames[2], r)
		return
	}
	if st.replay {
		m := kvHeld{frames: frames}
		if !held {
			m = kvHoldCopy(frames)
		}
		// The trigger is always held: the queue is empty (A7).
		st.setHeld(append(st.held[:0], m))
		st.replaying = true
		st.target = s
		r.ReplayRequest = kvReplayRequest(st.next, ix.f.ReplayNoDelimiter)
		return
	}
	if st.snapshot {
		ix.holdForSnapshot(st, s, frames, held, r)
		return
	}
	ix.lose(st, st.next, s, r)
	ix.apply(st, s, frames[0], frames[1], frames[2], r)
}

func kvReplayRequest(start uint64, noDelim bool) []spec.HexBytes {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 8), start)
	if noDelim {
		return []spec.HexBytes{b}
	}
	return []spec.HexBytes{{}, b}
}

// lose records the unrecoverable run [from, to) (§3.3, A3) and moves next to to.
func (ix *kvIndex) lose(st *kvStream, from, to uint64, r *spec.KVEvStepResult) {
	st.c.Gaps++
	st.c.GapBatchesLost = kvSatAddU(st.c.GapBatchesLost, to-from)
	r.Lost = append(r.Lost, spec.KVEvGap{From: from, To: to})
	st.next = to
	ix.loseAt(st, to)
}

// loseAt is A3: every engine of st becomes stale at s, and so does the stream.
func (ix *kvIndex) loseAt(st *kvStream, s uint64) {
	for _, e := range st.engines {
		e.mu.Lock()
		e.markStale(s)
		e.mu.Unlock()
	}
	if !st.staleSet {
		st.staleSet, st.staleSince = true, s
	}
}

func kvSatAddU(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

// apply applies the batch at seq s, which is next (§2.7, A2, A3).
func (ix *kvIndex) apply(st *kvStream, s uint64, topic, seqFrame, payload []byte, r *spec.KVEvStepResult) {
	if s == math.MaxUint64 {
		st.next, st.pastEnd = s, true
	} else {
		st.next = s + 1
	}
	st.c.Batches++
	r.Applied = append(r.Applied, s)
	// The frames were checked (kvLiveFrames, kvReplayFrames), so the
	// payload's decode is decodeKVMessage's, into the stream's scratch.
	batch, err := decodeKVBatchScratch(payload, ix.f, ix.cfg.DecodeLimits(), &st.dec)
	if err != nil {
		ix.refuseBatch(st, s, err, r)
		return
	}
	key, model := st.engineKeyOf(topic, batch.DPRank) // the raw bytes (A2), not the UTF-8-safe Topic
	e, err := ix.engineFor(st, key, model)
	if err != nil {
		ix.refuseEngine(st, s, key, err, r)
		return
	}
	e.mu.Lock()
	ix.applyEvents(e, st, s, batch.Events, r)
	e.mu.Unlock()
}

// engineKeyOf is kvEngineKeyOf of the topic's raw bytes, remembering the
// last topic's answer: a stream's messages almost always share one topic,
// and converting it to a string for each message was an allocation.
func (st *kvStream) engineKeyOf(topic []byte, rank *int64) (spec.KVEvEngineKey, string) {
	if !st.topicSet || !bytes.Equal(topic, st.topic) {
		st.topicKey, st.topicModel = kvEngineKeyOf(st, string(topic), nil)
		st.topic = append(st.topic[:0], topic...)
		st.topicSet = true
	}
	k := st.topicKey
	if rank != nil {
		k.DPRank = *rank
	}
	return k, st.topicModel
}

func (ix *kvIndex) refuseBatch(st *kvStream, s uint64, err error, r *spec.KVEvStepResult) {
	st.c.DecodeErrors++
	r.Errors = append(r.Errors, spec.KVEvEventError{Seq: s, Event: -1, Error: spec.ErrorObjectOf(err)})
	ix.loseAt(st, s)
}

// restart is §3.4: the stream's engines dropped, the cursor unknown, an
// outstanding replay abandoned with its held messages.
func (ix *kvIndex) restart(st *kvStream, r *spec.KVEvStepResult) {
	ix.dropEngines(st)
	st.known, st.next, st.pastEnd, st.lastLive = false, 0, false, 0
	st.staleSet, st.staleSince = false, 0
	st.replaying, st.target = false, 0
	st.snapshotting, st.resync, st.pid = false, false, nil
	clear(st.held)
	st.setHeld(st.held[:0])
	st.c.Restarts++
	r.Restart = true
}

// Restart handles an operator's signal that the publisher was replaced.
func (ix *kvIndex) Restart(name string) spec.KVEvStepResult {
	st, bad := ix.lockStream(name, spec.KVStepRestart)
	if bad != nil {
		return *bad
	}
	defer st.mu.Unlock()
	r := spec.KVEvStepResult{Op: spec.KVStepRestart}
	ix.restart(st, &r)
	r.Held = len(st.held)
	return r
}

// Replay handles one DEALER reply (§3.2, A7).
func (ix *kvIndex) Replay(name string, frames [][]byte) spec.KVEvStepResult {
	st, bad := ix.lockStream(name, spec.KVStepReplay)
	if bad != nil {
		return *bad
	}
	defer st.mu.Unlock()
	r := spec.KVEvStepResult{Op: spec.KVStepReplay}
	if err := kvReplayFrames(st.replaying, frames); err != nil {
		r.Error = new(spec.ErrorObjectOf(err))
		r.Held = len(st.held)
		return r
	}
	topic := st.held[0].frames[0]
	seqFrame, payload := frames[1], frames[2]
	if len(frames) == 4 {
		topic, seqFrame, payload = frames[1], frames[2], frames[3]
	}
	s := binary.BigEndian.Uint64(seqFrame)
	switch {
	case s == math.MaxUint64 && len(payload) == 0:
		// The sentinel: the replay is complete.
		st.c.ReplaysOK++
		r.ReplayDone = true
		ix.endReplay(st, &r)
	case ix.f.ReplayRedeliveryApplied && !st.pastEnd && s+1 == st.next:
		ix.apply(st, s, topic, seqFrame, payload, &r) // the reach plant: applied again
	case st.below(s):
		st.c.Duplicates++
		r.Duplicates = append(r.Duplicates, s)
	default:
		if s != st.next {
			// The history before s is gone.
			ix.lose(st, st.next, s, &r)
		}
		ix.apply(st, s, topic, seqFrame, payload, &r)
	}
	r.Held = len(st.held)
	return r
}

// kvReplayFrames checks a reply's layout (A7).
func kvReplayFrames(replaying bool, frames [][]byte) error {
	if !replaying {
		return ref.KVReplayNotOutstandingError("frames", len(frames))
	}
	n := len(frames)
	if n != 3 && n != 4 {
		return ref.KVReplayLayoutError(n)
	}
	if len(frames[0]) != 0 {
		return ref.KVReplayDelimiterError(len(frames[0]))
	}
	if len(frames[n-2]) != 8 {
		return ref.KVReplaySeqWidthError(n-2, len(frames[n-2]))
	}
	return nil
}

// ReplayFailed ends the outstanding replay without its sentinel (A7).
func (ix *kvIndex) ReplayFailed(name string, reason string) spec.KVEvStepResult {
	st, bad := ix.lockStream(name, spec.KVStepReplayFailed)
	if bad != nil {
		return *bad
	}
	defer st.mu.Unlock()
	r := spec.KVEvStepResult{Op: spec.KVStepReplayFailed}
	var err error
	switch {
	case reason != spec.ReplayReasonTimeout && reason != spec.ReplayReasonProtocol && reason != spec.ReplayReasonUnavailable:
		err = spec.Reject(spec.ErrBadEnum, "reason", reason, "one of timeout, protocol, unavailable")
	case !st.replaying:
		err = ref.KVReplayNotOutstandingError("reason", reason)
	}
	if err != nil {
		r.Error = new(spec.ErrorObjectOf(err))
		r.Held = len(st.held)
		return r
	}
	st.c.ReplaysFailed++
	ix.endReplay(st, &r)
	r.Held = len(st.held)
	return r
}

// endReplay closes the replay (sentinel or failure): the rest of
// [next, target) is lost, then the hold queue drains in arrival order, the
// triggering message through the next comparison only, the others through
// the live rules, until one starts another replay (A7).
func (ix *kvIndex) endReplay(st *kvStream, r *spec.KVEvStepResult) {
	if !st.pastEnd && st.next < st.target {
		ix.lose(st, st.next, st.target, r)
	}
	if st.snapshot && st.staleSet {
		// A13: a replay that leaves the stream stale asks for a snapshot.
		st.replaying, st.snapshotting = false, true
		r.SnapshotRequest = kvSnapshotRequest()
		return
	}
	q := st.held
	st.replaying, st.target = false, 0
	st.setHeld(nil)
	ix.drain(st, q, false, r)
}

// kvUnits views int64 tokens as the 8-byte units they are hashed as; a
// negative token becomes a unit >= 2^63, which checkTokenUnits refuses.
func kvUnits(t []int64) []spec.Unit {
	if len(t) == 0 {
		return nil
	}
	return unsafe.Slice((*spec.Unit)(unsafe.Pointer(unsafe.SliceData(t))), len(t))
}
