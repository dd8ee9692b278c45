package server

import (
	"net/http"

	"github.com/kvtwin/kvtwin/catalog"
)

// healthBody is the /healthz answer: the process is alive and serving HTTP.
type healthBody struct {
	Status string `json:"status"`
}

func (s *Server) handleHealthz(w http.ResponseWriter, _ *http.Request) {
	b, _ := encode(healthBody{Status: "ok"})
	writeBody(w, http.StatusOK, b)
}

// ImplStatus is the /readyz view of one implementation.
type ImplStatus struct {
	// Impl is the implementation name.
	Impl catalog.Impl `json:"impl"`
	// Available reports that every served op has this implementation in this build.
	Available bool `json:"available"`
	// Ops counts the served ops that have it.
	Ops int `json:"ops"`
	// Reason says why it is unavailable, from the catalog (e.g. built without -tags cuda).
	Reason string `json:"reason,omitempty"`
}

// Readiness is the /readyz body.
type Readiness struct {
	// Status is "ready"; "catching_up" while an event source has not
	// applied its backlog (Events); "draining" once shutdown began. Both
	// of the latter answer 503.
	Status string `json:"status"`
	// Impl is the configured default implementation.
	Impl catalog.Impl `json:"impl"`
	// Impls reports ref, fast and cuda in that order.
	Impls []ImplStatus `json:"impls"`
	// Events is the event sources' catch-up; while one lags within
	// EventsReadyGrace, Status is "catching_up" and the code 503.
	Events *EventsReadiness `json:"events,omitempty"`
	// Shadows lists the prefix pools whose reference shadow (serve
	// --verify-state) diverged or was lost; they keep serving, and the
	// server stays ready: the operator decides.
	Shadows *DivergedPools `json:"shadows,omitempty"`
}

// readiness reports, per implementation, whether every op has it. Entries
// are fixed at New, so this describes the build and the device found at
// start-up; a draining server is not ready whatever its implementations.
func (s *Server) readiness() (Readiness, int) {
	rd := Readiness{Status: "ready", Impl: s.cfg.Impl, Impls: make([]ImplStatus, 0, len(allImpls()))}
	for _, impl := range allImpls() {
		st := ImplStatus{Impl: impl, Available: true}
		for _, o := range s.ops {
			if reason := o.unavailable[impl]; reason != nil {
				if st.Available {
					st.Reason = reason.Error()
				}
				st.Available = false
				continue
			}
			st.Ops++
		}
		rd.Impls = append(rd.Impls, st)
	}
	rd.Shadows = s.shadowReport()
	ev, hold := s.eventsReadiness()
	rd.Events = ev
	if s.draining.Load() {
		rd.Status = "draining"
		return rd, http.StatusServiceUnavailable
	}
	if hold {
		rd.Status = "catching_up"
		return rd, http.StatusServiceUnavailable
	}
	return rd, http.StatusOK
}

func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	rd, status := s.readiness()
	b, err := encode(rd)
	if err != nil {
		s.writeError(w, r, &apiError{status: http.StatusInternalServerError, message: "readiness does not encode: " + err.Error()})
		return
	}
	writeBody(w, status, b)
}
