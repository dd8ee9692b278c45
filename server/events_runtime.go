package server

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/events/zmq"
	"github.com/kvtwin/kvtwin/spec"
)

// This file changes the event sources while the server runs
// (docs/events.md "Sources at run time", docs/spec/kv-events.md §2.10
// A11): PUT and DELETE /v1/events/sources/{name}, and the Go methods
// behind them, which `kvtwin serve` also calls when --events-file changes.

// The actions a SourceChange reports.
const (
	// SourceAdded: the name was not a source; it is now.
	SourceAdded = "added"
	// SourceReplaced: the name was a source with another configuration; it
	// was removed, its engines dropped, and added again with this one.
	SourceReplaced = "replaced"
	// SourceUnchanged: the name was a source with this very configuration;
	// its connection and engines were kept.
	SourceUnchanged = "unchanged"
	// SourceRemoved: the source was removed with its engines.
	SourceRemoved = "removed"
)

// SourceChange answers PUT and DELETE /v1/events/sources/{name}.
type SourceChange struct {
	// Name is the source's name.
	Name string `json:"name"`
	// Action is added, replaced, unchanged or removed.
	Action string `json:"action"`
	// Source is the source's configuration: the one now in force, or, for
	// a removal, the one removed.
	Source zmq.Source `json:"source"`
}

// ErrNoEventIndex is PutEventSource's and DeleteEventSource's error on a
// server built with no event index: no Events, no EventsFrom and no
// EventsRuntime.
var ErrNoEventIndex = errors.New("server: no event index: start the server with event sources (--events, --events-file) or with EventsRuntime (--events-max-engines-per-source) to add sources at run time")

// ErrFixedEventSources is PutEventSource's and DeleteEventSource's error on
// a JetStream replica (EventsFrom): its sources are the relay's, fixed
// when it started.
var ErrFixedEventSources = errors.New("server: this server is a JetStream replica (--events-from): its sources are the relay's and the --events-from-source list it started with; change them on `kvtwin events relay` and restart the replicas")

// PutEventSource makes src one of the server's ZeroMQ sources (§2.10 A11):
// a new name is added; a source of the same name with the same
// configuration is left as it is, connection and engines; one with another
// configuration is replaced (removed, its engines dropped, then added),
// and restored when the add fails. Changes are serialized, so a
// comparison and the change it decides are one step. Errors: ErrNoEventIndex,
// ErrFixedEventSources, an input error wrapping zmq.ErrBadSource for an
// invalid src, or the index's refusal (spec.ErrTooLarge at
// config.max_engines: no room for one more engine share), unchanged.
func (s *Server) PutEventSource(src zmq.Source) (SourceChange, error) {
	e, err := s.runtimeEvents()
	if err != nil {
		return SourceChange{}, err
	}
	if err := src.Validate(); err != nil {
		return SourceChange{}, err
	}
	e.change.Lock()
	defer e.change.Unlock()
	old, had := e.sub.Source(src.Name)
	switch {
	case !had:
		if err := e.sub.AddSource(src); err != nil {
			return SourceChange{}, err
		}
		s.log.Info("event source added", "source", src.Name, "endpoint", src.Endpoint)
		return SourceChange{Name: src.Name, Action: SourceAdded, Source: src}, nil
	case old == src:
		return SourceChange{Name: src.Name, Action: SourceUnchanged, Source: src}, nil
	}
	if err := e.replace(old, src); err != nil {
		return SourceChange{}, err
	}
	s.log.Info("event source replaced: its engines were dropped", "source", src.Name, "endpoint", src.Endpoint, "was", old.Endpoint)
	return SourceChange{Name: src.Name, Action: SourceReplaced, Source: src}, nil
}

// replace removes old and adds src in its place; when the add is refused
// old is added back, so a refused replacement leaves the source in force
// (with its engines dropped: a removal cannot be undone). The caller
// holds e.change.
func (e *events) replace(old, src zmq.Source) error {
	if err := e.sub.RemoveSource(old.Name); err != nil {
		return err
	}
	err := e.sub.AddSource(src)
	if err == nil {
		return nil
	}
	if rerr := e.sub.AddSource(old); rerr != nil {
		return fmt.Errorf("replacing source %s: %w; and the previous configuration could not be restored: %v", old.Name, err, rerr)
	}
	return err
}

// DeleteEventSource removes the named ZeroMQ source and its engines
// (§2.10 A11); the other sources keep their connections and engines.
// Errors: ErrNoEventIndex, ErrFixedEventSources, or an input error wrapping
// zmq.ErrUnknownSource for a name that is not a source.
func (s *Server) DeleteEventSource(name string) (SourceChange, error) {
	e, err := s.runtimeEvents()
	if err != nil {
		return SourceChange{}, err
	}
	e.change.Lock()
	defer e.change.Unlock()
	old, had := e.sub.Source(name)
	if !had {
		return SourceChange{}, spec.Reject(zmq.ErrUnknownSource, "source.name", name, "the name of a current source (GET /v1/events/sources)")
	}
	if err := e.sub.RemoveSource(name); err != nil {
		return SourceChange{}, err
	}
	s.log.Info("event source removed with its engines", "source", name, "endpoint", old.Endpoint)
	return SourceChange{Name: name, Action: SourceRemoved, Source: old}, nil
}

// EventSourceConfig is the configuration of the named ZeroMQ source and
// whether it is one now; false on a server whose sources cannot change
// (no event index, a JetStream replica). serve's --events-dns reads it to
// leave alone the sources it did not put.
func (s *Server) EventSourceConfig(name string) (zmq.Source, bool) {
	e, err := s.runtimeEvents()
	if err != nil {
		return zmq.Source{}, false
	}
	return e.sub.Source(name)
}

// runtimeEvents is the server's events when their sources can change: a
// ZeroMQ subscriber, not a replica, not none.
func (s *Server) runtimeEvents() (*events, error) {
	switch {
	case s.events == nil:
		return nil, ErrNoEventIndex
	case s.events.sub == nil:
		return nil, ErrFixedEventSources
	}
	return s.events, nil
}

// handleEventSourcePut answers PUT /v1/events/sources/{name}: the body is
// one source object as an --events-file `sources` entry (endpoint, replay,
// snapshot, rank, topic; a name, if given, must be the path's); 201 when added, 200
// when replaced or unchanged.
func (s *Server) handleEventSourcePut(w http.ResponseWriter, r *http.Request) {
	name := mux.Vars(r)["name"]
	in, aerr := s.readGated(w, r, s.sourceSchema)
	if aerr != nil {
		s.writeError(w, r, aerr)
		return
	}
	src, err := catalog.DecodeStrict[zmq.Source](in.body)
	s.releaseBody(in)
	if err == nil && src.Name != "" && src.Name != name {
		err = spec.Reject(zmq.ErrBadSource, "name", src.Name, "absent, or the path's name "+name)
	}
	if err != nil {
		s.writeError(w, r, inputError(err, catalog.Canonical(struct{}{}, err)))
		return
	}
	src.Name = name
	ch, err := s.PutEventSource(src)
	if err != nil {
		s.writeError(w, r, s.sourceError(name, err))
		return
	}
	status := http.StatusOK
	if ch.Action == SourceAdded {
		status = http.StatusCreated
	}
	s.writeJSON(w, r, status, ch)
}

// handleEventSourceDelete answers DELETE /v1/events/sources/{name}: 200
// with the removed source, 404 for a name that is not a source.
func (s *Server) handleEventSourceDelete(w http.ResponseWriter, r *http.Request) {
	name := mux.Vars(r)["name"]
	ch, err := s.DeleteEventSource(name)
	if errors.Is(err, ErrNoEventIndex) {
		s.writeError(w, r, &apiError{status: http.StatusNotFound, message: "no event source " + name + ": " + err.Error()})
		return
	}
	if err != nil {
		s.writeError(w, r, s.sourceError(name, err))
		return
	}
	s.writeJSON(w, r, http.StatusOK, ch)
}

// sourceError maps a source change's error to its answer: 409 on a server
// whose sources cannot change (no index, a replica), 404 for an
// unknown source, 400 for an
// invalid source, 409 for the index's refusal (its message says which
// flag to raise), 500 for anything else. Input errors carry the canonical
// error object in detail.
func (s *Server) sourceError(name string, err error) *apiError {
	switch {
	case errors.Is(err, ErrFixedEventSources):
		return &apiError{status: http.StatusConflict, message: err.Error()}
	case errors.Is(err, ErrNoEventIndex):
		return &apiError{status: http.StatusConflict, message: err.Error()}
	}
	ie, ok := spec.AsInputError(err)
	if !ok {
		return &apiError{status: http.StatusInternalServerError, message: "changing event source " + name + " failed: " + err.Error()}
	}
	e := inputError(err, catalog.Canonical(struct{}{}, err))
	switch {
	case errors.Is(err, zmq.ErrUnknownSource):
		e.status = http.StatusNotFound
	case errors.Is(err, zmq.ErrBadSource):
	case ie.Field == "config.max_engines":
		e.status = http.StatusConflict
		e.message = s.shareMessage(name, ie)
	default:
		e.status = http.StatusConflict
	}
	return e
}

// shareMessage explains the index's refusal of one more source (§2.10
// A11): the share each source got when the server started is fixed, so
// only fewer engines per source, or more engines, make room.
func (s *Server) shareMessage(name string, ie *spec.InputError) string {
	maxEngines := s.cfg.EventsIndex.WithDefaults().MaxEngines
	share := max(s.events.share, 1)
	return fmt.Sprintf("the event index has no room for source %s (%s): every source's engine share, %d engines, was fixed when the server started, "+
		"so at most %d sources fit in --events-max-engines %d; restart with a smaller --events-max-engines-per-source "+
		"(a fleet of single-engine pods: 1 to 8) or a larger --events-max-engines (docs/events.md, \"Sources at run time\")",
		name, ie.Error(), share, maxEngines/share, maxEngines)
}
