package scaleout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvtwin/kvtwin/events/zmq"
	"github.com/kvtwin/kvtwin/spec"
)

// RelayOptions configure a Relay. Zero fields take the defaults of
// DefaultRelayOptions.
type RelayOptions struct {
	// Sources are the ZMQ publishers relayed (flag --events): each is
	// published on kvtwin.kv.<Token(name)>; tokens must be distinct.
	Sources []zmq.Source
	// URL is the NATS server URL (--nats); ignored when Conn is set.
	URL string
	// Conn is a connection the caller owns; nil: Run dials URL and closes
	// the connection when it returns.
	Conn *nats.Conn
	// Stream configures the stream (--stream, --max-age,
	// --duplicate-window, --stream-replicas).
	Stream StreamOptions
	// Index bounds the relay's own index (--events-max-*). Its MaxHeld is
	// also the bound of the messages the relay keeps for publishing.
	Index spec.KVEvConfig
	// Subscriber tunes the ZMQ subscriber.
	Subscriber zmq.Options
	// PublishTimeout bounds one publish attempt, PubAck included
	// (--publish-timeout).
	PublishTimeout time.Duration
	// RetryFor is how long a failed publish is retried, with the same
	// Msg-Id, before the relay gives up on the batch (--retry-for). The
	// replicas then see a seq gap and mark the source stale. At most the
	// duplicate window, so that no retry can be stored twice.
	RetryFor time.Duration
	// RetryMin and RetryMax bound the backoff between publish attempts and
	// between attempts to set the stream up.
	RetryMin, RetryMax time.Duration
	// ReadIdle is how long reading the stream's history at start waits for
	// a message before it takes the history as read.
	ReadIdle time.Duration
	// Logger receives the relay's log lines (nil: discard).
	Logger *slog.Logger
	// NewIndex builds the relay's index; required. The caller picks the
	// twin through the catalog, as every consumer does: `kvtwin events
	// relay` passes catalog.KVEvIndex(catalog.Fast), the production index.
	NewIndex spec.NewKVEvIndexFunc
}

// DefaultRelayOptions: the default stream, 5 s per publish attempt, retries
// for 30 s backing off from 100 ms to 2 s, 5 s read idle.
func DefaultRelayOptions() RelayOptions {
	return RelayOptions{
		Stream: DefaultStreamOptions(), PublishTimeout: 5 * time.Second, RetryFor: 30 * time.Second,
		RetryMin: 100 * time.Millisecond, RetryMax: 2 * time.Second, ReadIdle: 5 * time.Second,
	}
}

func (o RelayOptions) withDefaults() (RelayOptions, error) {
	d := DefaultRelayOptions()
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Conn == nil && o.URL == "" {
		return o, spec.Reject(ErrBadOption, "--nats", "", "a NATS URL nats://HOST:PORT")
	}
	var err error
	if o.Stream, err = o.Stream.withDefaults(); err != nil {
		return o, err
	}
	if err := fillDurations([]durOption{
		{"--publish-timeout", &o.PublishTimeout, d.PublishTimeout, time.Millisecond},
		{"--retry-for", &o.RetryFor, d.RetryFor, time.Millisecond},
		{"retry_min", &o.RetryMin, d.RetryMin, time.Millisecond},
		{"retry_max", &o.RetryMax, d.RetryMax, time.Millisecond},
		{"read_idle", &o.ReadIdle, d.ReadIdle, time.Millisecond},
	}); err != nil {
		return o, err
	}
	if o.RetryMax < o.RetryMin {
		return o, spec.Reject(ErrBadOption, "retry_max", o.RetryMax, fmt.Sprintf(">= retry_min (%v)", o.RetryMin))
	}
	if o.RetryFor > o.Stream.DuplicateWindow {
		return o, spec.Reject(ErrBadOption, "--retry-for", o.RetryFor,
			fmt.Sprintf("<= --duplicate-window (%v): a publish retried past the window could be stored twice", o.Stream.DuplicateWindow))
	}
	if err := o.Index.Validate(); err != nil {
		return o, err
	}
	o.Index = o.Index.WithDefaults()
	return o, nil
}

// Relay forwards KV events from ZMQ publishers into JetStream
// (docs/spec/kv-events.md §4.2). It runs the ZMQ subscriber (events/zmq) over
// an index of its own (RelayOptions.NewIndex: the CLI passes the fast twin),
// which decides the cursor: gaps, replay, restarts. Every batch that index
// applies is published, in seq
// order and synchronously (the PubAck awaited), on kvtwin.kv.<token> with
// the raw payload as body; a publisher restart is published first as an
// empty reset message opening the next epoch. See wire.go for the format.
//
// A starting relay first rebuilds its index from the stream's history of
// its sources (the replicas' rule, applier), so that its cursor and epoch
// continue where the previous relay process stopped: the first live
// message then either follows, reveals a gap the publisher's replay fills,
// or reveals a publisher restart.
type Relay struct {
	o       RelayOptions
	log     *slog.Logger
	inner   spec.KVEvIndex
	px      *pubIndex
	sub     *zmq.Subscriber
	streams []spec.KVEvStream
	ran     atomic.Bool
	nc      atomic.Pointer[nats.Conn] // the connection Run uses, for Status

	mu sync.Mutex
	st RelayStatus
}

// publishFunc publishes one message and waits for its PubAck.
type publishFunc func(ctx context.Context, m *nats.Msg) (*jetstream.PubAck, error)

// RelayStatus is the relay's state. Counters only grow.
type RelayStatus struct {
	// Phase is starting, rebuilding, relaying or stopped.
	Phase string `json:"phase"`
	// Connected says the NATS connection is up.
	Connected bool `json:"connected"`
	// Stream is the stream's name.
	Stream string `json:"stream"`
	// RebuildMessages and RebuildSeconds: the history read at start.
	RebuildMessages uint64  `json:"rebuild_messages"`
	RebuildSeconds  float64 `json:"rebuild_seconds"`
	// LastError is the last stream-level error, and when.
	LastError   string    `json:"last_error,omitzero"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
	// Sources are the sources in configuration order.
	Sources []RelaySourceStatus `json:"sources"`
}

// Phases of a relay (the stopped phase is the replica's).
const (
	PhaseRelaying = "relaying"
)

// RelaySourceStatus is one source: its ZMQ subscription and its publishing.
type RelaySourceStatus struct {
	zmq.SourceStatus
	// Token and Subject are where the source is published.
	Token   string `json:"token"`
	Subject string `json:"subject"`
	// Epoch is the current epoch (bumped on each publisher restart).
	Epoch uint64 `json:"epoch"`
	// Published counts batches stored; Resets reset messages stored.
	Published uint64 `json:"published"`
	Resets    uint64 `json:"resets"`
	// PublishedSeq is the seq of the last batch stored (PublishedSeqValid
	// false before the first). LastSeq is the last live seq received.
	PublishedSeqValid bool   `json:"published_seq_valid"`
	PublishedSeq      uint64 `json:"published_seq"`
	// Duplicates counts publishes JetStream reported as duplicates (a retry
	// whose earlier attempt was stored).
	Duplicates uint64 `json:"duplicates"`
	// Retries counts publish attempts after the first.
	Retries uint64 `json:"retries"`
	// Failed counts messages given up on after --retry-for (or refused, e.g.
	// past the server's max payload); the replicas see a seq gap.
	Failed uint64 `json:"failed"`
	// GapFlags counts batches published with Kvtwin-Gap.
	GapFlags uint64 `json:"gap_flags"`
	// HeldOverflow counts live messages the index dropped while replaying
	// (its hold queue full): its engines are stale until a clear.
	HeldOverflow uint64 `json:"held_overflow"`
	// Unmatched counts applied seqs whose payload the relay did not have
	// (never expected; the replicas see a seq gap).
	Unmatched uint64 `json:"unmatched"`
	// LastPublishError is the last publish error, and when.
	LastPublishError   string    `json:"last_publish_error,omitzero"`
	LastPublishErrorAt time.Time `json:"last_publish_error_at,omitzero"`
}

// NewRelay checks the options and builds the relay and its index. Errors
// are *spec.InputError wrapping ErrBadOption or zmq.ErrBadSource.
func NewRelay(opts RelayOptions) (*Relay, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if len(o.Sources) == 0 {
		return nil, spec.Reject(zmq.ErrBadSource, "--events", 0, "at least one source")
	}
	byToken := map[string]string{}
	for _, s := range o.Sources {
		if err := s.Validate(); err != nil {
			return nil, err
		}
		if s.Snapshot != "" {
			// A snapshot replaces the stream's engines wholesale (§2.10
			// A13), which the relay's per-batch JetStream messages
			// (§4.2) cannot carry to the replicas.
			return nil, spec.Reject(zmq.ErrBadSource, "source["+s.Name+"].snapshot", s.Snapshot,
				"unset: the relay does not relay vLLM's snapshot bootstrap (replicas apply batches, §4.2); use replay=, or feed the source to kvtwin serve directly")
		}
		tok := Token(s.Name)
		if prev, ok := byToken[tok]; ok && prev == s.Name {
			return nil, spec.Reject(zmq.ErrBadSource, "source.name", s.Name, "a name no other source has")
		} else if ok {
			return nil, spec.Reject(zmq.ErrBadSource, "source.name", s.Name,
				fmt.Sprintf("a name whose subject token (%s) no other source has (%s has it)", tok, prev))
		}
		byToken[tok] = s.Name
	}
	if o.NewIndex == nil {
		return nil, spec.Reject(ErrBadOption, "new_index", "nil", "an index constructor (catalog.KVEvIndex)")
	}
	streams := zmq.Streams(o.Sources)
	inner, err := o.NewIndex(o.Index, streams)
	if err != nil {
		return nil, fmt.Errorf("kvevjs: relay index: %w", err)
	}
	r := &Relay{o: o, log: o.Logger, inner: inner, streams: streams}
	r.px = newPubIndex(inner, o, streams)
	if r.sub, err = zmq.New(r.px, o.Sources, o.Subscriber); err != nil {
		return nil, err
	}
	r.st = RelayStatus{Phase: PhaseStarting, Stream: o.Stream.Name}
	return r, nil
}

// Restart tells the relay that the named source's publisher was replaced
// (docs/spec/kv-events.md §3.4: an operator's or discovery's signal): the
// relay's index drops the source's engines and the relay publishes a reset
// opening the next epoch, in order with the source's messages.
func (r *Relay) Restart(name string) error { return r.sub.Restart(name) }

// Index is the relay's own index (for its digest and scores).
func (r *Relay) Index() spec.KVEvIndex { return r.inner }

// Status returns the relay's state.
func (r *Relay) Status() RelayStatus {
	r.mu.Lock()
	st := r.st
	r.mu.Unlock()
	if nc := r.nc.Load(); nc != nil && st.Phase != PhaseStopped {
		st.Connected = nc.IsConnected()
	}
	subs := r.sub.Status()
	st.Sources = make([]RelaySourceStatus, len(subs))
	for i, s := range subs {
		rs := r.px.streams[s.Name]
		rs.mu.Lock()
		st.Sources[i] = rs.st
		rs.mu.Unlock()
		st.Sources[i].SourceStatus = s
	}
	return st
}

func (r *Relay) update(f func(st *RelayStatus)) {
	r.mu.Lock()
	f(&r.st)
	r.mu.Unlock()
}

// Run connects to NATS, sets the stream up, rebuilds the index from the
// stream's history, then relays until ctx ends; it returns nil once every
// goroutine it started has ended. It returns an error for a URL it cannot
// use or a stream whose subjects, storage or retention are not the
// relay's; other errors (the server away) are retried with backoff. It
// runs once.
func (r *Relay) Run(ctx context.Context) error {
	if !r.ran.CompareAndSwap(false, true) {
		return errors.New("kvevjs: Relay.Run called twice")
	}
	defer r.update(func(st *RelayStatus) { st.Phase = PhaseStopped; st.Connected = false })
	nc := r.o.Conn
	if nc == nil {
		var closeNC func()
		var err error
		nc, closeNC, err = dialNATS(r.o.URL, "kvtwin-relay", r.log)
		if err != nil {
			return fmt.Errorf("kvevjs: relay: connect %s (--nats): %w", r.o.URL, err)
		}
		defer closeNC()
	}
	r.nc.Store(nc)
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("kvevjs: relay: %w", err)
	}
	bo := newBackoff(r.o.RetryMin, r.o.RetryMax)
	for {
		err := r.setup(ctx, js)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		var perm *permanentError
		if errors.As(err, &perm) {
			return fmt.Errorf("kvevjs: relay: %w", perm.err)
		}
		r.update(func(st *RelayStatus) { st.LastError, st.LastErrorAt = err.Error(), time.Now() })
		r.log.Warn("stream setup failed; retrying", "err", err, "retry_in", bo.next())
		if !bo.wait(ctx) {
			return nil
		}
	}
	r.px.start(ctx, func(ctx context.Context, m *nats.Msg) (*jetstream.PubAck, error) {
		return js.PublishMsg(ctx, m, jetstream.WithExpectStream(r.o.Stream.Name))
	}, nc.MaxPayload())
	r.update(func(st *RelayStatus) { st.Phase = PhaseRelaying })
	r.log.Info("relaying", "stream", r.o.Stream.Name, "sources", len(r.o.Sources))
	return r.sub.Run(ctx)
}

// permanentError is a setup error retrying cannot fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }

// setup creates or checks the stream, then rebuilds the index from the
// history of the relay's sources (once: a retried setup continues the read
// where it stopped).
func (r *Relay) setup(ctx context.Context, js jetstream.JetStream) error {
	s, err := ensureStream(ctx, js, r.o.Stream, r.log)
	if err != nil {
		if _, lerr := js.Stream(ctx, r.o.Stream.Name); lerr == nil && ctx.Err() == nil {
			// The stream is there but not usable as it is.
			return &permanentError{err}
		}
		return err
	}
	if r.px.rebuilt {
		return nil
	}
	r.update(func(st *RelayStatus) { st.Phase = PhaseRebuild })
	last := s.CachedInfo().State.LastSeq
	filter := make([]string, len(r.streams))
	for i, st := range r.streams {
		filter[i] = Subject(Token(st.Name))
	}
	t0 := time.Now()
	ap := newApplier(r.inner, r.log, r.streams)
	n, err := readRange(ctx, js, r.o.Stream.Name, filter, r.px.readFrom, last, r.o.ReadIdle, func(seq uint64, m jetstream.Msg) {
		r.px.readFrom = seq + 1
		if w, err := parseWire(m.Subject(), m.Headers(), m.Data()); err == nil {
			ap.apply(w)
		} else {
			r.log.Warn("malformed message in the stream's history skipped", "seq", seq, "err", err)
		}
	})
	took := time.Since(t0)
	r.update(func(st *RelayStatus) { st.RebuildMessages += n; st.RebuildSeconds += took.Seconds() })
	if err != nil {
		return fmt.Errorf("read the stream's history: %w", err)
	}
	for _, ss := range ap.states(filterTokens(r.streams)) {
		if ss.EpochKnown {
			rs := r.px.streams[ss.Name]
			rs.epoch = ss.Epoch
			rs.update(func(st *RelaySourceStatus) { st.Epoch = ss.Epoch })
			r.log.Info("continuing the stream's history", "source", ss.Name, "epoch", ss.Epoch, "seq_known", ss.SeqKnown, "seq", ss.Seq)
		}
	}
	r.px.rebuilt = true
	r.log.Info("index rebuilt from the stream", "messages", n, "took", took)
	return nil
}

func filterTokens(streams []spec.KVEvStream) []string {
	out := make([]string, len(streams))
	for i, s := range streams {
		out[i] = Token(s.Name)
	}
	return out
}
