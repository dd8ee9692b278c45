package server

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/kvtwin/kvtwin/events/scaleout"
)

// EventsReadiness is /readyz's account of the event sources: a replica
// that knows nothing yet must not take traffic (docs/events.md
// "Readiness").
type EventsReadiness struct {
	// CaughtUp says every source has applied its backlog: a ZeroMQ source
	// is connected and has applied a live message or a replay with none
	// outstanding; a JetStream replica consumes with at most
	// EventsReadyLag messages pending. Once true it stays true: later lag
	// is the index's staleness to report, not a reason to leave rotation.
	CaughtUp bool `json:"caught_up"`
	// GraceLeft is how long /readyz still waits for the sources before it
	// reports ready without them ("0s" once it stopped waiting).
	GraceLeft string `json:"grace_left"`
	// Sources are those not caught up, with the reason.
	Sources []SourceReadiness `json:"sources"`
}

// SourceReadiness is one source that has not caught up, and why.
type SourceReadiness struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// readyLatch remembers that the sources caught up once.
type readyLatch struct {
	since  atomic.Int64 // Serve's start, unix nanoseconds; 0 before Serve
	caught atomic.Bool
}

// eventsReadiness reports the sources' catch-up, and whether it holds
// /readyz back: while some source lags and the grace period (from Serve's
// start) has not passed.
func (s *Server) eventsReadiness() (*EventsReadiness, bool) {
	if s.events == nil {
		return nil, false
	}
	er := &EventsReadiness{Sources: s.events.lagging(s.cfg.EventsReadyLag)}
	if s.ready.caught.Load() || len(er.Sources) == 0 {
		s.ready.caught.Store(true)
		er.CaughtUp, er.GraceLeft, er.Sources = true, "0s", []SourceReadiness{}
		return er, false
	}
	left := s.cfg.EventsReadyGrace
	if since := s.ready.since.Load(); since != 0 {
		left -= time.Since(time.Unix(0, since))
	}
	left = max(left, 0)
	er.GraceLeft = left.Round(time.Millisecond).String()
	return er, left > 0
}

// lagging lists the sources that have not applied their backlog.
func (e *events) lagging(maxLag uint64) []SourceReadiness {
	out := []SourceReadiness{}
	if e.rep != nil {
		st := e.rep.Status()
		switch {
		case st.Phase != scaleout.PhaseConsuming:
			out = append(out, SourceReadiness{Name: st.Stream, Reason: "replica " + st.Phase})
		case st.Pending > maxLag:
			out = append(out, SourceReadiness{Name: st.Stream, Reason: fmt.Sprintf("%d messages pending behind the stream head (ready at <= %d)", st.Pending, maxLag)})
		}
		return out
	}
	for _, ss := range e.sub.Status() {
		switch {
		case !ss.Connected:
			out = append(out, SourceReadiness{Name: ss.Name, Reason: "not connected to " + ss.Endpoint})
		case ss.Replaying:
			out = append(out, SourceReadiness{Name: ss.Name, Reason: "a replay is outstanding"})
		case ss.Messages == 0 && ss.ReplaysOK == 0:
			out = append(out, SourceReadiness{Name: ss.Name, Reason: "no live message or replay applied yet"})
		}
	}
	return out
}
