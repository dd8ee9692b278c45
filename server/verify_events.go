package server

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/prefix"
	"github.com/kvtwin/kvtwin/spec"
)

// shadowIndex is the event-fed index under --verify-state: the served
// index, and a reference index fed the same calls in the same order off
// the subscriber's path (docs/verify.md). Ingest calls hold mu exclusively
// and scores share it, so the order in which calls are queued is an order
// the served index applied them in; every answer (Rate of the scores) is
// compared, and every DigestInterval the index digests (kv-events.md §4.3)
// at the same point of the sequence. It serializes ingest across streams:
// the price of a shadow that sees the served index's order.
type shadowIndex struct {
	served, ref spec.KVEvIndex
	scores      prefix.Sampler
	interval    time.Duration

	mu   sync.RWMutex
	last time.Time // the last digest; written under mu held exclusively
	ops  *prefix.ShadowQueue[evOp]

	smu    sync.Mutex
	status prefix.ShadowStatus
}

// evOp is one call the served index answered, for the reference to repeat.
type evOp struct {
	kind   string // live, replay, replay_failed, restart, add_stream, remove_stream, score, digest
	stream string
	config spec.KVEvStream // add_stream
	frames [][]byte
	reason string
	query  spec.KVEvScoreQuery
	want   []byte
}

// newShadowIndex wraps served with a reference index built like it.
func newShadowIndex(served, ref spec.KVEvIndex, v VerifyConfig) *shadowIndex {
	return &shadowIndex{served: served, ref: ref, scores: prefix.Sampler{Rate: v.Rate}, interval: v.DigestInterval,
		last: time.Now(), ops: prefix.NewShadowQueue[evOp](v.StateQueue, v.StateQueueBytes), status: prefix.ShadowStatus{State: prefix.ShadowAgree}}
}

// Live implements spec.KVEvIndex.
func (s *shadowIndex) Live(stream string, frames [][]byte) spec.KVEvStepResult {
	return s.ingest(evOp{kind: "live", stream: stream, frames: frames}, func() spec.KVEvStepResult { return s.served.Live(stream, frames) })
}

// Replay implements spec.KVEvIndex.
func (s *shadowIndex) Replay(stream string, frames [][]byte) spec.KVEvStepResult {
	return s.ingest(evOp{kind: "replay", stream: stream, frames: frames}, func() spec.KVEvStepResult { return s.served.Replay(stream, frames) })
}

// ReplayFailed implements spec.KVEvIndex.
func (s *shadowIndex) ReplayFailed(stream, reason string) spec.KVEvStepResult {
	return s.ingest(evOp{kind: "replay_failed", stream: stream, reason: reason}, func() spec.KVEvStepResult { return s.served.ReplayFailed(stream, reason) })
}

// Restart implements spec.KVEvIndex.
func (s *shadowIndex) Restart(stream string) spec.KVEvStepResult {
	return s.ingest(evOp{kind: "restart", stream: stream}, func() spec.KVEvStepResult { return s.served.Restart(stream) })
}

// AddStream implements spec.KVEvIndex; the reference adds the stream at
// the same point of the sequence.
func (s *shadowIndex) AddStream(st spec.KVEvStream) error {
	var err error
	s.ingest(evOp{kind: spec.KVStepAddStream, stream: st.Name, config: st}, func() spec.KVEvStepResult {
		err = s.served.AddStream(st)
		return outcome(spec.KVStepAddStream, err)
	})
	return err
}

// RemoveStream implements spec.KVEvIndex, as AddStream.
func (s *shadowIndex) RemoveStream(name string) error {
	var err error
	s.ingest(evOp{kind: spec.KVStepRemoveStream, stream: name}, func() spec.KVEvStepResult {
		err = s.served.RemoveStream(name)
		return outcome(spec.KVStepRemoveStream, err)
	})
	return err
}

// outcome is a stream add's or removal's answer as a step result (the
// form kvev.apply gives it), for comparing with the reference's.
func outcome(op string, err error) spec.KVEvStepResult {
	r := spec.KVEvStepResult{Op: op}
	if err != nil {
		r.Error = new(spec.ErrorObjectOf(err))
	}
	return r
}

// ingest applies one call to the served index and queues it, with a
// digest after it when one is due.
func (s *shadowIndex) ingest(op evOp, apply func() spec.KVEvStepResult) spec.KVEvStepResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	res := apply()
	if s.lost() {
		return res
	}
	op.frames = cloneFrames(op.frames)
	op.want = prefix.EncodeAnswer(res, nil)
	s.queue(op)
	if now := time.Now(); now.Sub(s.last) >= s.interval {
		s.last = now
		d := s.served.Digest()
		s.queue(evOp{kind: "digest", want: d[:]})
	}
	return res
}

// Score implements spec.KVEvIndex; Rate of the scores are compared.
func (s *shadowIndex) Score(q spec.KVEvScoreQuery) ([]spec.KVEvScore, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out, err := s.served.Score(q)
	if !s.lost() && s.sampled() {
		q.Tokens = slices.Clone(q.Tokens)
		s.queue(evOp{kind: "score", query: q, want: prefix.EncodeAnswer(out, err)})
	}
	return out, err
}

// State implements spec.KVEvIndex: the served index's.
func (s *shadowIndex) State() spec.KVEvState { return s.served.State() }

// Digest implements spec.KVEvIndex: the served index's.
func (s *shadowIndex) Digest() [32]byte { return s.served.Digest() }

func (s *shadowIndex) sampled() bool { return s.scores.Take() }

// queue offers op; a full queue loses the shadow (a call cannot be
// skipped without making the reference wrong).
func (s *shadowIndex) queue(op evOp) {
	size := int64(len(op.want) + 8*len(op.query.Tokens))
	for _, f := range op.frames {
		size += int64(len(f))
	}
	err := s.ops.Offer(op, size, op.kind)
	if err == nil {
		return
	}
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.status.State == prefix.ShadowAgree {
		s.status.State = prefix.ShadowLost
		s.status.Detail = err.Error()
	}
}

// run applies the queued calls to the reference until ctx ends.
func (s *shadowIndex) run(ctx context.Context) {
	for {
		op, ok := s.ops.Next(ctx)
		if !ok {
			return
		}
		s.compare(op, s.repeat(op))
	}
}

// repeat makes op's call on the reference and encodes its answer.
func (s *shadowIndex) repeat(op evOp) []byte {
	switch op.kind {
	case "live":
		return prefix.EncodeAnswer(s.ref.Live(op.stream, op.frames), nil)
	case "replay":
		return prefix.EncodeAnswer(s.ref.Replay(op.stream, op.frames), nil)
	case "replay_failed":
		return prefix.EncodeAnswer(s.ref.ReplayFailed(op.stream, op.reason), nil)
	case "restart":
		return prefix.EncodeAnswer(s.ref.Restart(op.stream), nil)
	case spec.KVStepAddStream:
		return prefix.EncodeAnswer(outcome(op.kind, s.ref.AddStream(op.config)), nil)
	case spec.KVStepRemoveStream:
		return prefix.EncodeAnswer(outcome(op.kind, s.ref.RemoveStream(op.stream)), nil)
	case "score":
		return prefix.EncodeAnswer(s.ref.Score(op.query))
	}
	d := s.ref.Digest()
	return d[:]
}

func (s *shadowIndex) compare(op evOp, got []byte) {
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.status.State != prefix.ShadowAgree {
		return
	}
	s.status.Compared++
	if string(got) != string(op.want) {
		verb := "%.300s" // answers are JSON; digests are bytes
		if op.kind == "digest" {
			verb = "%x"
		}
		s.status.State = prefix.ShadowDiverged
		s.status.Detail = fmt.Sprintf("%s %s: the index answered "+verb+", its reference shadow "+verb, op.kind, op.stream, op.want, got)
	}
}

func (s *shadowIndex) lost() bool {
	s.smu.Lock()
	defer s.smu.Unlock()
	return s.status.State == prefix.ShadowLost
}

// Status is the shadow's state now.
func (s *shadowIndex) Status() prefix.ShadowStatus {
	s.smu.Lock()
	defer s.smu.Unlock()
	return s.status
}

// withShadow wraps ix in a reference shadow under --verify-state (nil
// shadow otherwise): a reference index over the same streams and bounds.
func withShadow(cfg Config, ix spec.KVEvIndex, streams []spec.KVEvStream) (spec.KVEvIndex, *shadowIndex, error) {
	if cfg.Verify.Rate == 0 || !cfg.Verify.State {
		return ix, nil, nil
	}
	newRef, err := catalog.KVEvIndex(catalog.Ref)
	if err != nil {
		return nil, nil, err
	}
	ref, err := newRef(cfg.EventsIndex, streams)
	if err != nil {
		return nil, nil, configError("EventsIndex.", err)
	}
	sh := newShadowIndex(ix, ref, cfg.Verify)
	return sh, sh, nil
}

func cloneFrames(frames [][]byte) [][]byte {
	out := make([][]byte, len(frames))
	for i, f := range frames {
		out[i] = slices.Clone(f)
	}
	return out
}
