package zmq

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/kvtwin/kvtwin/spec"
)

// stream runs one source: a SUB goroutine (connect, receive, reconnect with
// backoff) hands messages over an unbuffered channel to the stream's own
// goroutine, which alone calls the index for this stream (in order, as
// spec.KVEvIndex requires) and owns the DEALERs and the replay and
// snapshot state (snapshot.go).
type stream struct {
	src    Source
	ix     spec.KVEvIndex
	o      Options
	log    *slog.Logger
	subEP  string // the PUB endpoint in the guarded scheme
	replEP string // the replay endpoint in the guarded scheme, "" when none
	snapEP string // the snapshot endpoint in its guarded scheme, "" when none
	// boot is the index as a bootstrapper, nil when it is not one (New
	// then refused a snapshot endpoint).
	boot spec.KVEvBootstrapper
	// acct is the source's share of the subscriber's byte budget, rl the
	// limiter of its log lines about refusals.
	acct *account
	rl   *rateLimit

	mu sync.Mutex
	st SourceStatus

	// restart carries Subscriber.Restart's signal to run's goroutine;
	// signals that arrive before it is taken coalesce.
	restart chan struct{}
	// cancel ends the stream's goroutines and done is closed once they
	// have ended; both nil until Subscriber.start runs them (set and read
	// under the Subscriber's mu).
	cancel context.CancelFunc
	done   chan struct{}

	// Owned by run's goroutine.
	dealer    *dealerConn
	replaying bool
	cooldown  time.Time // replay requests before it are answered "unavailable"
	timer     *time.Timer
	// replayEnd is when the outstanding replay fails whatever it receives
	// (ReplayMaxDuration after its request).
	replayEnd time.Time
	// The snapshot request's state (snapshot.go): a fresh DEALER per
	// request, whether one is outstanding, its timer, the cooldown after a
	// failure, the heartbeat timer of the live socket, and whether the
	// current silence was reported.
	snapDealer   *dealerConn
	snapshotting bool
	snapTimer    *time.Timer
	snapCooldown time.Time
	heartbeat    *time.Timer
	silent       bool
	// held mirrors the index's hold queue: the bytes of each message it
	// holds for this stream, oldest first (budget.go).
	held []int64
}

// liveMsg is a SUB message and its bytes, which the stream owns in the
// budget once it has it.
type liveMsg struct {
	m zmq4.Msg
	n int64
}

func newStream(src Source, ix spec.KVEvIndex, o Options, scheme, snapScheme string, b *byteBudget) *stream {
	s := &stream{
		src:     src,
		ix:      ix,
		o:       o,
		log:     o.Logger.With("source", src.Name),
		subEP:   guardedEndpoint(scheme, src.Endpoint),
		acct:    &account{b: b},
		rl:      &rateLimit{interval: o.LogInterval},
		restart: make(chan struct{}, 1),
		st:      SourceStatus{Name: src.Name, Endpoint: src.Endpoint, Replay: src.Replay, Snapshot: src.Snapshot, Rank: src.Rank, Topic: src.Topic},
	}
	if src.Replay != "" {
		s.replEP = guardedEndpoint(scheme, src.Replay)
	}
	if src.Snapshot != "" {
		s.snapEP = guardedEndpoint(snapScheme, src.Snapshot)
	}
	s.boot, _ = ix.(spec.KVEvBootstrapper)
	return s
}

func (s *stream) status() SourceStatus {
	s.mu.Lock()
	st := s.st
	s.mu.Unlock()
	st.BufferedBytes = s.acct.buffered.Load()
	st.BufferOverflows = s.acct.overflows.Load()
	st.LogSuppressed = s.rl.total()
	return st
}

// refusal logs one line about a refusal (a message, batch or event the
// index or a bound refused, a step error, a connection a bound cut),
// unless the source already logged one within LogInterval; the lines held
// back are counted and reported with the next one.
func (s *stream) refusal(level slog.Level, msg string, attrs ...any) {
	ok, heldBack := s.rl.allow(time.Now())
	if !ok {
		return
	}
	if heldBack > 0 {
		attrs = append(attrs, "held_back", heldBack)
	}
	s.log.Log(context.Background(), level, msg, attrs...)
}

func (s *stream) update(f func(st *SourceStatus)) {
	s.mu.Lock()
	f(&s.st)
	s.mu.Unlock()
}

func (s *stream) setError(err string) {
	s.update(func(st *SourceStatus) {
		st.LastError = err
		st.LastErrorAt = time.Now()
	})
}

// run is the stream's goroutine; it returns when ctx ends, after the SUB
// goroutine and the DEALER are gone.
func (s *stream) run(ctx context.Context) {
	live := make(chan liveMsg)
	var wg sync.WaitGroup
	wg.Go(func() { s.subLoop(ctx, live) })
	defer s.releaseHeld()
	defer wg.Wait()
	defer s.closeDealer()
	defer s.closeSnapDealer()

	s.timer = time.NewTimer(time.Hour)
	s.timer.Stop()
	defer s.timer.Stop()
	s.snapTimer = time.NewTimer(time.Hour)
	s.snapTimer.Stop()
	defer s.snapTimer.Stop()
	// The heartbeat bound runs from the start: a source that never says
	// anything is silent too (the index ignores the loss until its cursor
	// is known).
	s.heartbeat = time.NewTimer(s.o.HeartbeatTimeout)
	defer s.heartbeat.Stop()
	for {
		var replies, snapReplies <-chan received
		if s.dealer != nil {
			replies = s.dealer.msgs
		}
		if s.snapDealer != nil {
			snapReplies = s.snapDealer.msgs
		}
		var timeout, snapTimeout, silence <-chan time.Time
		if s.replaying {
			timeout = s.timer.C
		}
		if s.snapshotting {
			snapTimeout = s.snapTimer.C
		}
		if s.snapEP != "" && !s.silent {
			silence = s.heartbeat.C
		}
		select {
		case <-ctx.Done():
			return
		case m := <-live:
			s.onLive(ctx, m)
		case r := <-replies:
			s.onReply(ctx, r)
		case r := <-snapReplies:
			s.onSnapshotReply(ctx, r)
		case <-snapTimeout:
			s.log.Warn("snapshot request timed out", "after", s.o.SnapshotTimeout)
			s.setError("snapshot: no reply within " + s.o.SnapshotTimeout.String())
			s.failSnapshot(ctx, spec.ReplayReasonTimeout)
		case <-silence:
			s.onSilence(ctx)
		case <-s.restart:
			s.onRestart(ctx)
		case <-timeout:
			if !time.Now().Before(s.replayEnd) {
				s.log.Warn("replay ran past its bound without a sentinel", "bound", s.o.ReplayMaxDuration)
				s.setError("replay: no sentinel within " + s.o.ReplayMaxDuration.String())
			} else {
				s.log.Warn("replay timed out", "after", s.o.ReplayTimeout)
				s.setError("replay: no reply within " + s.o.ReplayTimeout.String())
			}
			s.fail(ctx, spec.ReplayReasonTimeout)
		}
	}
}

// resetReplayTimer arms the replay's timer: ReplayTimeout from now, or the
// replay's end (ReplayMaxDuration after its request) if that comes first.
func (s *stream) resetReplayTimer() {
	s.timer.Reset(max(0, min(s.o.ReplayTimeout, time.Until(s.replayEnd))))
}

// releaseHeld returns the bytes of the messages the index still holds for
// this stream when the stream ends.
func (s *stream) releaseHeld() {
	for _, n := range s.held {
		s.acct.release(n)
	}
	s.held = nil
}

// settle keeps the budget in step with the index after one of its results
// (budget.go): the message passed to the call, cur bytes (0 when none), is
// held when the index's hold queue grew, and released otherwise; messages
// that left the hold queue (applied, dropped, abandoned) are released. The
// index's queue keeps arrival order and always keeps its newest messages
// (A7: a drain stops at the message that starts the next replay and keeps
// the rest), so its length after the call says which ones left.
func (s *stream) settle(r spec.KVEvStepResult, cur int64) {
	if r.Held > len(s.held) {
		s.held = append(s.held, cur)
		cur = 0
		if r.Held != len(s.held) {
			s.log.Error("the subscriber's copy of the hold queue disagrees with the index", "copy", len(s.held), "index", r.Held)
		}
	}
	s.acct.release(cur)
	if drop := len(s.held) - r.Held; drop > 0 {
		for _, n := range s.held[:drop] {
			s.acct.release(n)
		}
		s.held = s.held[drop:]
	}
}

// subLoop keeps a SUB socket connected to the source and hands every
// message to live until ctx ends.
func (s *stream) subLoop(ctx context.Context, live chan<- liveMsg) {
	backoff := s.o.ReconnectMin
	failing := false // the last dial failed: log the next failures at debug level
	wait := func() bool {
		t := time.NewTimer(backoff)
		defer t.Stop()
		backoff = min(2*backoff, s.o.ReconnectMax)
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
	for ctx.Err() == nil {
		led := newLedger(s.acct)
		sck := zmq4.NewSub(withLedger(ctx, led), newSocketOptions(s.o, s.log)...)
		_ = sck.SetOption(zmq4.OptionSubscribe, s.src.Topic)
		if err := sck.Dial(s.subEP); err != nil {
			closeSocket(sck)
			led.close()
			if ctx.Err() != nil {
				return
			}
			s.update(func(st *SourceStatus) { st.DialFailures++ })
			s.setError("connect " + s.src.Endpoint + ": " + err.Error())
			level := slog.LevelWarn
			if failing {
				level = slog.LevelDebug
			}
			failing = true
			s.log.Log(ctx, level, "connect failed", "endpoint", s.src.Endpoint, "err", err, "retry_in", backoff)
			if !wait() {
				return
			}
			continue
		}
		failing = false
		s.update(func(st *SourceStatus) {
			st.Connected = true
			st.ConnectedSince = time.Now()
			if st.Connects++; st.Connects > 1 {
				st.Reconnects++
			}
		})
		s.log.Info("connected", "endpoint", s.src.Endpoint)
		delivered, err := s.receive(ctx, sck, led, live)
		closeSocket(sck)
		led.close()
		if delivered {
			// A connection that worked resets the backoff; one that fails
			// before its first message (a peer that trips the guard at
			// once) keeps doubling it.
			backoff = s.o.ReconnectMin
		}
		s.update(func(st *SourceStatus) {
			st.Connected = false
			st.ConnectedSince = time.Time{}
		})
		if ctx.Err() != nil {
			return
		}
		s.update(func(st *SourceStatus) { st.Disconnects++ })
		s.setError("connection to " + s.src.Endpoint + " lost: " + err.Error())
		if isFrameBounds(err) {
			s.refusal(slog.LevelError, "publisher sent a message past the bounds, or the buffer budget had no room; reconnecting", "endpoint", s.src.Endpoint, "err", err, "retry_in", backoff)
		} else {
			s.log.Warn("disconnected", "endpoint", s.src.Endpoint, "err", err, "retry_in", backoff)
		}
		if !wait() {
			return
		}
	}
}

// receive hands messages to live until the socket fails or ctx ends, and
// says whether it handed over any. Each message's bytes move from the
// socket's ledger to the stream as it is received.
func (s *stream) receive(ctx context.Context, sck zmq4.Socket, led *ledger, live chan<- liveMsg) (bool, error) {
	for delivered := false; ; delivered = true {
		m, err := sck.Recv()
		if err != nil {
			return delivered, err
		}
		n := msgBytes(m.Frames)
		led.take(n)
		select {
		case live <- liveMsg{m, n}:
		case <-ctx.Done():
			s.acct.release(n)
			return true, ctx.Err()
		}
	}
}

// onLive passes one SUB message to the index.
func (s *stream) onLive(ctx context.Context, lm liveMsg) {
	m := lm.m
	if m.Type == zmq4.CmdMsg {
		s.acct.release(lm.n)
		return // a ZMTP command (PING) that go-zeromq hands up as a message
	}
	if len(m.Frames) > 0 && !bytes.HasPrefix(m.Frames[0], []byte(s.src.Topic)) {
		// go-zeromq's SUB does not filter; a PUB does, but not every peer is one.
		s.acct.release(lm.n)
		s.update(func(st *SourceStatus) { st.Filtered++ })
		return
	}
	s.heard()
	s.update(func(st *SourceStatus) {
		st.Messages++
		if len(m.Frames) == 3 && len(m.Frames[1]) == 8 {
			st.SeqSeen = true
			st.LastSeq = binary.BigEndian.Uint64(m.Frames[1])
		}
	})
	s.handle(ctx, s.ix.Live(s.src.Name, m.Frames), lm.n)
}

// onRestart passes an operator's restart signal to the index (§3.4). The
// index abandons an outstanding replay (§2.10 A7), so its replies, if any
// are in flight, must never be read: the DEALER is recreated.
func (s *stream) onRestart(ctx context.Context) {
	if s.replaying {
		s.closeDealer()
		s.replaying = false
		s.timer.Stop()
		s.update(func(st *SourceStatus) { st.Replaying = false })
	}
	if s.snapshotting {
		// The index abandons the snapshot request too (§3.4).
		s.abandonSnapshot()
	}
	s.log.Info("restart signal")
	s.handle(ctx, s.ix.Restart(s.src.Name), 0)
}

// onReply passes one DEALER reply to the index, or handles the DEALER's end.
func (s *stream) onReply(ctx context.Context, r received) {
	if r.err != nil {
		// The replay connection is gone (the publisher went away). A replay
		// in flight gets no more frames: the timer ends it as a timeout.
		s.log.Warn("replay connection lost", "endpoint", s.src.Replay, "err", r.err)
		s.setError("replay connection to " + s.src.Replay + " lost: " + r.err.Error())
		s.closeDealer()
		return
	}
	if r.msg.Type == zmq4.CmdMsg {
		s.acct.release(r.n)
		return
	}
	s.update(func(st *SourceStatus) { st.ReplayReplies++ })
	res := s.ix.Replay(s.src.Name, r.msg.Frames)
	if res.Error != nil && res.Error.Code == spec.ErrReplayProtocol.Code() {
		s.settle(res, r.n)
		s.setError("replay: " + res.Error.Message)
		s.update(func(st *SourceStatus) { st.StepErrors++ })
		if !s.replaying {
			// A reply nobody asked for: the index ignored it; start the
			// next replay on a clean socket.
			s.refusal(slog.LevelWarn, "replay reply while no replay is outstanding", "err", res.Error.Message)
			s.closeDealer()
			return
		}
		s.refusal(slog.LevelWarn, "malformed replay reply", "err", res.Error.Message)
		s.fail(ctx, spec.ReplayReasonProtocol)
		return
	}
	if s.replaying {
		s.resetReplayTimer()
	}
	s.handle(ctx, res, r.n)
}

// handle acts on one index result for a call that was passed cur bytes of
// message (0: none): the budget, a finished replay, and a replay or
// snapshot request (which may come from a result that also finished a
// replay or a snapshot); a request that cannot go out is reported failed
// at once, and the index's answer to that acted on in turn.
func (s *stream) handle(ctx context.Context, r spec.KVEvStepResult, cur int64) {
	for {
		s.settle(r, cur)
		cur = 0
		s.note(r)
		if r.ReplayDone {
			s.replaying = false
			s.timer.Stop()
			s.cooldown = time.Time{}
			s.update(func(st *SourceStatus) {
				st.Replaying = false
				st.ReplaysOK++
				st.ReplayCooldownTill = time.Time{}
			})
			s.log.Info("replay done", "applied", len(r.Applied), "lost", len(r.Lost))
		}
		if r.SnapshotDone {
			s.log.Info("snapshot installed", "applied", len(r.Applied), "lost", len(r.Lost))
		}
		switch {
		case len(r.ReplayRequest) > 0:
			reason := s.request(ctx, r.ReplayRequest)
			if reason == "" {
				return
			}
			r = s.replayFailed(reason)
		case len(r.SnapshotRequest) > 0:
			if s.boot == nil {
				// New refuses a snapshot endpoint over such an index; an
				// index whose stream has the flag anyway cannot be answered.
				s.log.Error("the index asked for a snapshot but does not implement spec.KVEvBootstrapper; its held messages wait for a restart")
				return
			}
			reason := s.requestSnapshot(ctx, r.SnapshotRequest)
			if reason == "" {
				return
			}
			r = s.snapshotFailed(reason)
		default:
			return
		}
	}
}

// note records what a result says for status and logs: a step error and
// every refused batch or event, through the source's log limiter.
func (s *stream) note(r spec.KVEvStepResult) {
	if r.Error != nil {
		s.update(func(st *SourceStatus) {
			st.StepErrors++
			st.LastError = "index: " + r.Error.Message
			st.LastErrorAt = time.Now()
		})
		s.refusal(slog.LevelWarn, "index refused a step", refusalAttrs(r.Op, nil, *r.Error)...)
	}
	for _, e := range r.Errors {
		if e.Event < 0 {
			s.update(func(st *SourceStatus) {
				st.RefusedBatches++
				if e.Error.Code == spec.ErrMessageBudget.Code() {
					st.OversizedMessages++
				}
				st.LastError = "index: " + e.Error.Message
				st.LastErrorAt = time.Now()
			})
			s.refusal(slog.LevelWarn, "index refused a batch", refusalAttrs(r.Op, &e, e.Error)...)
			continue
		}
		s.refusal(slog.LevelWarn, "index refused an event", refusalAttrs(r.Op, &e, e.Error)...)
	}
	if r.Restart {
		s.log.Info("publisher restart: the stream's engines were dropped")
	}
	for _, g := range r.Lost {
		s.log.Warn("events lost: engines marked stale", "from", g.From, "to", g.To)
	}
}

// refusalAttrs are the log attributes of an index refusal: the step's op,
// the seq and event of a refused batch or event (e nil for a step error),
// and the error's code, field, value and bound; an error about an engine
// (ErrEngineBudget, ErrEngineOwner) names it as "engine".
func refusalAttrs(op string, e *spec.KVEvEventError, o spec.ErrorObject) []any {
	attrs := []any{"op", op}
	if e != nil {
		attrs = append(attrs, "seq", e.Seq, "event", e.Event)
	}
	attrs = append(attrs, "code", o.Code, "field", o.Field, "value", o.Value, "bound", o.Bound)
	if e != nil && e.Engine != nil {
		// A batch refused for its engine (§2.10 A2): which engine; the
		// bound names the stream's share.
		attrs = append(attrs, "engine", fmt.Sprintf("%s/%d", e.Engine.Source, e.Engine.DPRank))
	} else if o.Field == "engine" {
		attrs = append(attrs, "engine", o.Value)
	}
	return attrs
}

// request sends a replay request, returning "" when it went out or the
// reason to report to the index when it did not.
func (s *stream) request(ctx context.Context, req []spec.HexBytes) string {
	if s.replaying {
		// A new request while replies to the last may be in flight: start
		// over on a fresh socket so none of them is taken for this one.
		s.closeDealer()
		s.timer.Stop()
	}
	s.replaying = true
	s.replayEnd = time.Now().Add(s.o.ReplayMaxDuration)
	s.update(func(st *SourceStatus) { st.Replaying = true })
	switch {
	case s.replEP == "":
		s.log.Warn("the index asked for a replay but the source has no replay endpoint")
		return spec.ReplayReasonUnavailable
	case time.Now().Before(s.cooldown):
		s.log.Debug("replay requested during the cooldown", "until", s.cooldown)
		return spec.ReplayReasonUnavailable
	}
	frames := make([][]byte, len(req))
	for i, f := range req {
		frames[i] = f
	}
	if s.dealer == nil {
		d, err := dialDealer(ctx, s.replEP, s.o, s.log, s.acct)
		if err != nil {
			s.log.Warn("replay connect failed", "endpoint", s.src.Replay, "err", err)
			s.setError("replay connect " + s.src.Replay + ": " + err.Error())
			s.startCooldown()
			return spec.ReplayReasonUnavailable
		}
		s.dealer = d
	}
	if err := s.dealer.send(frames); err != nil {
		s.log.Warn("replay request failed", "endpoint", s.src.Replay, "err", err)
		s.setError("replay send " + s.src.Replay + ": " + err.Error())
		s.closeDealer()
		s.startCooldown()
		return spec.ReplayReasonUnavailable
	}
	s.update(func(st *SourceStatus) { st.ReplayRequests++ })
	s.resetReplayTimer()
	s.log.Debug("replay requested", "start", binaryStart(frames))
	return ""
}

// fail ends the outstanding replay with reason (timeout or protocol): the
// DEALER is recreated and replays back off.
func (s *stream) fail(ctx context.Context, reason string) {
	s.closeDealer()
	s.startCooldown()
	s.handle(ctx, s.replayFailed(reason), 0)
}

// replayFailed reports a failed replay to the index.
func (s *stream) replayFailed(reason string) spec.KVEvStepResult {
	s.replaying = false
	s.timer.Stop()
	s.update(func(st *SourceStatus) {
		st.Replaying = false
		st.ReplaysFailed++
		countReason(reason, &st.ReplayTimeouts, &st.ReplayProtocol, &st.ReplayUnavailable)
	})
	return s.ix.ReplayFailed(s.src.Name, reason)
}

// countReason adds one to the counter of a failed request's reason: a
// timeout, a protocol error, or (any other reason) the source unavailable.
// The replay and the snapshot requests each keep the three.
func countReason(reason string, timeouts, protocol, unavailable *uint64) {
	switch reason {
	case spec.ReplayReasonTimeout:
		*timeouts++
	case spec.ReplayReasonProtocol:
		*protocol++
	default:
		*unavailable++
	}
}

func (s *stream) startCooldown() {
	s.cooldown = time.Now().Add(s.o.ReplayCooldown)
	s.update(func(st *SourceStatus) { st.ReplayCooldownTill = s.cooldown })
}

func (s *stream) closeDealer() {
	if s.dealer != nil {
		s.dealer.close()
		s.dealer = nil
	}
}

// binaryStart is the start seq of a well-formed request, for logs.
func binaryStart(frames [][]byte) uint64 {
	if len(frames) == 2 && len(frames[1]) == 8 {
		return binary.BigEndian.Uint64(frames[1])
	}
	return 0
}
