package scaleout

import (
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvtwin/kvtwin/spec"
)

// pubIndex is the relay's index as the ZMQ subscriber sees it: the relay's
// own index, with every batch it applies published to JetStream before the
// call returns. The subscriber calls it from one goroutine per source, so
// each source's state below is owned by that goroutine.
//
// Which bytes belong to an applied seq: the index reports only seqs
// (KVEvStepResult.Applied), so the wrapper keeps the messages a later call
// can apply, and knows which call applies which (docs/spec/kv-events.md
// §3.1, §2.10 A7):
//   - Live while no replay is outstanding applies at most the message
//     itself, after a restart when its seq is at or below lastLive; or holds
//     it as the trigger of a replay;
//   - Live while replaying applies nothing: the message is held unread, or
//     dropped when the hold queue is full;
//   - a Replay reply other than the sentinel applies at most the replayed
//     batch itself;
//   - the sentinel and ReplayFailed drain the hold queue: the trigger
//     through the next comparison only, every later message through the
//     full live rules (each may be a publisher restart, possibly several in
//     one drain) until one reveals a new gap and stays held with the rest.
//
// So the wrapper mirrors the index's hold queue (KVEvStepResult.Held gives
// its length after every call; at most MaxHeld messages) and the two
// cursor fields that decide a restart (known, lastLive), walks a drain's
// messages as the index does to place each restart (the next epoch's reset
// message) between the batches, and matches applied seqs to the walked
// messages in order: a message that is not applied (a duplicate) has a
// seq below every seq applied after it in its epoch, and the first applied
// seq after a restart is 0, which no duplicate has.
type pubIndex struct {
	spec.KVEvIndex
	streams map[string]*relayStream
	log     *slog.Logger
	o       RelayOptions

	// Set by start, before the subscriber runs.
	ctx        context.Context
	pub        publishFunc
	maxPayload int64

	// Set by the relay's setup, before the subscriber runs.
	rebuilt  bool
	readFrom uint64
}

// relayStream is one source's publishing state.
type relayStream struct {
	name, token string
	rank        int64
	log         *slog.Logger

	// Owned by the source's goroutine.
	epoch      uint64
	held       []heldMsg // the index's hold queue, mirrored
	known      bool      // the index's cursor is known (§3.1), mirrored
	lastLive   uint64    // the index's lastLive, mirrored
	pendingGap bool      // the next batch published carries Kvtwin-Gap
	// overflow: a live message at seq overflowSeq (or below) was dropped
	// from the index's full hold queue (A7); the first batch published
	// after it carries Kvtwin-Gap.
	overflow    bool
	overflowSeq uint64

	mu sync.Mutex
	st RelaySourceStatus
}

// heldMsg is a message that an index call may apply: its seq, the topic the
// index names its engines from, and the payload.
type heldMsg struct {
	seq     uint64
	topic   []byte
	payload []byte
}

func (h heldMsg) clone() heldMsg {
	return heldMsg{seq: h.seq, topic: slices.Clone(h.topic), payload: slices.Clone(h.payload)}
}

func newPubIndex(inner spec.KVEvIndex, o RelayOptions, streams []spec.KVEvStream) *pubIndex {
	p := &pubIndex{KVEvIndex: inner, streams: map[string]*relayStream{}, log: o.Logger, o: o, readFrom: 1}
	for _, s := range streams {
		tok := Token(s.Name)
		p.streams[s.Name] = &relayStream{
			name: s.Name, token: tok, rank: s.Rank, log: o.Logger.With("source", s.Name),
			st: RelaySourceStatus{Token: tok, Subject: Subject(tok)},
		}
	}
	return p
}

func (p *pubIndex) start(ctx context.Context, pub publishFunc, maxPayload int64) {
	p.ctx, p.pub, p.maxPayload = ctx, pub, maxPayload
}

// Live implements spec.KVEvIndex.
func (p *pubIndex) Live(stream string, frames [][]byte) spec.KVEvStepResult {
	r := p.KVEvIndex.Live(stream, frames)
	rs := p.streams[stream]
	if rs == nil || r.Error != nil || len(frames) != 3 || len(frames[1]) != 8 {
		return r // the index did nothing (it refuses such frames, §1.2)
	}
	cur := heldMsg{seq: binary.BigEndian.Uint64(frames[1]), topic: frames[0], payload: frames[2]}
	if n := len(rs.held); n > 0 {
		// Replaying: held unread, or dropped; nothing applied.
		switch r.Held {
		case n + 1:
			rs.held = append(rs.held, cur.clone())
		case n:
			rs.overflow, rs.overflowSeq = true, max(rs.overflowSeq, cur.seq)
			rs.update(func(st *RelaySourceStatus) { st.HeldOverflow++ })
			rs.log.Warn("live message dropped while replaying (hold queue full): the source's engines are stale in the relay's index", "seq", cur.seq)
		}
		p.publishOne(rs, r, nil)
		p.resync(rs, r.Held)
		return r
	}
	restart := rs.known && cur.seq <= rs.lastLive
	rs.known, rs.lastLive = true, cur.seq
	if restart != r.Restart {
		rs.log.Error("the relay's copy of the cursor disagrees with the index on a restart", "seq", cur.seq, "index_restart", r.Restart)
	}
	p.publishOne(rs, r, &cur)
	if r.Held == 1 {
		rs.held = []heldMsg{cur.clone()}
	}
	p.resync(rs, r.Held)
	return r
}

// Replay implements spec.KVEvIndex.
func (p *pubIndex) Replay(stream string, frames [][]byte) spec.KVEvStepResult {
	var trigger []byte
	if rs := p.streams[stream]; rs != nil && len(rs.held) > 0 {
		trigger = rs.held[0].topic
	}
	r := p.KVEvIndex.Replay(stream, frames)
	rs := p.streams[stream]
	if rs == nil || r.Error != nil || len(frames) != 3 && len(frames) != 4 || len(frames[len(frames)-2]) != 8 {
		return r // the index did nothing (it refuses such replies, A7)
	}
	if r.ReplayDone {
		p.drain(rs, r)
		return r
	}
	// One replayed batch: [empty, seq, payload] takes the trigger's topic
	// (as the index does), [empty, topic, seq, payload] its own.
	k := len(frames) - 2
	cur := heldMsg{seq: binary.BigEndian.Uint64(frames[k]), topic: trigger, payload: frames[k+1]}
	if len(frames) == 4 {
		cur.topic = frames[1]
	}
	p.publishOne(rs, r, &cur)
	p.resync(rs, r.Held)
	return r
}

// ReplayFailed implements spec.KVEvIndex.
func (p *pubIndex) ReplayFailed(stream, reason string) spec.KVEvStepResult {
	r := p.KVEvIndex.ReplayFailed(stream, reason)
	if rs := p.streams[stream]; rs != nil && r.Error == nil {
		p.drain(rs, r)
	}
	return r
}

// Restart implements spec.KVEvIndex.
func (p *pubIndex) Restart(stream string) spec.KVEvStepResult {
	r := p.KVEvIndex.Restart(stream)
	if rs := p.streams[stream]; rs != nil && r.Error == nil {
		rs.held, rs.known, rs.lastLive = nil, false, 0
		p.publishOne(rs, r, nil)
	}
	return r
}

// AddStream implements spec.KVEvIndex: refused, because a relay's sources
// are fixed when it starts (its mirror of each source's hold queue, and
// the replicas' source lists, are built from them); restart the relay
// with the new list.
func (p *pubIndex) AddStream(s spec.KVEvStream) error {
	return errRelaySourcesFixed
}

// RemoveStream implements spec.KVEvIndex: refused, as AddStream.
func (p *pubIndex) RemoveStream(name string) error {
	return errRelaySourcesFixed
}

// errRelaySourcesFixed refuses a change of a relay's sources at run time.
var errRelaySourcesFixed = errors.New("a relay's sources are fixed when it starts; restart it with the new list")

// resync checks the mirror against the index's hold queue length; a
// mismatch (never expected) keeps the newest messages, or clears it.
func (p *pubIndex) resync(rs *relayStream, held int) {
	if len(rs.held) == held {
		return
	}
	rs.log.Error("the relay's copy of the hold queue disagrees with the index; resynchronising", "copy", len(rs.held), "index", held)
	if held == 0 || held > len(rs.held) {
		rs.held = nil
		return
	}
	rs.held = rs.held[len(rs.held)-held:]
}

// publishOne publishes what a call that is not a drain did: a restart
// first, then at most one batch, cand.
func (p *pubIndex) publishOne(rs *relayStream, r spec.KVEvStepResult, cand *heldMsg) {
	gaps := lostTo(r)
	if r.Restart {
		p.openEpoch(rs)
	}
	for _, s := range r.Applied {
		if cand == nil || cand.seq != s {
			p.unmatched(rs, s)
			continue
		}
		p.publishBatch(rs, *cand, gaps[s])
		delete(gaps, s)
		cand = nil
	}
	if len(gaps) > 0 {
		rs.pendingGap = true
	}
}

// drain publishes what a drain of the hold queue did, walking the queue as
// the index does; the messages still held are the queue's last r.Held (the
// one that revealed the next gap, processed, and those after it, unread).
func (p *pubIndex) drain(rs *relayStream, r spec.KVEvStepResult) {
	q := rs.held
	gaps := lostTo(r)
	walked := q
	if r.Held > 0 && r.Held <= len(q) {
		walked = q[:len(q)-r.Held+1]
	}
	applied := r.Applied
	restarts := 0
	for i, m := range walked {
		if i > 0 {
			if rs.known && m.seq <= rs.lastLive {
				p.openEpoch(rs)
				restarts++
			}
			rs.known, rs.lastLive = true, m.seq
		}
		if len(applied) > 0 && applied[0] == m.seq {
			p.publishBatch(rs, m, gaps[m.seq])
			delete(gaps, m.seq)
			applied = applied[1:]
		}
	}
	for _, s := range applied {
		p.unmatched(rs, s)
	}
	if (restarts > 0) != r.Restart {
		rs.log.Error("the relay's copy of the cursor disagrees with the index on a restart in a drain", "restarts", restarts, "index_restart", r.Restart)
	}
	if len(gaps) > 0 {
		rs.pendingGap = true
	}
	if r.Held <= len(q) {
		rs.held = q[len(q)-r.Held:]
	}
	p.resync(rs, r.Held)
}

// lostTo is the set of seqs that end a run r lost: the batch published at
// such a seq carries Kvtwin-Gap.
func lostTo(r spec.KVEvStepResult) map[uint64]bool {
	m := make(map[uint64]bool, len(r.Lost))
	for _, g := range r.Lost {
		m[g.To] = true
	}
	return m
}

// openEpoch starts the next epoch and publishes its reset message.
func (p *pubIndex) openEpoch(rs *relayStream) {
	rs.epoch++
	rs.overflow, rs.overflowSeq = false, 0
	rs.update(func(st *RelaySourceStatus) { st.Epoch = rs.epoch })
	rs.log.Info("publisher restart: opening a new epoch", "epoch", rs.epoch)
	if p.publish(rs, resetMsg(rs.token, rs.rank, rs.epoch), 0, true) {
		rs.update(func(st *RelaySourceStatus) { st.Resets++ })
	}
}

// unmatched records an applied seq the relay has no payload for (never
// expected): the replicas see a gap.
func (p *pubIndex) unmatched(rs *relayStream, seq uint64) {
	rs.pendingGap = true
	rs.update(func(st *RelaySourceStatus) { st.Unmatched++ })
	rs.log.Error("applied seq without a payload to publish: the replicas will see a gap", "seq", seq)
}

// publishBatch publishes one applied batch.
func (p *pubIndex) publishBatch(rs *relayStream, h heldMsg, gap bool) {
	gap = gap || rs.pendingGap
	if rs.overflow && h.seq > rs.overflowSeq {
		gap = true
		rs.overflow, rs.overflowSeq = false, 0
	}
	m := batchMsg(rs.token, rs.rank, rs.epoch, h.seq, gap, h.topic, h.payload)
	if !p.publish(rs, m, h.seq, false) {
		rs.pendingGap = true
		return
	}
	rs.pendingGap = false
	rs.update(func(st *RelaySourceStatus) {
		st.Published++
		st.PublishedSeqValid, st.PublishedSeq = true, h.seq
		if gap {
			st.GapFlags++
		}
	})
}

// publish stores m, retrying with the same Msg-Id for RetryFor, and reports
// whether it was stored.
func (p *pubIndex) publish(rs *relayStream, m *nats.Msg, seq uint64, reset bool) bool {
	if p.pub == nil {
		return false // not started (never: the subscriber runs after start)
	}
	if size := int64(len(m.Data)) + headerBytes(m.Header); p.maxPayload > 0 && size > p.maxPayload {
		rs.failed("message of about "+itoa(size)+" bytes exceeds the NATS server's max_payload ("+itoa(p.maxPayload)+"); raise max_payload", seq)
		return false
	}
	deadline := time.Now().Add(p.o.RetryFor)
	bo := newBackoff(p.o.RetryMin, p.o.RetryMax)
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(p.ctx, p.o.PublishTimeout)
		ack, err := p.pub(actx, m)
		cancel()
		if err == nil {
			if ack != nil && ack.Duplicate {
				rs.update(func(st *RelaySourceStatus) { st.Duplicates++ })
			}
			return true
		}
		if p.ctx.Err() != nil {
			return false // stopping: the next relay process continues from the stream
		}
		rs.update(func(st *RelaySourceStatus) {
			st.LastPublishError, st.LastPublishErrorAt = err.Error(), time.Now()
		})
		if permanentPublishError(err) || time.Now().Add(bo.next()).After(deadline) {
			rs.failed(err.Error(), seq)
			return false
		}
		rs.log.Warn("publish failed; retrying with the same Msg-Id", "seq", seq, "reset", reset, "attempt", attempt+1, "err", err, "retry_in", bo.next())
		if !bo.wait(p.ctx) {
			return false
		}
		rs.update(func(st *RelaySourceStatus) { st.Retries++ })
	}
}

// failed records a message given up on.
func (rs *relayStream) failed(why string, seq uint64) {
	rs.update(func(st *RelaySourceStatus) {
		st.Failed++
		st.LastPublishError, st.LastPublishErrorAt = why, time.Now()
	})
	rs.log.Error("gave up publishing: the replicas will see a gap and mark the source stale", "seq", seq, "err", why)
}

func (rs *relayStream) update(f func(st *RelaySourceStatus)) {
	rs.mu.Lock()
	f(&rs.st)
	rs.mu.Unlock()
}

// permanentPublishError: errors a retry cannot fix.
func permanentPublishError(err error) bool {
	if errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, nats.ErrBadSubject) || errors.Is(err, nats.ErrConnectionClosed) {
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum
	}
	return false
}

// headerBytes estimates the encoded size of h.
func headerBytes(h nats.Header) int64 {
	n := int64(len("NATS/1.0\r\n\r\n"))
	for k, vs := range h {
		for _, v := range vs {
			n += int64(len(k) + len(v) + 4)
		}
	}
	return n
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
