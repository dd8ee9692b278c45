package scaleout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvtwin/kvtwin/spec"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ReplicaOptions configure a Replica. Zero fields take the defaults of
// DefaultReplicaOptions.
type ReplicaOptions struct {
	// URL is the NATS server URL (nats://HOST:PORT, comma-separated for a
	// cluster). Ignored when Conn is set.
	URL string
	// Conn is a connection the caller owns; nil: Run dials URL and closes
	// the connection when it returns.
	Conn *nats.Conn
	// Stream is the JetStream stream (default KVTWIN_KV).
	Stream string
	// ID is the replica's id and its durable consumer's name: 1 to 128
	// characters of [A-Za-z0-9_-]. A restarted replica must keep its id to
	// resume (§4.3); a new id reads the stream from its first message.
	ID string
	// Sources are the sources the replica serves, each TOKEN[,rank=N]: the
	// relay's source token (Token of its name; a name that is already a
	// token is its own token) and, for batches whose data_parallel_rank is
	// nil, the rank the relay's source has. Build the index over
	// ReplicaStreams(Sources).
	Sources []string
	// Logger receives the replica's log lines (nil: discard).
	Logger *slog.Logger
	// AckWait is how long JetStream waits for an ack before redelivering.
	AckWait time.Duration
	// InactiveThreshold is how long JetStream keeps the durable consumer of
	// a replica that is gone. A replica that returns after it is deleted
	// reads the stream from its first message, which is what resuming does
	// anyway (§4.3 (b)).
	InactiveThreshold time.Duration
	// MaxAckPending bounds the messages delivered and not yet acked.
	MaxAckPending int
	// PullBatch is how many messages the client buffers ahead.
	PullBatch int
	// MaxMessageBytes bounds a message body; a larger one is dropped
	// (counted; the index then sees a seq gap and marks the source stale).
	MaxMessageBytes int64
	// RetryMin and RetryMax bound the backoff between attempts to reach the
	// stream or its consumer.
	RetryMin, RetryMax time.Duration
	// ReadIdle is how long reading the stream's history waits for a message
	// before it takes the history as read.
	ReadIdle time.Duration
	// Snapshots, with a Bucket, make the replica warm (§4.3 option (a),
	// amendment 2026-12-06): it stores snapshots of its index in a
	// JetStream object store and starts from the newest usable one.
	Snapshots SnapshotOptions
}

// DefaultReplicaOptions: stream KVTWIN_KV, 30 s ack wait, consumers of gone
// replicas kept an hour, 10,000 unacked messages, 512 buffered, messages up
// to 64 MiB, retries from 100 ms to 5 s, 5 s read idle.
func DefaultReplicaOptions() ReplicaOptions {
	return ReplicaOptions{
		Stream: DefaultStream, AckWait: 30 * time.Second, InactiveThreshold: time.Hour,
		MaxAckPending: 10000, PullBatch: 512, MaxMessageBytes: 64 << 20,
		RetryMin: 100 * time.Millisecond, RetryMax: 5 * time.Second, ReadIdle: 5 * time.Second,
	}
}

// Bounds of ReplicaOptions.
const (
	maxReplicaSources        = 1024
	maxMaxMessageBytes       = 1 << 30
	maxPullBatch             = 1 << 16
	maxMaxAckPending         = 1 << 20
	maxSourceRank      int64 = 65535
)

// ReplicaSource is one parsed entry of ReplicaOptions.Sources.
type ReplicaSource struct {
	// Token is the relay's subject token and the index's stream name.
	Token string
	// Rank is the rank of batches whose data_parallel_rank is nil.
	Rank int64
}

// ParseReplicaSource reads TOKEN[,rank=N]. Errors wrap ErrBadOption and
// name sources[i].
func ParseReplicaSource(sp string) (ReplicaSource, error) {
	tok, opt, hasOpt := strings.Cut(sp, ",")
	if !validToken(tok) {
		return ReplicaSource{}, spec.Reject(ErrBadOption, "source", strconv.Quote(sp),
			fmt.Sprintf("TOKEN[,rank=N] with a TOKEN of 1 to %d characters of [A-Za-z0-9_-] (the relay's subject token: its source name with other bytes as _)", maxTokenLen))
	}
	s := ReplicaSource{Token: tok}
	if hasOpt {
		v, ok := strings.CutPrefix(opt, "rank=")
		r, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil || r < 0 || r > maxSourceRank {
			return ReplicaSource{}, spec.Reject(ErrBadOption, "source["+tok+"].rank", strconv.Quote(opt), fmt.Sprintf("rank=N with N in [0, %d]", maxSourceRank))
		}
		s.Rank = r
	}
	return s, nil
}

// ParseReplicaSources parses every entry and rejects duplicates.
func ParseReplicaSources(specs []string) ([]ReplicaSource, error) {
	if len(specs) == 0 || len(specs) > maxReplicaSources {
		return nil, spec.Reject(ErrBadOption, "sources", len(specs), fmt.Sprintf("1 to %d sources", maxReplicaSources))
	}
	out := make([]ReplicaSource, 0, len(specs))
	seen := map[string]bool{}
	for _, sp := range specs {
		s, err := ParseReplicaSource(sp)
		if err != nil {
			return nil, err
		}
		if seen[s.Token] {
			return nil, spec.Reject(ErrBadOption, "source", s.Token, "a token no other source has")
		}
		seen[s.Token] = true
		out = append(out, s)
	}
	return out, nil
}

// ReplicaStreams are the index streams a replica serving sources needs:
// named by token, with the source's rank, and no replay endpoint (the relay
// already healed what it could; a seq jump is a gap the index marks stale,
// §3.3, A3).
func ReplicaStreams(sources []string) ([]spec.KVEvStream, error) {
	ss, err := ParseReplicaSources(sources)
	if err != nil {
		return nil, err
	}
	out := make([]spec.KVEvStream, len(ss))
	for i, s := range ss {
		out[i] = spec.KVEvStream{Name: s.Token, Rank: s.Rank}
	}
	return out, nil
}

func (o ReplicaOptions) withDefaults() (ReplicaOptions, error) {
	d := DefaultReplicaOptions()
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Conn == nil && o.URL == "" {
		return o, spec.Reject(ErrBadOption, "url", "", "a NATS URL nats://HOST:PORT, or a connection")
	}
	if o.Stream == "" {
		o.Stream = d.Stream
	}
	if !validToken(o.Stream) {
		return o, spec.Reject(ErrBadOption, "stream", o.Stream, fmt.Sprintf("1 to %d characters of [A-Za-z0-9_-]", maxTokenLen))
	}
	if !validToken(o.ID) {
		return o, spec.Reject(ErrBadOption, "id", strconv.Quote(o.ID), fmt.Sprintf("1 to %d characters of [A-Za-z0-9_-] (the durable consumer's name)", maxTokenLen))
	}
	err := fillDurations([]durOption{
		{"ack_wait", &o.AckWait, d.AckWait, time.Second},
		{"inactive_threshold", &o.InactiveThreshold, d.InactiveThreshold, time.Second},
		{"retry_min", &o.RetryMin, d.RetryMin, time.Millisecond},
		{"retry_max", &o.RetryMax, d.RetryMax, time.Millisecond},
		{"read_idle", &o.ReadIdle, d.ReadIdle, time.Millisecond},
	})
	if err != nil {
		return o, err
	}
	if o.Snapshots, err = o.Snapshots.withDefaults(); err != nil {
		return o, err
	}
	if o.RetryMax < o.RetryMin {
		return o, spec.Reject(ErrBadOption, "retry_max", o.RetryMax, fmt.Sprintf(">= retry_min (%v)", o.RetryMin))
	}
	ints := []struct {
		name     string
		v        *int64
		def, max int64
	}{
		{"max_message_bytes", &o.MaxMessageBytes, d.MaxMessageBytes, maxMaxMessageBytes},
	}
	for _, f := range ints {
		if *f.v == 0 {
			*f.v = f.def
		}
		if *f.v < 1 || *f.v > f.max {
			return o, spec.Reject(ErrBadOption, f.name, *f.v, fmt.Sprintf("in [1, %d] (0: the default, %d)", f.max, f.def))
		}
	}
	if o.MaxAckPending == 0 {
		o.MaxAckPending = d.MaxAckPending
	}
	if o.MaxAckPending < 1 || o.MaxAckPending > maxMaxAckPending {
		return o, spec.Reject(ErrBadOption, "max_ack_pending", o.MaxAckPending, fmt.Sprintf("in [1, %d] (0: the default, %d)", maxMaxAckPending, d.MaxAckPending))
	}
	if o.PullBatch == 0 {
		o.PullBatch = d.PullBatch
	}
	if o.PullBatch < 1 || o.PullBatch > maxPullBatch {
		return o, spec.Reject(ErrBadOption, "pull_batch", o.PullBatch, fmt.Sprintf("in [1, %d] (0: the default, %d)", maxPullBatch, d.PullBatch))
	}
	return o, nil
}

// Replica feeds an index from the relay's JetStream stream
// (docs/spec/kv-events.md §4.3) through a durable pull consumer named
// after the replica's id (explicit acks, deliver-all on creation, filter
// kvtwin.kv.>), applying each message in stream order and acking it after.
//
// Resume (§4.3 option (b)): the index lives in memory, so when the durable
// consumer already exists (the replica restarted), Run first rebuilds the
// index from the stream: it reads every retained message up to the last
// one the consumer delivered, with an ordered consumer and no acks, then
// consumes the durable consumer, dropping (and acking) what it redelivers
// from that range. Messages the stream no longer holds cannot be read: a
// source whose retained history does not start with its epoch's seq 0 is
// marked stale by the index (§3.1 step 1: the first batch's seq is not 0),
// and Status says the history was truncated. See applier for the rule per
// message.
type Replica struct {
	ix      *swapIndex
	o       ReplicaOptions
	log     *slog.Logger
	ap      *applier
	sources []ReplicaSource
	order   []string // source tokens in configuration order
	filter  []string
	ran     atomic.Bool
	nc      atomic.Pointer[nats.Conn] // the connection Run uses, for Status
	mu      sync.Mutex
	st      ReplicaStatus

	// applyMu is held while a message is applied and while a snapshot
	// is taken, so that a snapshot covers exactly applied. applied is the
	// stream seq of the last message handled: written by Run under
	// applyMu, read by the snapshot writer under it.
	applyMu sync.Mutex
	applied uint64
	// snap writes and names snapshots; nil without a bucket. triedSnap
	// says a start already read the bucket (start is retried).
	snap      *snapWriter
	triedSnap bool

	// afterStart, when set (tests), runs between the rebuild and the
	// first pull from the durable consumer.
	afterStart func()
}

// ReplicaStatus is a replica's state, for /v1/events/sources and metrics.
// Counters only grow.
type ReplicaStatus struct {
	// ID, Stream and Consumer echo the options (Consumer = ID).
	ID       string `json:"id"`
	Stream   string `json:"stream"`
	Consumer string `json:"consumer"`
	// Phase is starting, waiting_for_stream, rebuilding, consuming or stopped.
	Phase string `json:"phase"`
	// Connected says the NATS connection is up.
	Connected bool `json:"connected"`
	// Resumed says the durable consumer existed when Run started: the index
	// was rebuilt from the stream (RebuildMessages in RebuildSeconds).
	Resumed         bool    `json:"resumed"`
	RebuildMessages uint64  `json:"rebuild_messages"`
	RebuildSeconds  float64 `json:"rebuild_seconds"`
	// FirstSeq is the stream's first retained sequence when Run started.
	// HistoryTruncated says it was past 1: messages had expired or been
	// purged, so sources whose retained history does not start at an
	// epoch's seq 0 are stale in the index.
	FirstSeq         uint64 `json:"first_seq"`
	HistoryTruncated bool   `json:"history_truncated"`
	// AppliedSeq is the stream sequence of the last message handled.
	AppliedSeq uint64 `json:"applied_seq"`
	// Pending is how many messages the durable consumer still holds for
	// the replica: its backlog behind the stream head, from the consumer's
	// info when consuming starts and from each message's metadata after.
	// Only meaningful in PhaseConsuming.
	Pending uint64 `json:"pending"`
	// Messages counts messages handled (rebuild and consumer).
	Messages uint64 `json:"messages"`
	// Redelivered counts messages delivered again after they were handled:
	// acked and dropped.
	Redelivered uint64 `json:"redelivered"`
	// Fills counts holes in the consumer's delivery read from the stream
	// (messages delivered to a previous run that it did not handle).
	Fills uint64 `json:"fills"`
	// Ignored counts messages for subjects of sources the replica does not serve.
	Ignored uint64 `json:"ignored"`
	// Malformed counts messages whose headers are not the relay's.
	Malformed uint64 `json:"malformed"`
	// Oversize counts messages past MaxMessageBytes.
	Oversize uint64 `json:"oversize"`
	// ConsumerRecreated counts durable consumers created again after the
	// server deleted them while the replica ran.
	ConsumerRecreated uint64 `json:"consumer_recreated"`
	// LastError is the last error, and when.
	LastError   string    `json:"last_error,omitzero"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
	// Sources are the served sources in configuration order.
	Sources []SourceState `json:"sources"`
	// Snapshot is the snapshot state when a bucket is configured (§4.3
	// option (a)).
	Snapshot *SnapshotStatus `json:"snapshot,omitzero"`
}

// Phases of a replica.
const (
	PhaseStarting  = "starting"
	PhaseWaiting   = "waiting_for_stream"
	PhaseRebuild   = "rebuilding"
	PhaseConsuming = "consuming"
	PhaseStopped   = "stopped"
)

// NewReplica checks the options and builds a replica over ix, which must
// have been built over ReplicaStreams(opts.Sources) (a fresh index: the
// replica feeds it from the stream's start or rebuilds it). Errors are
// *spec.InputError wrapping ErrBadOption.
func NewReplica(ix spec.KVEvIndex, opts ReplicaOptions) (*Replica, error) {
	if ix == nil {
		return nil, errors.New("kvevjs: nil index")
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	streams, err := ReplicaStreams(o.Sources)
	if err != nil {
		return nil, err
	}
	if _, ok := ix.(spec.KVEvSnapshotter); !ok && o.Snapshots.Bucket != "" {
		return nil, spec.Reject(ErrBadOption, "snapshots.bucket", o.Snapshots.Bucket, "unset, or an index that implements spec.KVEvSnapshotter (A12)")
	}
	have := map[string]bool{}
	for _, st := range ix.State().Streams {
		have[st.Name] = true
	}
	sources, err := ParseReplicaSources(o.Sources)
	if err != nil {
		return nil, err
	}
	r := &Replica{ix: newSwapIndex(ix), o: o, log: o.Logger.With("replica", o.ID), filter: sourceSubjects(sources), sources: sources}
	for _, s := range streams {
		if !have[s.Name] {
			return nil, spec.Reject(ErrBadOption, "sources", s.Name, "a stream of the index (build it over ReplicaStreams(sources))")
		}
		r.order = append(r.order, s.Name)
	}
	r.ap = newApplier(r.ix, r.log, streams)
	r.st = ReplicaStatus{ID: o.ID, Stream: o.Stream, Consumer: o.ID, Phase: PhaseStarting}
	if o.Snapshots.Bucket != "" {
		r.snap = newSnapWriter(r, o.Snapshots, sources)
		r.st.Snapshot = &SnapshotStatus{Bucket: o.Snapshots.Bucket}
	}
	return r, nil
}

// Index is the index the replica feeds, to serve from: the one NewReplica
// was given until a snapshot restores another in its place (§4.3 option
// (a)); calls made through Index always reach the current one.
func (r *Replica) Index() spec.KVEvIndex { return r.ix }

// Status returns the replica's state.
func (r *Replica) Status() ReplicaStatus {
	r.mu.Lock()
	st := r.st
	if st.Snapshot != nil {
		st.Snapshot = new(*st.Snapshot)
	}
	r.mu.Unlock()
	if nc := r.nc.Load(); nc != nil && st.Phase != PhaseStopped {
		st.Connected = nc.IsConnected()
	}
	st.Ignored = r.ap.ignoredCount()
	st.Sources = r.ap.states(r.order)
	return st
}

func (r *Replica) update(f func(st *ReplicaStatus)) {
	r.mu.Lock()
	f(&r.st)
	r.mu.Unlock()
}

func (r *Replica) setError(err error) {
	r.update(func(st *ReplicaStatus) {
		st.LastError = err.Error()
		st.LastErrorAt = time.Now()
	})
}

// Run connects, rebuilds the index if the replica is resuming, and applies
// the stream until ctx ends; it then returns nil once every goroutine it
// started has ended (and the connection it dialed is closed). Errors that
// can pass (the server away, the stream not created yet, a consumer
// deleted) are retried with backoff and shown in Status; Run returns an
// error only for a URL it cannot use. It runs once.
func (r *Replica) Run(ctx context.Context) error {
	if !r.ran.CompareAndSwap(false, true) {
		return errors.New("kvevjs: Replica.Run called twice")
	}
	defer r.update(func(st *ReplicaStatus) { st.Phase = PhaseStopped; st.Connected = false })
	r.update(func(st *ReplicaStatus) { st.Phase = PhaseStarting })
	nc := r.o.Conn
	if nc == nil {
		var closeNC func()
		var err error
		nc, closeNC, err = dialNATS(r.o.URL, "kvtwin-replica-"+r.o.ID, r.log)
		if err != nil {
			return fmt.Errorf("kvevjs: replica %s: connect %s: %w", r.o.ID, r.o.URL, err)
		}
		defer closeNC()
	}
	r.nc.Store(nc)
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("kvevjs: replica %s: %w", r.o.ID, err)
	}
	bo := newBackoff(r.o.RetryMin, r.o.RetryMax)
	var cons jetstream.Consumer
	for {
		if cons, err = r.start(ctx, js); err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		r.setError(err)
		r.log.Warn("replica start failed; retrying", "err", err, "retry_in", bo.next())
		if !bo.wait(ctx) {
			return nil
		}
	}
	if r.afterStart != nil {
		r.afterStart()
	}
	if r.snap != nil {
		var wg sync.WaitGroup
		defer wg.Wait()
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		wg.Go(func() { r.snap.run(wctx, js) })
	}
	r.consume(ctx, js, cons)
	return nil
}

// start finds the stream, then resumes the durable consumer (rebuilding the
// index) or creates it.
func (r *Replica) start(ctx context.Context, js jetstream.JetStream) (jetstream.Consumer, error) {
	r.update(func(st *ReplicaStatus) { st.Phase = PhaseWaiting })
	s, err := js.Stream(ctx, r.o.Stream)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", r.o.Stream, err)
	}
	info := s.CachedInfo().State
	if r.snap != nil && !r.triedSnap {
		restored, err := r.restore(ctx, js, info.LastSeq)
		if err != nil {
			return nil, err
		}
		r.triedSnap = true
		if restored {
			r.updateSnap(func(st *SnapshotStatus) { st.TailExpired = info.FirstSeq > r.applied+1 })
		}
	}
	// The history the index lacks starts at applied+1 (1 without a
	// snapshot): truncated when the stream no longer holds it.
	first, from := info.FirstSeq, r.applied+1
	r.update(func(st *ReplicaStatus) { st.FirstSeq, st.HistoryTruncated = first, first > from })
	if first > from {
		r.log.Warn("the stream's history the index needs has expired or was purged: sources whose retained history does not start at an epoch's first batch will be stale",
			"stream", r.o.Stream, "first_seq", first, "needed_from", from)
	}
	if from == 1 {
		from = 0 // deliver all
	}
	cons, err := s.Consumer(ctx, r.o.ID)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		r.log.Info("creating the durable consumer", "consumer", r.o.ID, "from_seq", max(from, 1))
		return s.CreateConsumer(ctx, r.consumerConfig(from))
	case err != nil:
		return nil, fmt.Errorf("consumer %s: %w", r.o.ID, err)
	}
	if c := cons.CachedInfo().Config; c.AckPolicy != jetstream.AckExplicitPolicy || c.FilterSubject != "" || !sameSubjects(c.FilterSubjects, r.filter) {
		// Not a consumer this code made for these sources (or one an
		// earlier version made, filtering every subject): replace it.
		r.log.Warn("the durable consumer has another configuration; recreating it", "consumer", r.o.ID, "ack_policy", c.AckPolicy, "filter", c.FilterSubject, "filters", len(c.FilterSubjects))
		return r.recreateConsumer(ctx, s, from)
	}
	// Resume: rebuild up to what the consumer delivered to the previous run.
	upTo := cons.CachedInfo().Delivered.Stream
	if r.applied > upTo {
		// A snapshot covers more than the consumer delivered: start it
		// after the snapshot rather than drop what it would redeliver.
		r.log.Info("the snapshot is ahead of the durable consumer; recreating it after the snapshot", "consumer", r.o.ID, "delivered", upTo, "from_seq", from)
		return r.recreateConsumer(ctx, s, from)
	}
	r.update(func(st *ReplicaStatus) { st.Phase = PhaseRebuild; st.Resumed = true })
	r.log.Info("resuming: rebuilding the index from the stream", "consumer", r.o.ID, "first_seq", first, "up_to", upTo)
	t0 := time.Now()
	n, err := r.read(ctx, js, r.applied+1, upTo)
	if err != nil {
		return nil, fmt.Errorf("rebuild from %s: %w", r.o.Stream, err)
	}
	r.applyMu.Lock()
	r.applied = max(r.applied, upTo)
	r.applyMu.Unlock()
	took := time.Since(t0)
	r.update(func(st *ReplicaStatus) {
		st.RebuildMessages += n
		st.RebuildSeconds += took.Seconds()
		st.AppliedSeq = r.applied
	})
	r.log.Info("index rebuilt", "messages", n, "took", took)
	return cons, nil
}

// sourceSubjects are the subjects of sources, the replica's consumers'
// filters: JetStream sends a replica only its sources' messages, so that
// replicas partitioned by engine subset (docs/events.md, "Past one
// machine") each read their own share of the stream, not all of it.
func sourceSubjects(sources []ReplicaSource) []string {
	out := make([]string, len(sources))
	for i, s := range sources {
		out[i] = Subject(s.Token)
	}
	return out
}

// sameSubjects reports whether a and b hold the same subjects in any order.
func sameSubjects(a, b []string) bool {
	return len(a) == len(b) && slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// recreateConsumer deletes the durable consumer and creates it from from.
func (r *Replica) recreateConsumer(ctx context.Context, s jetstream.Stream, from uint64) (jetstream.Consumer, error) {
	if err := s.DeleteConsumer(ctx, r.o.ID); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("delete consumer %s: %w", r.o.ID, err)
	}
	return s.CreateConsumer(ctx, r.consumerConfig(from))
}

// consumerConfig is the durable consumer's configuration; from > 0 starts
// it at that stream sequence instead of the first.
func (r *Replica) consumerConfig(from uint64) jetstream.ConsumerConfig {
	c := jetstream.ConsumerConfig{
		Durable:           r.o.ID,
		Description:       "kvtwin replica " + r.o.ID + " (docs/spec/kv-events.md §4.3)",
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		AckPolicy:         jetstream.AckExplicitPolicy,
		AckWait:           r.o.AckWait,
		MaxDeliver:        -1,
		MaxAckPending:     r.o.MaxAckPending,
		FilterSubjects:    r.filter,
		InactiveThreshold: r.o.InactiveThreshold,
	}
	if from > 0 {
		c.DeliverPolicy, c.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
	}
	return c
}

// read applies the stream's messages in [from, to] (rebuild and fills).
func (r *Replica) read(ctx context.Context, js jetstream.JetStream, from, to uint64) (uint64, error) {
	return readRange(ctx, js, r.o.Stream, r.filter, from, to, r.o.ReadIdle, r.applyOne)
}

// applyOne applies the message at stream sequence seq and makes it the
// last applied, as one step for the snapshot writer.
func (r *Replica) applyOne(seq uint64, m jetstream.Msg) {
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	r.handle(seq, m)
	r.applied = seq
	if r.snap != nil {
		r.snap.applied()
	}
}

// consume applies the durable consumer's messages until ctx ends.
func (r *Replica) consume(ctx context.Context, js jetstream.JetStream, cons jetstream.Consumer) {
	bo := newBackoff(r.o.RetryMin, r.o.RetryMax)
	for ctx.Err() == nil {
		var pending uint64
		if ci, err := cons.Info(ctx); err == nil {
			pending = ci.NumPending
		}
		r.update(func(st *ReplicaStatus) { st.Phase, st.Pending = PhaseConsuming, pending })
		err := r.consumeOnce(ctx, js, cons)
		if ctx.Err() != nil {
			return
		}
		r.setError(err)
		if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) {
			// The server removed the consumer (inactive threshold, an
			// operator): the index is current, so continue after the last
			// message handled.
			r.log.Warn("the durable consumer is gone; recreating it after the last message applied", "consumer", r.o.ID, "from", r.applied+1)
			c, cerr := js.CreateOrUpdateConsumer(ctx, r.o.Stream, r.consumerConfig(r.applied+1))
			if cerr == nil {
				cons = c
				r.update(func(st *ReplicaStatus) { st.ConsumerRecreated++ })
				bo.reset()
				continue
			}
			err = cerr
			r.setError(err)
		}
		r.log.Warn("consumer failed; retrying", "err", err, "retry_in", bo.next())
		if !bo.wait(ctx) {
			return
		}
	}
}

// consumeOnce runs one pull iterator until it fails or ctx ends.
func (r *Replica) consumeOnce(ctx context.Context, js jetstream.JetStream, cons jetstream.Consumer) error {
	it, err := cons.Messages(jetstream.PullMaxMessages(r.o.PullBatch))
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	defer it.Stop()
	for {
		m, err := it.Next()
		if err != nil {
			if errors.Is(err, jetstream.ErrNoHeartbeat) && ctx.Err() == nil {
				r.log.Debug("no heartbeat from the consumer; still waiting", "consumer", r.o.ID)
				continue
			}
			return err
		}
		md, err := m.Metadata()
		if err != nil {
			r.update(func(st *ReplicaStatus) { st.Malformed++ })
			_ = m.Term()
			continue
		}
		q := md.Sequence.Stream
		if q <= r.applied {
			r.update(func(st *ReplicaStatus) { st.Redelivered++ })
			_ = m.Ack()
			continue
		}
		if q > r.applied+1 && r.applied > 0 {
			if err := r.fill(ctx, js, q); err != nil {
				return err // the message is redelivered after AckWait; the rest follow
			}
		}
		r.applyOne(q, m)
		r.update(func(st *ReplicaStatus) { st.Pending = md.NumPending })
		if err := m.Ack(); err != nil {
			r.log.Debug("ack failed; the message will be redelivered and dropped", "seq", q, "err", err)
		}
	}
}

// fill reads the messages between the last one handled and q, which the
// consumer delivered to a previous run (an outstanding pull request of a
// replica that died) and will only redeliver after AckWait, out of order.
func (r *Replica) fill(ctx context.Context, js jetstream.JetStream, q uint64) error {
	s, err := js.Stream(ctx, r.o.Stream)
	if err != nil {
		return err
	}
	if s.CachedInfo().State.FirstSeq >= q {
		return nil // expired: nothing to read
	}
	from := r.applied + 1
	n, err := r.read(ctx, js, from, q-1)
	r.update(func(st *ReplicaStatus) { st.Fills++ })
	r.log.Info("read messages the consumer delivered to a previous run", "from", from, "to", q-1, "messages", n)
	return err
}

// handle applies one message at stream sequence seq.
func (r *Replica) handle(seq uint64, m jetstream.Msg) {
	data := m.Data()
	var bad string
	if int64(len(data)) > r.o.MaxMessageBytes {
		bad = "oversize"
		r.log.Warn("message past max message bytes dropped: its source will see a gap", "seq", seq, "subject", m.Subject(), "bytes", len(data), "max", r.o.MaxMessageBytes)
	} else if w, err := parseWire(m.Subject(), m.Headers(), data); err != nil {
		bad = "malformed"
		r.log.Warn("malformed message dropped", "seq", seq, "subject", m.Subject(), "err", err)
		r.setError(fmt.Errorf("stream seq %d: %w", seq, err))
	} else {
		r.ap.apply(w)
	}
	r.update(func(st *ReplicaStatus) {
		st.Messages++
		st.AppliedSeq = seq
		switch bad {
		case "oversize":
			st.Oversize++
		case "malformed":
			st.Malformed++
		}
	})
}

// dialNATS connects to url for Run, reconnecting forever (the first
// connect too) and logging the connection's state changes. The returned
// close closes the connection and waits until nats.go has run its last
// callback, so that nothing logs or updates status after Run returns.
func dialNATS(url, name string, log *slog.Logger) (*nats.Conn, func(), error) {
	closed := make(chan struct{})
	nc, err := nats.Connect(url,
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true),
		nats.ReconnectWait(time.Second),
		nats.ConnectHandler(func(*nats.Conn) { log.Info("nats connected") }),
		nats.ReconnectHandler(func(c *nats.Conn) { log.Info("nats reconnected", "url", c.ConnectedUrlRedacted()) }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("nats disconnected", "err", err)
			}
		}),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }),
	)
	if err != nil {
		return nil, nil, err
	}
	return nc, func() {
		nc.Close()
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
		}
	}, nil
}

// backoff doubles a wait from min to max.
type backoff struct{ cur, min, max time.Duration }

func newBackoff(lo, hi time.Duration) *backoff { return &backoff{cur: lo, min: lo, max: hi} }

func (b *backoff) next() time.Duration { return b.cur }
func (b *backoff) reset()              { b.cur = b.min }

// wait sleeps the current wait (false when ctx ends first) and doubles it.
func (b *backoff) wait(ctx context.Context) bool {
	t := time.NewTimer(b.cur)
	defer t.Stop()
	b.cur = min(2*b.cur, b.max)
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// durOption is one duration option: 0 takes def, and a value below min is
// refused, naming the option.
type durOption struct {
	name   string
	v      *time.Duration
	def, m time.Duration
}

// fillDurations applies each option's default and checks its floor, in
// order; the relay's and the replica's options share it.
func fillDurations(opts []durOption) error {
	for _, f := range opts {
		if *f.v == 0 {
			*f.v = f.def
		}
		if *f.v < f.m {
			return spec.Reject(ErrBadOption, f.name, *f.v, fmt.Sprintf(">= %v (0: the default, %v)", f.m, f.def))
		}
	}
	return nil
}
