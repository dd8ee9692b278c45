package zmq

import (
	"context"
	"log/slog"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/kvtwin/kvtwin/spec"
)

// vLLM's snapshot bootstrap on the subscriber's side (docs/spec/kv-events.md
// §3.5 [uncertain], §2.10 A13). The index decides when to ask and what a
// reply means; the stream's goroutine owns the socket, the clock and the
// cooldown.
//
// Socket. vLLM's example client uses a REQ socket, a fresh one per retry.
// The subscriber uses a DEALER instead and sends REQ's envelope itself,
// ["", "snapshot"]: a REP socket needs only that empty delimiter, and the
// reply comes back as ["", seq, publisher_id, chunk…]. A DEALER lets the
// snapshot share the replay's receive goroutine, byte accounting and close
// handling (sockets.go), and needs no strict send/receive alternation,
// which go-zeromq's REQ would impose on a request abandoned by a timeout.
// Like the example, every request dials a fresh socket, closed once the
// request ends, so a late reply to an abandoned request is never read.
//
// Bounds. The reply is one message of up to max_held chunks and
// max_held_bytes bytes (§2.10 A13), far past Options.MaxFrames and, with
// the defaults, as large as MaxMessageBytes: the snapshot connection has a
// guarded scheme of its own (SnapshotMaxChunks + 3 frames,
// SnapshotMaxBytes bytes), and its frames are reserved in the byte budget
// like every other (budget.go).

// requestSnapshot sends a snapshot request on a fresh DEALER, returning ""
// when it went out or the reason to report to the index when it did not.
func (s *stream) requestSnapshot(ctx context.Context, req []spec.HexBytes) string {
	// One request at a time: a new one ends the socket of the last.
	s.closeSnapDealer()
	s.snapTimer.Stop()
	s.snapshotting = true
	s.update(func(st *SourceStatus) { st.Snapshotting = true })
	switch {
	case s.snapEP == "":
		s.log.Warn("the index asked for a snapshot but the source has no snapshot endpoint")
		return spec.ReplayReasonUnavailable
	case time.Now().Before(s.snapCooldown):
		s.log.Debug("snapshot requested during the cooldown", "until", s.snapCooldown)
		return spec.ReplayReasonUnavailable
	}
	d, err := dialDealer(ctx, s.snapEP, s.o, s.log, s.acct)
	if err != nil {
		s.log.Warn("snapshot connect failed", "endpoint", s.src.Snapshot, "err", err)
		s.setError("snapshot connect " + s.src.Snapshot + ": " + err.Error())
		s.startSnapCooldown()
		return spec.ReplayReasonUnavailable
	}
	s.snapDealer = d
	frames := make([][]byte, 0, 1+len(req))
	frames = append(frames, nil) // REQ's empty delimiter, which REP expects
	for _, f := range req {
		frames = append(frames, f)
	}
	if err := d.send(frames); err != nil {
		s.log.Warn("snapshot request failed", "endpoint", s.src.Snapshot, "err", err)
		s.setError("snapshot send " + s.src.Snapshot + ": " + err.Error())
		s.closeSnapDealer()
		s.startSnapCooldown()
		return spec.ReplayReasonUnavailable
	}
	s.update(func(st *SourceStatus) { st.SnapshotRequests++ })
	s.snapTimer.Reset(s.o.SnapshotTimeout)
	s.log.Info("snapshot requested", "endpoint", s.src.Snapshot)
	return ""
}

// onSnapshotReply passes the snapshot DEALER's reply to the index, or
// handles the socket's end.
func (s *stream) onSnapshotReply(ctx context.Context, r received) {
	if r.err != nil {
		// The connection is gone and with it the reply: no need to wait
		// for the timer.
		s.log.Warn("snapshot connection lost", "endpoint", s.src.Snapshot, "err", r.err)
		s.setError("snapshot connection to " + s.src.Snapshot + " lost: " + r.err.Error())
		s.closeSnapDealer()
		if s.snapshotting {
			s.failSnapshot(ctx, spec.ReplayReasonUnavailable)
		}
		return
	}
	if r.msg.Type == zmq4.CmdMsg {
		s.acct.release(r.n)
		return
	}
	s.update(func(st *SourceStatus) { st.SnapshotReplies++ })
	frames := r.msg.Frames
	if len(frames) == 0 || len(frames[0]) != 0 {
		// A REP reply starts with the delimiter the request carried.
		s.acct.release(r.n)
		s.setError("snapshot: a reply without the empty delimiter frame")
		s.update(func(st *SourceStatus) { st.StepErrors++ })
		s.refusal(slog.LevelWarn, "malformed snapshot reply: no empty delimiter frame", "frames", len(frames))
		s.failSnapshot(ctx, spec.ReplayReasonProtocol)
		return
	}
	res := s.boot.SnapshotReply(s.src.Name, frames[1:])
	if res.Error != nil && res.Error.Code == spec.ErrSnapshotProtocol.Code() {
		// The index changed nothing and still waits (A13): report the
		// failure, unless no request was outstanding.
		s.settle(res, r.n)
		s.setError("snapshot: " + res.Error.Message)
		s.update(func(st *SourceStatus) { st.StepErrors++ })
		if !s.snapshotting {
			s.refusal(slog.LevelWarn, "snapshot reply while no snapshot is outstanding", "err", res.Error.Message)
			s.closeSnapDealer()
			return
		}
		s.refusal(slog.LevelWarn, "malformed snapshot reply", "err", res.Error.Message)
		s.failSnapshot(ctx, spec.ReplayReasonProtocol)
		return
	}
	// The request has ended, installed or not: one reply per request.
	s.closeSnapDealer()
	s.snapshotting = false
	s.snapTimer.Stop()
	if res.SnapshotDone {
		s.snapCooldown = time.Time{}
		s.update(func(st *SourceStatus) {
			st.Snapshotting = false
			st.SnapshotsOK++
			st.SnapshotCooldownTill = time.Time{}
		})
	} else {
		// seq < -1 (the publisher has none), or a chunk that did not
		// decode (reported in res.Errors): a failure like any other.
		reason := spec.ReplayReasonUnavailable
		if len(res.Errors) > 0 {
			reason = spec.ReplayReasonProtocol
		}
		s.log.Warn("snapshot not installed", "unavailable", reason == spec.ReplayReasonUnavailable, "errors", len(res.Errors))
		s.startSnapCooldown()
		s.update(func(st *SourceStatus) {
			st.Snapshotting = false
			st.SnapshotsFailed++
			countReason(reason, &st.SnapshotTimeouts, &st.SnapshotProtocol, &st.SnapshotUnavailable)
		})
	}
	s.handle(ctx, res, r.n)
}

// failSnapshot ends the outstanding snapshot request with reason
// (timeout, protocol, unavailable): its socket is closed and snapshot
// requests back off.
func (s *stream) failSnapshot(ctx context.Context, reason string) {
	s.closeSnapDealer()
	s.startSnapCooldown()
	s.handle(ctx, s.snapshotFailed(reason), 0)
}

// snapshotFailed reports a failed snapshot request to the index.
func (s *stream) snapshotFailed(reason string) spec.KVEvStepResult {
	s.snapshotting = false
	s.snapTimer.Stop()
	s.update(func(st *SourceStatus) {
		st.Snapshotting = false
		st.SnapshotsFailed++
		countReason(reason, &st.SnapshotTimeouts, &st.SnapshotProtocol, &st.SnapshotUnavailable)
	})
	return s.boot.SnapshotFailed(s.src.Name, reason)
}

// abandonSnapshot forgets the outstanding request without telling the
// index (a restart signal, which abandons it in the index too).
func (s *stream) abandonSnapshot() {
	s.closeSnapDealer()
	s.snapshotting = false
	s.snapTimer.Stop()
	s.update(func(st *SourceStatus) { st.Snapshotting = false })
}

func (s *stream) startSnapCooldown() {
	s.snapCooldown = time.Now().Add(s.o.ReplayCooldown)
	s.update(func(st *SourceStatus) { st.SnapshotCooldownTill = s.snapCooldown })
}

func (s *stream) closeSnapDealer() {
	if s.snapDealer != nil {
		s.snapDealer.close()
		s.snapDealer = nil
	}
}

// heard restarts the heartbeat bound at a live message (sources with a
// snapshot endpoint): the silence, if one was reported, is over.
func (s *stream) heard() {
	if s.snapEP == "" {
		return
	}
	s.silent = false
	s.heartbeat.Reset(s.o.HeartbeatTimeout)
}

// onSilence reports a live socket silent past HeartbeatTimeout to the
// index, once per silence (§3.5, §2.10 A13): the next live message then
// asks for a snapshot, when the stream's cursor is known and no reply is
// awaited. A publisher with vLLM's snapshot service sends heartbeats when
// idle; one that sends none costs a snapshot after every idle spell longer
// than the bound.
func (s *stream) onSilence(ctx context.Context) {
	s.silent = true
	s.update(func(st *SourceStatus) { st.HeartbeatsLost++ })
	s.log.Info("live socket silent past the heartbeat bound", "bound", s.o.HeartbeatTimeout)
	s.handle(ctx, s.boot.HeartbeatLost(s.src.Name), 0)
}
