package scaleout

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvtwin/kvtwin/spec"
)

// SnapshotStatus is a replica's snapshot state (§4.3 option (a)), in
// ReplicaStatus.Snapshot when a bucket is configured. Counters only grow.
type SnapshotStatus struct {
	// Bucket is the object store.
	Bucket string `json:"bucket"`
	// Uploads counts snapshots stored; UploadsFailed those whose upload
	// failed (the next is taken at the next trigger); UploadsSkipped
	// snapshots due by message count while an upload was in flight.
	Uploads        uint64 `json:"uploads"`
	UploadsFailed  uint64 `json:"uploads_failed"`
	UploadsSkipped uint64 `json:"uploads_skipped"`
	// Pruned counts older snapshots deleted to keep the newest Keep.
	Pruned uint64 `json:"pruned"`
	// LastObject, LastCovers and LastBytes describe the last snapshot
	// stored (LastIndexBytes: its A12 part); LastPauseSeconds is how long
	// ingest paused to take it (the index's Freeze and the apply state,
	// §2.10 A12), LastEncodeSeconds how long encoding the frozen state
	// took and LastUploadSeconds how long its upload took, both beside
	// ingest.
	LastObject        string    `json:"last_object,omitzero"`
	LastCovers        uint64    `json:"last_covers"`
	LastBytes         uint64    `json:"last_bytes"`
	LastIndexBytes    uint64    `json:"last_index_bytes"`
	LastPauseSeconds  float64   `json:"last_pause_seconds"`
	LastEncodeSeconds float64   `json:"last_encode_seconds"`
	LastUploadSeconds float64   `json:"last_upload_seconds"`
	LastWrittenAt     time.Time `json:"last_written_at,omitzero"`
	// RestoredFrom is the object the replica started from (empty: none,
	// it read the stream, §4.3 option (b)); RestoredCovers its covers,
	// RestoreSeconds how long listing, downloading, checking and
	// restoring took.
	RestoredFrom   string  `json:"restored_from,omitzero"`
	RestoredCovers uint64  `json:"restored_covers"`
	RestoreSeconds float64 `json:"restore_seconds"`
	// Refused counts snapshots refused at start (corrupt, truncated, of
	// other sources, past the stream, refused by the restore); each is
	// logged at WARN with its object name and reason.
	Refused uint64 `json:"refused"`
	// TailExpired says the stream no longer held covers+1 when the replica
	// restored: messages after the snapshot had expired, and each source
	// that had some is stale at its next message (§4.3 amendment).
	TailExpired bool `json:"tail_expired"`
}

// snapWriter takes the replica's snapshots and uploads them, on its own
// goroutine, so that ingest pauses only while the index is frozen (§2.10
// A12): the encoding and the upload run beside ingest.
type snapWriter struct {
	r      *Replica
	o      SnapshotOptions
	prefix string
	// trigger carries a due-by-count signal from the apply path.
	trigger chan struct{}
	// uploading is set from a snapshot's take to its upload's end.
	uploading atomic.Bool
	// since and lastCovers are guarded by r.applyMu.
	since      int64
	lastCovers uint64
	store      jetstream.ObjectStore // the bucket, once created; writer goroutine only

	// beforeEncode, when set (tests), runs after a snapshot is frozen and
	// before it is encoded; encoded, when set, gets its A12 bytes.
	beforeEncode func(covers uint64)
	encoded      func(covers uint64, index []byte)
}

func newSnapWriter(r *Replica, o SnapshotOptions, sources []ReplicaSource) *snapWriter {
	return &snapWriter{r: r, o: o, prefix: snapshotPrefix(r.o.Stream, sources), trigger: make(chan struct{}, 1)}
}

// applied counts one applied message; called with r.applyMu held.
func (w *snapWriter) applied() {
	if w.o.Every < 0 {
		return
	}
	w.since++
	if w.since < w.o.Every {
		return
	}
	w.since = 0
	if w.uploading.Load() {
		w.r.updateSnap(func(s *SnapshotStatus) { s.UploadsSkipped++ })
		return
	}
	select {
	case w.trigger <- struct{}{}:
	default:
	}
}

// run takes a snapshot at each trigger or Interval after the last one
// until ctx ends.
func (w *snapWriter) run(ctx context.Context, js jetstream.JetStream) {
	var tick <-chan time.Time
	var t *time.Timer
	if w.o.Interval > 0 {
		t = time.NewTimer(w.o.Interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.trigger:
		case <-tick:
		}
		w.once(ctx, js)
		if t != nil {
			t.Reset(w.o.Interval)
		}
	}
}

// taken is a snapshot taken between two applied messages: the index
// frozen, and the apply state (env, its Index not yet encoded).
type taken struct {
	env    envelope
	frozen spec.KVEvFrozen
	pause  time.Duration
	// indexBytes is the A12 part's size, once encoded.
	indexBytes int
}

// take freezes the index and copies the apply state between two applied
// messages (under applyMu: ingest waits for it, the freeze's bulk copies
// only); nil when nothing was applied since the last snapshot.
func (w *snapWriter) take() (*taken, error) {
	r := w.r
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	covers := r.applied
	if covers == 0 || covers == w.lastCovers {
		return nil, nil
	}
	t0 := time.Now()
	fz, err := r.ix.Freeze(covers)
	if err != nil {
		return nil, err
	}
	env := envelope{Covers: covers, Stream: r.o.Stream}
	for _, s := range r.ap.states(r.order) {
		env.Sources = append(env.Sources, ruleState{Token: s.Token, Rank: s.Rank, EpochKnown: s.EpochKnown, Epoch: s.Epoch, SeqKnown: s.SeqKnown, Seq: s.Seq})
	}
	w.since, w.lastCovers = 0, covers
	return &taken{env: env, frozen: fz, pause: time.Since(t0)}, nil
}

// Freeze implements spec.KVEvFreezer through the current index. An index
// that writes only whole snapshots (a spec.KVEvSnapshotter that is no
// spec.KVEvFreezer) is encoded here and now, so that ingest pauses for
// its whole encoding, as before freezing existed.
func (s *swapIndex) Freeze(covers uint64) (spec.KVEvFrozen, error) {
	ix := s.get()
	if fr, ok := ix.(spec.KVEvFreezer); ok {
		return fr.Freeze(covers)
	}
	sn, ok := ix.(spec.KVEvSnapshotter)
	if !ok {
		return nil, errNoSnapshotter
	}
	b, err := sn.Snapshot(covers)
	if err != nil {
		return nil, err
	}
	return encodedSnapshot{covers: covers, b: b}, nil
}

// encodedSnapshot is a snapshot encoded when it was taken, as a
// spec.KVEvFrozen.
type encodedSnapshot struct {
	covers uint64
	b      []byte
}

func (e encodedSnapshot) Covers() uint64          { return e.covers }
func (e encodedSnapshot) Encode() ([]byte, error) { return e.b, nil }
func (e encodedSnapshot) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(e.b)
	return int64(n), err
}

// encode encodes tk's frozen index into its envelope, beside ingest, and
// drops the frozen copy: it returns the envelope's parts (the index's
// bytes not copied) and how long the index's encoding took.
func (w *snapWriter) encode(tk *taken) (envelopeParts, time.Duration, error) {
	if w.beforeEncode != nil {
		w.beforeEncode(tk.env.Covers)
	}
	t0 := time.Now()
	ix, err := tk.frozen.Encode()
	took := time.Since(t0)
	tk.frozen = nil
	if err != nil {
		return envelopeParts{}, took, fmt.Errorf("encode the frozen index: %w", err)
	}
	if w.encoded != nil {
		w.encoded(tk.env.Covers, ix)
	}
	tk.env.Index, tk.indexBytes = ix, len(ix)
	p := envelopeOf(tk.env)
	tk.env.Index = nil
	return p, took, nil
}

// once takes a snapshot and uploads it, then deletes the older ones past
// Keep.
func (w *snapWriter) once(ctx context.Context, js jetstream.JetStream) {
	w.uploading.Store(true)
	defer w.uploading.Store(false)
	tk, err := w.take()
	if tk == nil {
		if err != nil {
			w.r.log.Warn("snapshot not taken", "err", err)
			w.r.updateSnap(func(s *SnapshotStatus) { s.UploadsFailed++ })
		}
		return
	}
	env, encodeTook, err := w.encode(tk)
	if err != nil {
		w.r.log.Warn("snapshot not encoded", "covers", tk.env.Covers, "err", err)
		w.r.updateSnap(func(s *SnapshotStatus) { s.UploadsFailed++ })
		return
	}
	name := snapshotName(w.prefix, tk.env.Covers)
	uctx, cancel := context.WithTimeout(ctx, w.o.UploadTimeout)
	defer cancel()
	t0 := time.Now()
	err = w.put(uctx, js, name, tk.env.Covers, env.reader())
	took := time.Since(t0)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		w.r.log.Warn("snapshot upload failed", "object", name, "bytes", env.size(), "err", err)
		w.r.updateSnap(func(s *SnapshotStatus) { s.UploadsFailed++ })
		w.r.setError(fmt.Errorf("snapshot %s: %w", name, err))
		return
	}
	w.r.updateSnap(func(s *SnapshotStatus) {
		s.Uploads++
		s.LastObject, s.LastCovers, s.LastBytes, s.LastIndexBytes = name, tk.env.Covers, uint64(env.size()), uint64(tk.indexBytes)
		s.LastPauseSeconds, s.LastEncodeSeconds = tk.pause.Seconds(), encodeTook.Seconds()
		s.LastUploadSeconds, s.LastWrittenAt = took.Seconds(), time.Now()
	})
	w.r.log.Info("snapshot stored", "object", name, "covers", tk.env.Covers, "bytes", env.size(), "ingest_pause", tk.pause, "encode", encodeTook, "upload", took)
	if n, err := w.prune(uctx); err != nil {
		w.r.log.Warn("deleting older snapshots failed", "bucket", w.o.Bucket, "err", err)
	} else if n > 0 {
		w.r.updateSnap(func(s *SnapshotStatus) { s.Pruned += uint64(n) })
	}
}

// put uploads one envelope, creating the bucket first if needed.
func (w *snapWriter) put(ctx context.Context, js jetstream.JetStream, name string, covers uint64, r io.Reader) error {
	if w.store == nil {
		os, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket:      w.o.Bucket,
			Description: "kvtwin replica snapshots (docs/spec/kv-events.md §4.3)",
			Storage:     jetstream.FileStorage,
		})
		if err != nil {
			return fmt.Errorf("object store %s: %w", w.o.Bucket, err)
		}
		w.store = os
	}
	_, err := w.store.Put(ctx, jetstream.ObjectMeta{
		Name:        name,
		Description: "kvtwin index snapshot, stream " + w.r.o.Stream + ", covers " + strconv.FormatUint(covers, 10),
		Metadata: map[string]string{
			"kvtwin-format": envelopeMagic + "/" + strconv.Itoa(envelopeVersion),
			"kvtwin-covers": strconv.FormatUint(covers, 10),
			"kvtwin-writer": w.r.o.ID,
		},
	}, r)
	return err
}

// prune deletes the snapshots of the prefix past the newest Keep.
func (w *snapWriter) prune(ctx context.Context) (int, error) {
	cands, err := listSnapshots(ctx, w.store, w.prefix)
	if err != nil || len(cands) <= w.o.Keep {
		return 0, err
	}
	n := 0
	for _, c := range cands[w.o.Keep:] {
		if err := w.store.Delete(ctx, c.name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			return n, fmt.Errorf("delete %s: %w", c.name, err)
		}
		n++
	}
	return n, nil
}

// snapshotObject is a listed snapshot.
type snapshotObject struct {
	name   string
	covers uint64
	size   uint64
}

// listSnapshots lists the prefix's snapshots, newest (highest covers) first.
func listSnapshots(ctx context.Context, os jetstream.ObjectStore, prefix string) ([]snapshotObject, error) {
	infos, err := os.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []snapshotObject
	for _, in := range infos {
		if c, ok := parseSnapshotName(prefix, in.Name); ok && !in.Deleted {
			out = append(out, snapshotObject{name: in.Name, covers: c, size: in.Size})
		}
	}
	slices.SortFunc(out, func(a, b snapshotObject) int { return cmp.Compare(b.covers, a.covers) })
	return out, nil
}

// restore starts the replica from the newest usable snapshot of its
// stream and sources: each one refused is logged at WARN with its reason
// and the previous tried. It reports whether one was restored; false
// with a nil error means none is usable (the replica reads the stream,
// option (b)). lastSeq is the stream's last sequence.
func (r *Replica) restore(ctx context.Context, js jetstream.JetStream, lastSeq uint64) (bool, error) {
	t0 := time.Now()
	o := r.o.Snapshots
	os, err := js.ObjectStore(ctx, o.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		r.log.Info("no snapshot bucket yet; reading the stream", "bucket", o.Bucket)
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("object store %s: %w", o.Bucket, err)
	}
	cands, err := listSnapshots(ctx, os, r.snap.prefix)
	if err != nil {
		return false, fmt.Errorf("list object store %s: %w", o.Bucket, err)
	}
	for _, c := range cands {
		ix, env, err := r.loadSnapshot(ctx, os, c, lastSeq)
		if err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			r.log.Warn("snapshot refused; trying the previous one", "bucket", o.Bucket, "object", c.name, "reason", err)
			r.updateSnap(func(s *SnapshotStatus) { s.Refused++ })
			continue
		}
		r.install(ix, env)
		took := time.Since(t0)
		r.updateSnap(func(s *SnapshotStatus) {
			s.RestoredFrom, s.RestoredCovers, s.RestoreSeconds = c.name, env.Covers, took.Seconds()
		})
		r.log.Info("index restored from a snapshot", "object", c.name, "covers", env.Covers, "bytes", c.size, "took", took)
		return true, nil
	}
	r.log.Warn("no usable snapshot; reading the stream (§4.3 option (b))", "bucket", o.Bucket, "prefix", r.snap.prefix, "listed", len(cands))
	return false, nil
}

// loadSnapshot downloads (bounded), checks and restores one snapshot.
func (r *Replica) loadSnapshot(ctx context.Context, os jetstream.ObjectStore, c snapshotObject, lastSeq uint64) (spec.KVEvIndex, envelope, error) {
	o := r.o.Snapshots
	var none envelope
	if c.covers > lastSeq {
		return nil, none, fmt.Errorf("covers %d past the stream's last sequence %d: a snapshot of a stream since deleted or purged", c.covers, lastSeq)
	}
	if c.size > uint64(o.MaxBytes) {
		return nil, none, fmt.Errorf("%d bytes, past the max snapshot bytes %d", c.size, o.MaxBytes)
	}
	res, err := os.Get(ctx, c.name)
	if err != nil {
		return nil, none, fmt.Errorf("get: %w", err)
	}
	defer func() { _ = res.Close() }()
	b, err := io.ReadAll(io.LimitReader(res, o.MaxBytes+1))
	if err != nil {
		return nil, none, fmt.Errorf("read: %w", err)
	}
	if int64(len(b)) > o.MaxBytes {
		return nil, none, fmt.Errorf("more than the max snapshot bytes %d (its info says %d)", o.MaxBytes, c.size)
	}
	env, err := decodeEnvelope(b)
	if err != nil {
		return nil, none, err
	}
	if err := r.usable(env, c.covers); err != nil {
		return nil, none, err
	}
	ix, covers, err := o.Restore(o.IndexConfig, env.Index)
	if err != nil {
		return nil, none, fmt.Errorf("restore: %w", err)
	}
	if covers != env.Covers {
		return nil, none, badEnvelope("index.covers", covers, fmt.Sprintf("the envelope's covers, %d", env.Covers))
	}
	if err := r.sameStreams(ix); err != nil {
		return nil, none, err
	}
	return ix, env, nil
}

// usable refuses an envelope that is not this replica's: another stream,
// other sources or ranks, or covers other than its name's.
func (r *Replica) usable(env envelope, nameCovers uint64) error {
	if env.Covers != nameCovers {
		return badEnvelope("covers", env.Covers, fmt.Sprintf("the object name's, %d", nameCovers))
	}
	if env.Stream != r.o.Stream {
		return badEnvelope("stream", env.Stream, "the replica's stream, "+r.o.Stream)
	}
	if len(env.Sources) != len(r.sources) {
		return badEnvelope("sources.count", len(env.Sources), fmt.Sprintf("the replica's %d sources", len(r.sources)))
	}
	for i, s := range env.Sources {
		st := r.ap.sources[s.Token]
		if st == nil || st.rank != s.Rank {
			return badEnvelope(fmt.Sprintf("sources[%d]", i), s.Token+",rank="+strconv.FormatInt(s.Rank, 10), "a source of the replica with its rank")
		}
	}
	return nil
}

// sameStreams refuses a restored index whose streams are not the
// replica's sources by name (State carries no rank: the envelope's ranks,
// checked by usable, are the writer's, which built its index with them).
func (r *Replica) sameStreams(ix spec.KVEvIndex) error {
	var st spec.KVEvState
	if sm, ok := ix.(interface{ Summary() spec.KVEvState }); ok {
		st = sm.Summary()
	} else {
		st = ix.State()
	}
	if len(st.Streams) != len(r.sources) {
		return badEnvelope("index.streams", len(st.Streams), fmt.Sprintf("the replica's %d sources", len(r.sources)))
	}
	for i, s := range st.Streams {
		if r.ap.sources[s.Name] == nil {
			return badEnvelope(fmt.Sprintf("index.streams[%d]", i), s.Name, "a source of the replica")
		}
	}
	return nil
}

// install makes ix the replica's index and env's apply state its own; the
// replica has applied nothing yet.
func (r *Replica) install(ix spec.KVEvIndex, env envelope) {
	r.ix.set(ix)
	for _, s := range env.Sources {
		st := r.ap.sources[s.Token]
		st.mu.Lock()
		st.known, st.epoch, st.seqKnown, st.seq = s.EpochKnown, s.Epoch, s.SeqKnown, s.Seq
		st.publish()
		st.mu.Unlock()
	}
	r.applyMu.Lock()
	r.applied = env.Covers
	r.snap.lastCovers = env.Covers
	r.applyMu.Unlock()
	r.update(func(st *ReplicaStatus) { st.AppliedSeq = env.Covers })
}

// updateSnap updates the snapshot status.
func (r *Replica) updateSnap(f func(s *SnapshotStatus)) {
	r.update(func(st *ReplicaStatus) { f(st.Snapshot) })
}
