package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/events/scaleout"
	"github.com/kvtwin/kvtwin/events/zmq"
	"github.com/kvtwin/kvtwin/spec"
)

// This file serves the event-fed prefix index (docs/events.md,
// docs/spec/kv-events.md): the subscriber that feeds it runs for as long as
// Serve does, /v1/events/sources lists its sources, /v1/prefix:score scores
// against its engines beside the HTTP-fed pools, and /metrics exports its
// per-source counters.

// events is the server's event-fed index and what feeds it: the ZeroMQ
// subscriber, or a JetStream replica.
type events struct {
	ix  spec.KVEvIndex
	sub *zmq.Subscriber
	rep *scaleout.Replica
	// share is the engines each source may feed (kv-events.md §2.10 A5).
	share int
	// shadow is ix under --verify-state (ix is then shadow), else nil.
	shadow *shadowIndex
	// wg tracks the subscriber's Run, started by Serve and waited for by drain.
	wg sync.WaitGroup
	// change serializes the source changes of events_runtime.go, so that
	// a PUT's comparison with the source in force and the change it
	// decides on are one step.
	change sync.Mutex
}

// newEvents builds the index on cfg.Impl's twin (catalog.KVEvIndex: ref or
// fast; cuda has none and is refused, never silently replaced) and the
// subscriber over cfg.Events (none, with EventsRuntime: the sources come
// at run time) or the replica of cfg.EventsFrom; nil when none of the
// three is configured. Errors are *spec.InputError wrapping ErrBadConfig
// naming the Events field.
func newEvents(cfg Config) (*events, error) {
	fromNATS := cfg.EventsFrom.URL != "" || cfg.EventsFrom.Conn != nil
	if len(cfg.Events) == 0 && !fromNATS && !cfg.EventsRuntime {
		return nil, nil
	}
	if len(cfg.Events) > 0 && fromNATS {
		return nil, spec.Reject(ErrBadConfig, "EventsFrom", cfg.EventsFrom.URL, "unset when Events lists ZeroMQ sources: a server is fed by one or the other")
	}
	newIndex, err := catalog.KVEvIndex(cfg.Impl)
	if cfg.NewKVEvIndex != nil {
		newIndex, err = cfg.NewKVEvIndex, nil
	}
	if err != nil {
		return nil, spec.Reject(ErrBadConfig, "Events", len(cfg.Events), "no event sources under impl "+string(cfg.Impl)+": "+err.Error())
	}
	if fromNATS {
		return newReplicaEvents(cfg, newIndex)
	}
	ix, share, err := newEventIndex(newIndex, cfg.EventsIndex, zmq.Streams(cfg.Events))
	if err != nil {
		return nil, err
	}
	ix, shadow, err := withShadow(cfg, ix, zmq.Streams(cfg.Events))
	if err != nil {
		return nil, err
	}
	// A snapshot reply (§2.10 A13) is bounded by the index's max_held and
	// max_held_bytes: the subscriber's snapshot socket takes the same.
	sub, err := zmq.New(ix, cfg.Events, withLogger(cfg.EventsOptions, cfg).WithIndexBounds(cfg.EventsIndex))
	if err != nil {
		return nil, configError("Events.", err)
	}
	return &events{ix: ix, sub: sub, share: share, shadow: shadow}, nil
}

// newEventIndex builds the index over streams and returns each stream's
// engine share beside it (the index validated it).
func newEventIndex(newIndex spec.NewKVEvIndexFunc, cfg spec.KVEvConfig, streams []spec.KVEvStream) (spec.KVEvIndex, int, error) {
	ix, err := newIndex(cfg, streams)
	if err != nil {
		return nil, 0, configError("EventsIndex.", err)
	}
	share, err := cfg.EngineShare(len(streams))
	if err != nil {
		return nil, 0, configError("EventsIndex.", err)
	}
	return ix, share, nil
}

// newReplicaEvents builds the index over the replica's sources and the
// JetStream replica feeding it.
func newReplicaEvents(cfg Config, newIndex spec.NewKVEvIndexFunc) (*events, error) {
	streams, err := scaleout.ReplicaStreams(cfg.EventsFrom.Sources)
	if err != nil {
		return nil, configError("EventsFrom.", err)
	}
	ix, share, err := newEventIndex(newIndex, cfg.EventsIndex, streams)
	if err != nil {
		return nil, err
	}
	ix, shadow, err := withShadow(cfg, ix, streams)
	if err != nil {
		return nil, err
	}
	o := cfg.EventsFrom
	if o.Logger == nil {
		o.Logger = cfg.Logger.With("component", "events")
	}
	if o.Snapshots.Bucket != "" {
		if shadow != nil {
			return nil, spec.Reject(ErrBadConfig, "EventsFrom.Snapshots.Bucket", o.Snapshots.Bucket, "unset under --verify-state: the shadowed index is restored from no snapshot")
		}
		if o.Snapshots.Restore == nil {
			if o.Snapshots.Restore, err = catalog.KVEvRestore(cfg.Impl); err != nil {
				return nil, spec.Reject(ErrBadConfig, "EventsFrom.Snapshots.Bucket", o.Snapshots.Bucket, "no snapshot restore under impl "+string(cfg.Impl)+": "+err.Error())
			}
		}
		o.Snapshots.IndexConfig = cfg.EventsIndex
	}
	rep, err := scaleout.NewReplica(ix, o)
	if err != nil {
		return nil, configError("EventsFrom.", err)
	}
	// Serve through the replica's index: a warm start (§4.3 option (a))
	// replaces the index it was given by the one its snapshot restores.
	return &events{ix: rep.Index(), rep: rep, share: share, shadow: shadow}, nil
}

// withLogger gives the subscriber the server's logger unless one was set.
func withLogger(o zmq.Options, cfg Config) zmq.Options {
	if o.Logger == nil {
		o.Logger = cfg.Logger.With("component", "events")
	}
	return o
}

// configError re-wraps an input error of a sub-configuration as ErrBadConfig
// with its field under prefix.
func configError(prefix string, err error) error {
	ie, ok := spec.AsInputError(err)
	if !ok {
		return spec.Reject(ErrBadConfig, strings.TrimSuffix(prefix, "."), err.Error(), "a valid configuration")
	}
	return spec.Reject(ErrBadConfig, prefix+ie.Field, ie.Value, ie.Bound+" ("+ie.Err.Error()+")")
}

// start runs the subscriber until ctx ends.
func (e *events) start(ctx context.Context) {
	if e == nil {
		return
	}
	if e.shadow != nil {
		e.wg.Go(func() { e.shadow.run(ctx) })
	}
	if e.rep != nil {
		e.wg.Go(func() { _ = e.rep.Run(ctx) })
		return
	}
	e.wg.Go(func() { _ = e.sub.Run(ctx) })
}

// wait blocks until the subscriber's goroutines have ended.
func (e *events) wait() {
	if e != nil {
		e.wg.Wait()
	}
}

// EventSource is one element of GET /v1/events/sources: the subscriber's
// view of the connection, the index's cursor for the stream, and the
// engines it feeds (pools summarized, pages left out).
type EventSource struct {
	// Name is the source's name (a replica's: the relay's source token).
	Name string `json:"name"`
	// Subscriber is the connection and replay state; absent on a
	// JetStream replica, whose state is EventSources.Replica.
	Subscriber *zmq.SourceStatus `json:"subscriber,omitzero"`
	// Stream is the index's cursor and counters for the source (§3.1);
	// Stream.Counters.EnginesRefused counts its batches refused for their
	// engine (past MaxEngines, or another source's engine).
	Stream spec.KVEvStreamState `json:"stream"`
	// MaxEngines is the engines the source may feed, its share of the
	// index (§2.10 A5; --events-max-engines-per-source).
	MaxEngines int `json:"max_engines"`
	// Engines are the engines the source feeds.
	Engines []EventEngine `json:"engines"`
}

// EventEngine is an engine without its pages.
type EventEngine struct {
	spec.KVEvEngineKey
	// Model is the model name of a kv@<source>@<model> topic.
	Model string `json:"model,omitzero"`
	// Stale says the engine may have missed events (§3.3).
	Stale bool `json:"stale"`
	// StaleSince is the seq that made it stale.
	StaleSince uint64 `json:"stale_since,omitzero"`
	// Tokens is the tokens of its pages, holes included.
	Tokens int64 `json:"tokens"`
	// Counters are its event counters.
	Counters spec.KVEvEngineCounters `json:"counters"`
	// Pools are its pools with their page counts.
	Pools []EventPool `json:"pools"`
}

// EventPool is a pool without its pages.
type EventPool struct {
	// Group is the KV-cache group.
	Group int64 `json:"group"`
	// Tier is the tier.
	Tier string `json:"tier"`
	// PageSize is the tokens per page.
	PageSize int64 `json:"page_size"`
	// Pages is the page count, holes included.
	Pages int `json:"pages"`
}

// EventSources is the GET /v1/events/sources body, sources in
// configuration order.
type EventSources struct {
	// Sources are every configured source.
	Sources []EventSource `json:"sources"`
	// Digest is the index's digest (§4.3): equal on replicas that applied
	// the same events.
	Digest string `json:"digest"`
	// Replica is the JetStream replica's state when the server is fed by
	// `--events-from`.
	Replica *scaleout.ReplicaStatus `json:"replica,omitzero"`
}

// summarizer is an index that can report its state without its pages
// (PageCount instead); the fast index can, the reference builds the whole
// state.
type summarizer interface {
	Summary() spec.KVEvState
}

// summary returns the index's state, pages omitted where the index allows.
func (e *events) summary() spec.KVEvState {
	if s, ok := e.ix.(summarizer); ok {
		return s.Summary()
	}
	return e.ix.State()
}

// sources builds the GET /v1/events/sources body. The subscriber's
// statuses are matched to the index's streams by name: while a source is
// added or removed (events_runtime.go) one may list it a moment before
// the other, and the stream is then listed without its subscriber.
func (e *events) sources() EventSources {
	st := e.summary()
	out := EventSources{Digest: st.Digest, Sources: []EventSource{}}
	byStream := map[string][]EventEngine{}
	for _, en := range st.Engines {
		v := EventEngine{KVEvEngineKey: spec.KVEvEngineKey{Source: en.Source, DPRank: en.DPRank}, Model: en.Model,
			Stale: en.Stale, StaleSince: en.StaleSince, Tokens: en.Tokens, Counters: en.Counters, Pools: []EventPool{}}
		for _, p := range en.Pools {
			v.Pools = append(v.Pools, EventPool{Group: p.Group, Tier: p.Tier, PageSize: p.PageSize, Pages: max(len(p.Pages), p.PageCount)})
		}
		byStream[en.Stream] = append(byStream[en.Stream], v)
	}
	for _, st := range st.Streams {
		eng := byStream[st.Name]
		if eng == nil {
			eng = []EventEngine{}
		}
		out.Sources = append(out.Sources, EventSource{Name: st.Name, Stream: st, MaxEngines: e.share, Engines: eng})
	}
	if e.rep != nil {
		out.Replica = new(e.rep.Status())
		return out
	}
	byName := map[string]*zmq.SourceStatus{}
	for _, ss := range e.sub.Status() {
		byName[ss.Name] = &ss
	}
	for i := range out.Sources {
		out.Sources[i].Subscriber = byName[out.Sources[i].Name]
	}
	return out
}

// handleEventSources answers GET /v1/events/sources: 404 when the server
// has no event index, so a router can tell "none configured" from "none
// connected" (a server built with EventsRuntime and no source yet answers
// 200 with an empty list).
func (s *Server) handleEventSources(w http.ResponseWriter, r *http.Request) {
	if s.events == nil {
		s.writeError(w, r, &apiError{status: http.StatusNotFound,
			message: "no event sources are configured (kvtwin serve --events NAME=tcp://HOST:PORT, --events-file FILE, or --events-from nats://HOST:PORT; --events-max-engines-per-source N to add them at run time; docs/events.md)"})
		return
	}
	s.writeJSON(w, r, http.StatusOK, s.events.sources())
}

// scoreEngines scores the prompt against every engine of the event-fed
// index for the query's group and tier; nil without event sources.
func (s *Server) scoreEngines(in *scoreBody) ([]spec.KVEvScore, error) {
	if s.events == nil {
		return nil, nil
	}
	ns := ""
	if in.Extra != nil {
		ns = *in.Extra
	}
	scores, err := s.events.ix.Score(spec.KVEvScoreQuery{Tokens: in.Tokens, Namespace: ns, Group: in.Group, Tier: in.Tier, Exact: in.Exact})
	if scores == nil && err == nil {
		scores = []spec.KVEvScore{}
	}
	return scores, err
}

// eventCollector exports every source's subscriber and cursor counters
// and its engines' staleness, read at scrape time.
type eventCollector struct {
	ev      *events
	metrics []eventMetric
	stale   *prometheus.Desc
	tokens  *prometheus.Desc
	// budget and buffered are the subscriber's byte budget and what all
	// sources hold in it (absent on a JetStream replica).
	budget   *prometheus.Desc
	buffered *prometheus.Desc
}

// eventMetric is one per-source series.
type eventMetric struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(zmq.SourceStatus, spec.KVEvStreamState) float64
}

func newEventCollector(ev *events) eventCollector {
	m := func(name, help string, kind prometheus.ValueType, v func(zmq.SourceStatus, spec.KVEvStreamState) float64) eventMetric {
		return eventMetric{desc: prometheus.NewDesc(name, help, []string{"source"}, nil), kind: kind, value: v}
	}
	c, g := prometheus.CounterValue, prometheus.GaugeValue
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	return eventCollector{ev: ev,
		metrics: []eventMetric{
			m("kvtwin_events_connected", "1 while the source's SUB socket is connected.", g,
				func(s zmq.SourceStatus, _ spec.KVEvStreamState) float64 { return b(s.Connected) }),
			m("kvtwin_events_reconnects_total", "SUB connections made after the first.", c,
				func(s zmq.SourceStatus, _ spec.KVEvStreamState) float64 { return float64(s.Reconnects) }),
			m("kvtwin_events_messages_total", "Live messages passed to the index.", c,
				func(s zmq.SourceStatus, _ spec.KVEvStreamState) float64 { return float64(s.Messages) }),
			m("kvtwin_events_last_seq", "Seq of the last live message.", g,
				func(s zmq.SourceStatus, _ spec.KVEvStreamState) float64 { return float64(s.LastSeq) }),
			m("kvtwin_events_batches_total", "Batches applied (decoded or refused).", c,
				func(_ zmq.SourceStatus, t spec.KVEvStreamState) float64 { return float64(t.Counters.Batches) }),
			m("kvtwin_events_duplicates_total", "Batches dropped as already applied.", c,
				func(_ zmq.SourceStatus, t spec.KVEvStreamState) float64 { return float64(t.Counters.Duplicates) }),
			m("kvtwin_events_malformed_total", "Live messages dropped for their frames.", c,
				func(_ zmq.SourceStatus, t spec.KVEvStreamState) float64 { return float64(t.Counters.Malformed) }),
			m("kvtwin_events_decode_errors_total", "Batches refused by the decoder (engine refusals are kvtwin_events_engines_refused_total).", c,
				func(_ zmq.SourceStatus, t spec.KVEvStreamState) float64 { return float64(t.Counters.DecodeErrors) }),
			m("kvtwin_events_gaps_total", "Unrecoverable gaps.", c,
				func(_ zmq.SourceStatus, t spec.KVEvStreamState) float64 { return float64(t.Counters.Gaps) }),
			m("kvtwin_events_gap_batches_lost_total", "Seqs inside unrecoverable gaps.", c,
				func(_ zmq.SourceStatus, t spec.KVEvStreamState) float64 { return float64(t.Counters.GapBatchesLost) }),
			m("kvtwin_events_replays_ok_total", "Replays that ended with their sentinel.", c,
				func(_ zmq.SourceStatus, t spec.KVEvStreamState) float64 { return float64(t.Counters.ReplaysOK) }),
			m("kvtwin_events_replays_failed_total", "Replays that did not.", c,
				func(_ zmq.SourceStatus, t spec.KVEvStreamState) float64 { return float64(t.Counters.ReplaysFailed) }),
			m("kvtwin_events_restarts_total", "Publisher restarts.", c,
				func(_ zmq.SourceStatus, t spec.KVEvStreamState) float64 { return float64(t.Counters.Restarts) }),
			m("kvtwin_events_engines_refused_total", "Batches refused for their engine: past the source's engine share or fed by another source (docs/spec/kv-events.md §2.10 A2, A5).", c,
				func(_ zmq.SourceStatus, t spec.KVEvStreamState) float64 { return float64(t.Counters.EnginesRefused) }),
			m("kvtwin_events_engines", "Engines the source feeds.", g,
				func(_ zmq.SourceStatus, t spec.KVEvStreamState) float64 { return float64(len(t.Engines)) }),
			m("kvtwin_events_max_engines", "Engines the source may feed: its share of the index (--events-max-engines-per-source).", g,
				func(zmq.SourceStatus, spec.KVEvStreamState) float64 { return float64(ev.share) }),
			m("kvtwin_events_held_overflow_total", "Live messages dropped while a replay ran because the hold queue was full (max_held, max_held_bytes).", c,
				func(_ zmq.SourceStatus, t spec.KVEvStreamState) float64 { return float64(t.Counters.HeldOverflow) }),
			m("kvtwin_events_refused_batches_total", "Batches the index refused whole (decode errors, engines it would not create).", c,
				func(s zmq.SourceStatus, _ spec.KVEvStreamState) float64 { return float64(s.RefusedBatches) }),
			m("kvtwin_events_oversized_messages_total", "Batches refused past the bounds of one message (max_events, max_decode_ratio).", c,
				func(s zmq.SourceStatus, _ spec.KVEvStreamState) float64 { return float64(s.OversizedMessages) }),
			m("kvtwin_events_buffered_bytes", "Bytes the source holds in the subscriber's buffer budget: queued frames, replies, held messages.", g,
				func(s zmq.SourceStatus, _ spec.KVEvStreamState) float64 { return float64(s.BufferedBytes) }),
			m("kvtwin_events_buffer_overflows_total", "Connections closed because a frame found no room in the buffer budget in time.", c,
				func(s zmq.SourceStatus, _ spec.KVEvStreamState) float64 { return float64(s.BufferOverflows) }),
			m("kvtwin_events_log_suppressed_total", "Log lines about refusals held back by --events-log-interval.", c,
				func(s zmq.SourceStatus, _ spec.KVEvStreamState) float64 { return float64(s.LogSuppressed) }),
		},
		stale: prometheus.NewDesc("kvtwin_events_engine_stale", "1 while the engine may have missed events (docs/spec/kv-events.md §3.3).",
			[]string{"source", "engine", "dp_rank"}, nil),
		tokens: prometheus.NewDesc("kvtwin_events_engine_tokens", "Tokens of the engine's pages, holes included (the budget's measure).",
			[]string{"source", "engine", "dp_rank"}, nil),
		budget:   prometheus.NewDesc("kvtwin_events_buffer_budget_bytes", "The subscriber's byte budget over everything it holds for all sources (--events-max-buffered-bytes).", nil, nil),
		buffered: prometheus.NewDesc("kvtwin_events_buffer_in_use_bytes", "Bytes all sources hold in the subscriber's budget now.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c eventCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.metrics {
		ch <- m.desc
	}
	ch <- c.stale
	ch <- c.tokens
	ch <- c.budget
	ch <- c.buffered
}

// Collect implements prometheus.Collector.
func (c eventCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.ev.summary()
	streams := map[string]spec.KVEvStreamState{}
	for _, s := range st.Streams {
		streams[s.Name] = s
	}
	subs := map[string]zmq.SourceStatus{}
	if c.ev.sub != nil {
		for _, ss := range c.ev.sub.Status() {
			subs[ss.Name] = ss
		}
		budget, inUse := c.ev.sub.Buffered()
		ch <- prometheus.MustNewConstMetric(c.budget, prometheus.GaugeValue, float64(budget))
		ch <- prometheus.MustNewConstMetric(c.buffered, prometheus.GaugeValue, float64(inUse))
	}
	for _, t := range st.Streams {
		for _, m := range c.metrics {
			ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.value(subs[t.Name], streams[t.Name]), t.Name)
		}
	}
	for _, en := range st.Engines {
		stale := 0.0
		if en.Stale {
			stale = 1
		}
		rank := strconv.FormatInt(en.DPRank, 10)
		ch <- prometheus.MustNewConstMetric(c.stale, prometheus.GaugeValue, stale, en.Stream, en.Source, rank)
		ch <- prometheus.MustNewConstMetric(c.tokens, prometheus.GaugeValue, float64(en.Tokens), en.Stream, en.Source, rank)
	}
}
