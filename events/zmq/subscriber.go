// Package zmq is the KV-event subscriber: ZeroMQ sockets of vLLM and SGLang
// publishers into an injected event-fed index. It is the networking between
// vLLM/SGLang ZeroMQ KV-event publishers (docs/spec/kv-events.md §1.1-1.2,
// §3) and an event-fed index (spec.KVEvIndex). (Before issue 28 the package
// was kvevsub.)
//
// The index never opens a socket (§2.10 A1, A7). For each source the
// subscriber keeps a SUB socket on the publisher's PUB endpoint and passes
// every message, in order, to the index's Live; when a result carries a
// ReplayRequest it sends exactly those frames on a DEALER socket to the
// source's replay endpoint and passes each reply to Replay, until a result
// says ReplayDone or asks for a new replay. Five seconds without a reply
// frame, or a replay still without its sentinel after ReplayMaxDuration, is
// ReplayFailed("timeout"), a reply the index calls replay_protocol
// is ReplayFailed("protocol"); both recreate the DEALER and start a 30 s
// cooldown during which replay requests are answered with
// ReplayFailed("unavailable"). Live messages that arrive during a replay are
// passed to Live as well: the index holds them (bounded by its max_held).
//
// A source with a snapshot endpoint (vLLM's snapshot service, §3.5
// [uncertain], §2.10 A13) also has a snapshot DEALER: when a result carries
// a SnapshotRequest the subscriber dials a fresh DEALER, sends REQ's
// envelope ["", "snapshot"] (a REP socket answers a DEALER that sends the
// empty delimiter as it answers a REQ), and passes the reply's frames
// after the delimiter to the index's SnapshotReply, or SnapshotFailed with
// "timeout" (SnapshotTimeout without the reply), "protocol" (a reply the
// index calls snapshot_protocol, or one without the delimiter) or
// "unavailable" (no connection, the connection lost, or the cooldown of
// ReplayCooldown after a failure). A live socket silent past
// HeartbeatTimeout is reported with HeartbeatLost, once per silence. Such
// a source needs an index that implements spec.KVEvBootstrapper: New and
// AddSource refuse it otherwise, since the index would hold the source's
// messages for a reply nobody could report.
//
// Sources can be added and removed while the subscriber runs (AddSource,
// RemoveSource; §2.10 A11): an add starts the source's goroutines under
// Run's context, a removal ends them and closes the source's sockets
// before its stream leaves the index; the other sources are not touched.
//
// Sockets are go-zeromq's (pure Go). See sockets.go for its queueing,
// guard.go for the bounds the subscriber adds to it, and budget.go for the
// one byte budget over everything the subscriber holds (MaxBufferedBytes).
// Refused messages, batches and events and step errors are logged at most
// once per LogInterval per source (the rest counted).
//
// Its errors still begin "kvevsub:", the name they had before the event
// packages moved under events/, so that no error text an operator matches
// in logs changed with the move.
package zmq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvtwin/kvtwin/spec"
)

// Subscriber feeds one index from a set of sources that can change while
// it runs (AddSource, RemoveSource; docs/spec/kv-events.md §2.10 A11).
// Build it with New; Run it once.
type Subscriber struct {
	ix     spec.KVEvIndex
	opts   Options
	scheme string
	// snapScheme is the guarded scheme of snapshot connections, whose
	// bounds are the snapshot reply's (SnapshotMaxBytes, SnapshotMaxChunks).
	snapScheme string
	budget     *byteBudget
	ran        atomic.Bool

	// change serializes AddSource and RemoveSource: each holds it across
	// its index call and the start or end of the source's goroutines, so
	// the index's streams and the subscriber's sources change together.
	change sync.Mutex

	// mu guards what follows; it is never held while waiting for a
	// source's goroutines, so Status answers during a removal.
	mu      sync.Mutex
	streams []*stream // configuration order: New's, then the adds
	// runCtx is Run's context once Run has started (nil before), under
	// which every source's goroutines run; stopped says Run's context
	// ended, after which no goroutine is started (wg.Wait has begun).
	runCtx  context.Context
	stopped bool
	wg      sync.WaitGroup
}

// New checks the sources and options and builds a Subscriber over ix. Every
// source must name a stream of ix; build ix over Streams(sources) so its
// streams' Rank and Replay match. sources may be empty: AddSource adds
// them later. Errors are *spec.InputError wrapping ErrBadSource.
func New(ix spec.KVEvIndex, sources []Source, opts Options) (*Subscriber, error) {
	if ix == nil {
		return nil, errors.New("kvevsub: nil index")
	}
	if err := validateSources(sources); err != nil {
		return nil, err
	}
	for _, s := range sources {
		if err := checkBootstrapper(ix, s); err != nil {
			return nil, err
		}
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, st := range ix.State().Streams {
		names[st.Name] = true
	}
	for _, s := range sources {
		if !names[s.Name] {
			return nil, spec.Reject(ErrBadSource, "source.name", s.Name, "the name of one of the index's streams")
		}
	}
	scheme, err := guardedScheme(o.MaxMessageBytes, o.MaxFrames)
	if err != nil {
		return nil, fmt.Errorf("kvevsub: %w", err)
	}
	snapScheme, err := guardedScheme(o.SnapshotMaxBytes, o.SnapshotMaxChunks+snapshotEnvelopeFrames)
	if err != nil {
		return nil, fmt.Errorf("kvevsub: %w", err)
	}
	sub := &Subscriber{ix: ix, opts: o, scheme: scheme, snapScheme: snapScheme, budget: newByteBudget(o.MaxBufferedBytes, o.BufferWait)}
	for _, s := range sources {
		sub.streams = append(sub.streams, sub.newStream(s))
	}
	return sub, nil
}

// newStream builds the stream of src over the subscriber's index, options
// and budget; it is not started.
func (s *Subscriber) newStream(src Source) *stream {
	return newStream(src, s.ix, s.opts, s.scheme, s.snapScheme, s.budget)
}

// checkBootstrapper refuses a source with a snapshot endpoint over an
// index that does not implement spec.KVEvBootstrapper: the index would ask
// for snapshots (its stream has the snapshot flag) and hold the source's
// live messages until a reply or failure the subscriber could not report.
func checkBootstrapper(ix spec.KVEvIndex, src Source) error {
	if src.Snapshot == "" {
		return nil
	}
	if _, ok := ix.(spec.KVEvBootstrapper); ok {
		return nil
	}
	return spec.Reject(ErrBadSource, fieldOf(src.Name, "snapshot"), src.Snapshot,
		fmt.Sprintf("unset: the index (%T) does not implement spec.KVEvBootstrapper, so it cannot take a snapshot bootstrap (§2.10 A13)", ix))
}

// Buffered reports the byte budget (Options.MaxBufferedBytes) and the
// bytes all sources hold in it now.
func (s *Subscriber) Buffered() (budget, inUse int64) {
	return s.budget.capacity, s.budget.inUse()
}

// Run connects every source and feeds the index until ctx ends, then
// closes every socket and returns nil once all its goroutines have ended,
// those of sources added while it ran included. It runs once; a second
// call returns an error at once.
func (s *Subscriber) Run(ctx context.Context) error {
	if !s.ran.CompareAndSwap(false, true) {
		return errors.New("kvevsub: Run called twice")
	}
	s.mu.Lock()
	s.runCtx = ctx
	for _, st := range s.streams {
		s.start(st)
	}
	s.mu.Unlock()
	<-ctx.Done()
	// Once stopped is set no goroutine is added, so every wg.Go happened
	// before this Wait, as sync.WaitGroup requires.
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// start runs st's goroutines under a context of its own, derived from
// Run's, so RemoveSource can end them alone and Run's end ends them all.
// The caller holds s.mu; Run has started and not stopped.
func (s *Subscriber) start(st *stream) {
	ctx, cancel := context.WithCancel(s.runCtx)
	st.cancel, st.done = cancel, make(chan struct{})
	s.wg.Go(func() {
		defer close(st.done)
		defer cancel()
		st.run(ctx)
	})
}

// AddSource adds src while Run runs, or before it starts (§2.10 A11). It
// checks src as New does (Source.Validate, a name no current source has, at
// most MaxSources sources), then adds its stream to the index: the index's
// refusal (a name it has, no room for one more engine share:
// spec.ErrTooLarge at config.max_engines) is returned unchanged and leaves
// the subscriber unchanged. Once added, the source's SUB (and, for its
// replays, DEALER) goroutines start under Run's context, so they end with
// Run. Other sources are not touched. Errors of the checks are
// *spec.InputError wrapping ErrBadSource, or spec.ErrTooLarge at "sources"
// for one source too many; adding after Run returned is an error.
func (s *Subscriber) AddSource(src Source) error {
	if err := src.Validate(); err != nil {
		return err
	}
	if err := checkBootstrapper(s.ix, src); err != nil {
		return err
	}
	s.change.Lock()
	defer s.change.Unlock()
	if err := s.checkAdd(src.Name); err != nil {
		return err
	}
	if err := s.ix.AddStream(src.Stream()); err != nil {
		return err
	}
	st := s.newStream(src)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.streams = append(s.streams, st)
	if s.runCtx != nil && !s.stopped {
		s.start(st)
	}
	return nil
}

// checkAdd refuses a source named name when the subscriber has stopped,
// has a source of that name, or has MaxSources sources already.
func (s *Subscriber) checkAdd(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.stopped:
		return fmt.Errorf("kvevsub: source %s not added: the subscriber has stopped (its Run ended)", name)
	case s.find(name) >= 0:
		return spec.Reject(ErrBadSource, "source.name", name, "a name no other source has")
	case len(s.streams) >= MaxSources:
		return spec.Reject(spec.ErrTooLarge, "sources", len(s.streams)+1, fmt.Sprintf("at most %d sources", MaxSources))
	}
	return nil
}

// RemoveSource removes the named source (§2.10 A11): its goroutines are
// stopped and its sockets closed, and only once they have ended is its
// stream removed from the index (RemoveStream), so no message of the
// source reaches the index afterwards; the bytes it held in the buffer
// budget are released as its sockets close. Other sources keep their
// connections and their index state. An unknown name is a
// *spec.InputError wrapping ErrUnknownSource.
func (s *Subscriber) RemoveSource(name string) error {
	s.change.Lock()
	defer s.change.Unlock()
	st, err := s.take(name)
	if err != nil {
		return err
	}
	if st.cancel != nil {
		st.cancel()
		<-st.done
	}
	if err := s.ix.RemoveStream(name); err != nil {
		return fmt.Errorf("kvevsub: source %s stopped but its index stream was not removed: %w", name, err)
	}
	return nil
}

// take removes the named stream from the configuration and returns it,
// with the cancel and done of its goroutines when they were started
// (read under mu, where start sets them).
func (s *Subscriber) take(name string) (*stream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.find(name)
	if i < 0 {
		return nil, spec.Reject(ErrUnknownSource, "source.name", name, "the name of a current source")
	}
	st := s.streams[i]
	s.streams = slices.Delete(s.streams, i, i+1)
	return st, nil
}

// find is the position of the source named name, or -1. The caller holds s.mu.
func (s *Subscriber) find(name string) int {
	return slices.IndexFunc(s.streams, func(st *stream) bool { return st.src.Name == name })
}

// Source returns the configuration of the source named name, and whether
// there is one.
func (s *Subscriber) Source(name string) (Source, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := s.find(name); i >= 0 {
		return s.streams[i].src, true
	}
	return Source{}, false
}

// Restart tells the index that the named source's publisher was replaced
// (docs/spec/kv-events.md §3.4: an operator's or discovery's signal): the
// stream's engines are dropped and an outstanding replay is abandoned. The
// signal is applied by the source's goroutine, in order with its messages,
// once Run is running; signals not yet applied coalesce. It returns an
// error for a name that is not a source.
func (s *Subscriber) Restart(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.find(name)
	if i < 0 {
		return spec.Reject(ErrBadSource, "source.name", name, "the name of a configured source")
	}
	select {
	case s.streams[i].restart <- struct{}{}:
	default:
	}
	return nil
}

// Status returns every current source's status, in configuration order
// (New's sources, then the adds in the order they happened).
func (s *Subscriber) Status() []SourceStatus {
	s.mu.Lock()
	streams := slices.Clone(s.streams)
	s.mu.Unlock()
	out := make([]SourceStatus, len(streams))
	for i, st := range streams {
		out[i] = st.status()
	}
	return out
}

// SourceStatus is a source's connection and replay state, for
// /v1/events/sources and per-source metrics. Counters only grow.
type SourceStatus struct {
	// Name, Endpoint, Replay, Snapshot, Rank and Topic echo the source.
	Name     string `json:"name"`
	Endpoint string `json:"endpoint"`
	Replay   string `json:"replay,omitzero"`
	Snapshot string `json:"snapshot,omitzero"`
	Rank     int64  `json:"rank"`
	Topic    string `json:"topic"`

	// Connected says the SUB socket is connected now.
	Connected bool `json:"connected"`
	// ConnectedSince is when the current connection was made.
	ConnectedSince time.Time `json:"connected_since,omitzero"`
	// Connects counts successful SUB connections; Reconnects those after
	// the first.
	Connects   uint64 `json:"connects"`
	Reconnects uint64 `json:"reconnects"`
	// Disconnects counts lost SUB connections.
	Disconnects uint64 `json:"disconnects"`
	// DialFailures counts SUB dials that failed.
	DialFailures uint64 `json:"dial_failures"`

	// SeqSeen says a live message with an 8-byte seq frame arrived.
	SeqSeen bool `json:"seq_seen"`
	// LastSeq is the seq of the last such message.
	LastSeq uint64 `json:"last_seq"`
	// Messages counts live messages passed to the index.
	Messages uint64 `json:"messages"`
	// Filtered counts live messages dropped because their topic lacks the
	// source's prefix.
	Filtered uint64 `json:"filtered"`
	// StepErrors counts index results that carried an error (malformed
	// frames, a reply while not replaying, ...).
	StepErrors uint64 `json:"step_errors"`
	// RefusedBatches counts batches the index refused whole (a decoding
	// error, an engine it would not create, ...; §2.7, §2.10 A2);
	// OversizedMessages those of them past the bounds of one message
	// (message_budget, §2.10 A10).
	RefusedBatches    uint64 `json:"refused_batches"`
	OversizedMessages uint64 `json:"oversized_messages"`

	// BufferedBytes is what the source holds in the subscriber's byte
	// budget now: frames queued in go-zeromq, the message being handed
	// over, replay replies, and the live messages the index holds.
	BufferedBytes int64 `json:"buffered_bytes"`
	// BufferOverflows counts connections closed because a frame found no
	// room in the budget within BufferWait.
	BufferOverflows uint64 `json:"buffer_overflows"`
	// LogSuppressed counts log lines about refusals held back by the
	// per-source LogInterval.
	LogSuppressed uint64 `json:"log_suppressed"`

	// Replaying says a replay request is outstanding.
	Replaying bool `json:"replaying"`
	// ReplayRequests counts requests sent; ReplayReplies the replies received.
	ReplayRequests uint64 `json:"replay_requests"`
	ReplayReplies  uint64 `json:"replay_replies"`
	// ReplaysOK counts replays that ended with their sentinel.
	ReplaysOK uint64 `json:"replays_ok"`
	// ReplaysFailed counts ReplayFailed calls; the three after it split
	// them by reason.
	ReplaysFailed      uint64    `json:"replays_failed"`
	ReplayTimeouts     uint64    `json:"replay_timeouts"`
	ReplayProtocol     uint64    `json:"replay_protocol_errors"`
	ReplayUnavailable  uint64    `json:"replay_unavailable"`
	ReplayCooldownTill time.Time `json:"replay_cooldown_until,omitzero"`

	// Snapshotting says a snapshot request is outstanding (sources with a
	// snapshot endpoint; these fields are omitted while zero).
	Snapshotting bool `json:"snapshotting,omitzero"`
	// SnapshotRequests counts snapshot requests sent; SnapshotReplies the
	// replies received.
	SnapshotRequests uint64 `json:"snapshot_requests,omitzero"`
	SnapshotReplies  uint64 `json:"snapshot_replies,omitzero"`
	// SnapshotsOK counts snapshots the index installed.
	SnapshotsOK uint64 `json:"snapshots_ok,omitzero"`
	// SnapshotsFailed counts snapshot requests that ended without one; the
	// three after it split them: no reply in time, a malformed reply or
	// chunk, and unavailable (the publisher said so with seq < -1, no
	// connection, or the cooldown).
	SnapshotsFailed      uint64    `json:"snapshots_failed,omitzero"`
	SnapshotTimeouts     uint64    `json:"snapshot_timeouts,omitzero"`
	SnapshotProtocol     uint64    `json:"snapshot_protocol_errors,omitzero"`
	SnapshotUnavailable  uint64    `json:"snapshot_unavailable,omitzero"`
	SnapshotCooldownTill time.Time `json:"snapshot_cooldown_until,omitzero"`
	// HeartbeatsLost counts the times the live socket stayed silent past
	// Options.HeartbeatTimeout (sources with a snapshot endpoint only).
	HeartbeatsLost uint64 `json:"heartbeats_lost,omitzero"`

	// LastError is the last connection, replay or index error, and when.
	LastError   string    `json:"last_error,omitzero"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
}
