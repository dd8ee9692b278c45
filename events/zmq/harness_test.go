package zmq

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/kvtwin/kvtwin/events/pypub"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// goleakOpts: go-zeromq's PUB (and XPUB) starts a writer goroutine
// (pubMWriter.run) that Close never stops (socket.Close does not close the
// writer; v0.17.0). Only the Go test publisher makes PUB sockets; the
// subscriber's SUB and DEALER sockets have no such goroutine, and goleak
// still checks every other goroutine.
var goleakOpts = []goleak.Option{goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*pubMWriter).run")}

// recIndex wraps the reference index and records every call the subscriber
// makes, as a kvev.apply script. It is not a wire mock: the wire is real.
type recIndex struct {
	spec.KVEvIndex
	mu    sync.Mutex
	steps []spec.KVEvStep
}

func copyFrames(frames [][]byte) []spec.HexBytes {
	out := make([]spec.HexBytes, len(frames))
	for i, f := range frames {
		out[i] = slices.Clone(f)
	}
	return out
}

func (r *recIndex) Live(stream string, frames [][]byte) spec.KVEvStepResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, spec.KVEvStep{Op: spec.KVStepLive, Stream: stream, Frames: copyFrames(frames)})
	return r.KVEvIndex.Live(stream, frames)
}

func (r *recIndex) Replay(stream string, frames [][]byte) spec.KVEvStepResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, spec.KVEvStep{Op: spec.KVStepReplay, Stream: stream, Frames: copyFrames(frames)})
	return r.KVEvIndex.Replay(stream, frames)
}

func (r *recIndex) ReplayFailed(stream, reason string) spec.KVEvStepResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, spec.KVEvStep{Op: spec.KVStepReplayFailed, Stream: stream, Reason: reason})
	return r.KVEvIndex.ReplayFailed(stream, reason)
}

func (r *recIndex) Restart(stream string) spec.KVEvStepResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, spec.KVEvStep{Op: spec.KVStepRestart, Stream: stream})
	return r.KVEvIndex.Restart(stream)
}

// SnapshotReply records a snapshot_reply step (the recorded index wraps
// the reference index, a spec.KVEvBootstrapper).
func (r *recIndex) SnapshotReply(stream string, frames [][]byte) spec.KVEvStepResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, spec.KVEvStep{Op: spec.KVStepSnapshotReply, Stream: stream, Frames: copyFrames(frames)})
	return r.KVEvIndex.(spec.KVEvBootstrapper).SnapshotReply(stream, frames)
}

func (r *recIndex) SnapshotFailed(stream, reason string) spec.KVEvStepResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, spec.KVEvStep{Op: spec.KVStepSnapshotFailed, Stream: stream, Reason: reason})
	return r.KVEvIndex.(spec.KVEvBootstrapper).SnapshotFailed(stream, reason)
}

func (r *recIndex) HeartbeatLost(stream string) spec.KVEvStepResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, spec.KVEvStep{Op: spec.KVStepHeartbeatLost, Stream: stream})
	return r.KVEvIndex.(spec.KVEvBootstrapper).HeartbeatLost(stream)
}

// AddStream records an add_stream step when the index takes the stream (a
// refused add changes nothing, so the script leaves it out).
func (r *recIndex) AddStream(st spec.KVEvStream) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.KVEvIndex.AddStream(st)
	if err == nil {
		r.steps = append(r.steps, spec.KVEvStep{Op: spec.KVStepAddStream, Config: &st})
	}
	return err
}

// RemoveStream records a remove_stream step when the index had the stream.
func (r *recIndex) RemoveStream(name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.KVEvIndex.RemoveStream(name)
	if err == nil {
		r.steps = append(r.steps, spec.KVEvStep{Op: spec.KVStepRemoveStream, Stream: name})
	}
	return err
}

func (r *recIndex) script() []spec.KVEvStep {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.steps)
}

func (r *recIndex) ops() string {
	var b strings.Builder
	for _, s := range r.script() {
		b.WriteString(s.Op)
		if s.Op == spec.KVStepReplayFailed || s.Op == spec.KVStepSnapshotFailed {
			b.WriteString("(" + s.Reason + ")")
		}
		if s.Op == spec.KVStepSnapshotReply {
			if len(s.Frames) >= 1 && len(s.Frames[0]) == 8 {
				fmt.Fprintf(&b, ":%d/%d", int64(binary.BigEndian.Uint64(s.Frames[0])), max(0, len(s.Frames)-2))
			}
		} else if len(s.Frames) >= 2 {
			if sq := s.Frames[len(s.Frames)-2]; len(sq) == 8 {
				b.WriteString(":" + seqString(binary.BigEndian.Uint64(sq)))
			}
		}
		b.WriteByte(' ')
	}
	return b.String()
}

func seqString(s uint64) string {
	if s == ^uint64(0) {
		return "end"
	}
	return strconv.FormatUint(s, 16) + "h"
}

// testOptions are Options shrunk for tests.
func testOptions(t testing.TB) Options {
	level := slog.LevelWarn
	if testing.Verbose() {
		level = slog.LevelDebug
	}
	return Options{
		Logger:         slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: level})),
		ReconnectMin:   10 * time.Millisecond,
		ReconnectMax:   200 * time.Millisecond,
		DialTimeout:    2 * time.Second,
		ReplayTimeout:  3 * time.Second,
		ReplayCooldown: 30 * time.Second,
	}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// env is one subscriber over a recording reference index, running.
type env struct {
	t       *testing.T
	src     Source
	streams []spec.KVEvStream
	ix      *recIndex
	sub     *Subscriber
	run     subRun
	// published is every batch the publisher numbered, in order: the script
	// of the ideal subscriber that received all of them.
	published []spec.KVEvStep
}

func newEnv(t *testing.T, src Source, opts Options) *env {
	t.Helper()
	return newWrappedEnv(t, src, opts, nil)
}

// newWrappedEnv is newEnv whose subscriber calls wrap(recording index)
// instead of the recording index (wrap nil: the index itself): a component
// mutant of the consumer (consumer_test.go) wraps it to call the index as
// a buggy consumer would, and the recording shows what reached it.
func newWrappedEnv(t *testing.T, src Source, opts Options, wrap func(spec.KVEvIndex) spec.KVEvIndex) *env {
	t.Helper()
	streams := Streams([]Source{src})
	inner, err := ref.NewKVEvIndex(spec.KVEvConfig{}, streams)
	if err != nil {
		t.Fatalf("ref.NewKVEvIndex: %v", err)
	}
	e := &env{t: t, src: src, streams: streams, ix: &recIndex{KVEvIndex: inner}}
	var ix spec.KVEvIndex = e.ix
	if wrap != nil {
		ix = wrap(e.ix)
	}
	if e.sub, err = New(ix, []Source{src}, opts); err != nil {
		t.Fatal(err)
	}
	e.run.start(e.sub)
	t.Cleanup(e.stop)
	return e
}

// stop ends Run and waits for it.
func (e *env) stop() { e.run.stop(e.t) }

// subRun is a subscriber's Run on a goroutine of its own, which stop ends
// and waits for: the harness's and the run-time source tests' alike.
type subRun struct {
	cancel context.CancelFunc
	done   chan error
}

// start runs sub until stop.
func (r *subRun) start(sub *Subscriber) {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan error, 1)
	go func() { r.done <- sub.Run(ctx) }()
}

// stop ends Run and waits for it (10 s at most); before start or after
// a stop it does nothing.
func (r *subRun) stop(t *testing.T) {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return 10 s after its context ended")
	}
}

func (e *env) status() SourceStatus { return e.sub.Status()[0] }

func (e *env) stream() spec.KVEvStreamState { return e.ix.State().Streams[0] }

// publish runs c on p and records numbered batches for the ideal script.
func (e *env) publish(p publisher, c pubCmd) pubAck {
	e.t.Helper()
	a := p.do(c)
	if c.Op == "emit" || c.Op == "lose" {
		payload, err := hex.DecodeString(a.Payload)
		if err != nil {
			e.t.Fatal(err)
		}
		e.published = append(e.published, spec.KVEvStep{Op: spec.KVStepLive, Stream: e.src.Name,
			Frames: []spec.HexBytes{[]byte(p.topic()), binary.BigEndian.AppendUint64(nil, a.Seq), payload}})
	}
	return a
}

// waitFor polls cond until it holds or 15 s pass.
func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s; status %+v; stream %+v; calls: %s", what, e.status(), e.stream(), e.ix.ops())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// settle waits until the stream has applied everything before next and
// holds nothing.
func (e *env) settle(next uint64) {
	e.t.Helper()
	e.waitFor("the stream to settle at next="+seqString(next), func() bool {
		st := e.stream()
		return st.Known && st.Next == next && !st.Replaying && st.Held == 0 && !e.status().Replaying
	})
}

// scoreQueries are the prompts compared between indexes: the tokens of every
// store published, and their prefixes.
func (e *env) scoreQueries() []spec.KVEvScoreQuery {
	var qs []spec.KVEvScoreQuery
	seen := map[string]bool{}
	for _, s := range e.published {
		msg, err := ref.KVEvDecode(spec.DefaultLimits(), spec.KVEvDecodeInput{Frames: s.Frames})
		if err != nil {
			continue
		}
		for _, ev := range msg.Batch.Events {
			for n := len(ev.TokenIDs); n > 0; n -= max(1, int(ev.BlockSize)) {
				toks := make([]int64, n)
				for i := range n {
					toks[i] = int64(ev.TokenIDs[i])
				}
				k := fmt.Sprint(toks)
				if !seen[k] {
					seen[k] = true
					qs = append(qs, spec.KVEvScoreQuery{Tokens: toks}, spec.KVEvScoreQuery{Tokens: toks, Exact: true})
				}
			}
		}
	}
	return qs
}

// apply runs a script on a fresh reference index, with score steps for qs
// appended, returning the final state and the scores.
func (e *env) apply(steps []spec.KVEvStep, streams []spec.KVEvStream, qs []spec.KVEvScoreQuery) (spec.KVEvState, [][]spec.KVEvScore) {
	e.t.Helper()
	steps = slices.Clone(steps)
	for _, q := range qs {
		steps = append(steps, spec.KVEvStep{Op: spec.KVStepScore, Tokens: q.Tokens, Namespace: q.Namespace, Group: q.Group, Tier: q.Tier, Exact: q.Exact})
	}
	out, err := ref.KVEvApply(spec.DefaultLimits(), spec.KVEvApplyInput{Streams: streams, Steps: steps})
	if err != nil {
		e.t.Fatalf("ref.KVEvApply: %v", err)
	}
	var scores [][]spec.KVEvScore
	for _, r := range out.Trace[len(out.Trace)-len(qs):] {
		scores = append(scores, r.Scores)
	}
	return out.State, scores
}

// liveScores scores qs on the subscriber-fed index.
func (e *env) liveScores(qs []spec.KVEvScoreQuery) [][]spec.KVEvScore {
	var out [][]spec.KVEvScore
	for _, q := range qs {
		s, err := e.ix.Score(q)
		if err != nil {
			e.t.Fatalf("Score: %v", err)
		}
		out = append(out, s)
	}
	return out
}

// checkRecorded: the subscriber-fed index equals ref.KVEvApply run on the
// script of the calls the subscriber made (state, counters, digest, scores).
func (e *env) checkRecorded() {
	e.t.Helper()
	qs := e.scoreQueries()
	want, wantScores := e.apply(e.ix.script(), e.streams, qs)
	got := e.ix.State()
	if diff := cmp.Diff(want, got); diff != "" {
		e.t.Errorf("subscriber-fed index differs from kvev.apply on its recorded script (-script +live):\n%s", diff)
	}
	if diff := cmp.Diff(wantScores, e.liveScores(qs)); diff != "" {
		e.t.Errorf("scores differ (-script +live):\n%s", diff)
	}
}

// checkIdeal: the subscriber-fed index has the digest and scores of an
// index fed steps (the ideal subscriber's script) over streams.
func (e *env) checkIdeal(steps []spec.KVEvStep, streams []spec.KVEvStream) spec.KVEvState {
	e.t.Helper()
	qs := e.scoreQueries()
	want, wantScores := e.apply(steps, streams, qs)
	got := e.ix.State()
	if want.Digest != got.Digest {
		e.t.Errorf("digest %s, want %s (the ideal script's)\nlive engines: %+v\nideal engines: %+v\ncalls: %s", got.Digest, want.Digest, got.Engines, want.Engines, e.ix.ops())
	}
	if diff := cmp.Diff(wantScores, e.liveScores(qs)); diff != "" {
		e.t.Errorf("scores differ from the ideal script's (-ideal +live):\n%s", diff)
	}
	return got
}

// without returns the published steps minus the given indexes.
func (e *env) without(skip ...int) []spec.KVEvStep {
	var out []spec.KVEvStep
	for i, s := range e.published {
		if !slices.Contains(skip, i) {
			out = append(out, s)
		}
	}
	return out
}

func staleEngines(st spec.KVEvState) []string {
	var out []string
	for _, e := range st.Engines {
		if e.Stale {
			out = append(out, e.Source)
		}
	}
	return out
}

// publisherKinds runs f once per publisher implementation.
func forEachPublisher(t *testing.T, f func(t *testing.T, start func(testing.TB, pubConfig) publisher)) {
	t.Run("go", func(t *testing.T) {
		f(t, func(tb testing.TB, c pubConfig) publisher { return startGoPublisher(tb, c) })
	})
	t.Run("python", func(t *testing.T) {
		pypub.Require(t)
		f(t, func(tb testing.TB, c pubConfig) publisher { return startPyPublisher(tb, c) })
	})
}
