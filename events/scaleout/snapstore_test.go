package scaleout

import (
	"bytes"
	"context"
	"crypto/sha256"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/spec"
)

// withSnapshots sets a replica's snapshot options: bucket, a snapshot
// after every `every` messages (negative: never by count), one `interval`
// after the last (negative: never by time), fast's restore.
func withSnapshots(bucket string, every int64, interval time.Duration, keep int) func(*ReplicaOptions) {
	return func(o *ReplicaOptions) {
		o.Snapshots = SnapshotOptions{Bucket: bucket, Every: every, Interval: interval, Keep: keep, Restore: fast.RestoreKVEvIndex}
	}
}

// snapStatus is the replica's snapshot status (never nil with a bucket).
func snapStatus(rr *runningReplica) SnapshotStatus { return *rr.r.Status().Snapshot }

// waitSnapshotAt waits until the replica stored a snapshot covering seq.
func waitSnapshotAt(t testing.TB, rr *runningReplica, seq uint64) {
	t.Helper()
	waitFor(t, 20*time.Second, "a snapshot covering "+rr.r.o.ID+"'s last message", func() bool { return snapStatus(rr).LastCovers == seq })
}

// objectNames lists the bucket's objects, newest snapshot first.
func objectNames(t testing.TB, js jetstream.JetStream, bucket string) (jetstream.ObjectStore, []string) {
	t.Helper()
	os, err := js.ObjectStore(context.Background(), bucket)
	if err != nil {
		t.Fatal(err)
	}
	infos, err := os.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, in := range infos {
		names = append(names, in.Name)
	}
	// Names end in 20-digit covers: a reverse string sort is newest first.
	for i := range names {
		for j := i + 1; j < len(names); j++ {
			if names[j] > names[i] {
				names[i], names[j] = names[j], names[i]
			}
		}
	}
	return os, names
}

// TestWarmReplicaStartsFromASnapshotAfterMaxAge is issue 32 item 2's
// acceptance test: the stream's messages expire (MaxAge 1 s) after a
// replica stored a snapshot covering them; a replica started after that
// from the snapshot (and the messages after it) reports the digest of a
// replica that saw the whole stream (and of a reference fed every batch), while one started at the
// same time without a snapshot reads only the retained tail: its history
// is truncated and its digest differs.
func TestWarmReplicaStartsFromASnapshotAfterMaxAge(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	ns := startNATS(t)
	defer ns.stop()
	nc, js := ns.connect(t)
	defer nc.Close()
	s := createStream(t, js, StreamOptions{MaxAge: time.Second})

	sources, msgs, _ := genRelayStream(7, 6000, 20)
	cut := len(msgs) * 6 / 10
	full := startReplica(t, ns.url, "full", sources, nil)
	defer full.cancel()
	w := startReplica(t, ns.url, "writer", sources, withSnapshots("snaps", 100, 200*time.Millisecond, 2))
	defer w.cancel()
	publishAll(t, js, msgs[:cut])
	waitApplied(t, w, uint64(cut), 20*time.Second)
	waitSnapshotAt(t, w, uint64(cut))
	w.stop(t) // its last snapshot covers cut: the warm replica must read the rest

	waitFor(t, 10*time.Second, "the stream's messages to expire", func() bool {
		info, err := s.Info(context.Background())
		return err == nil && info.State.Msgs == 0
	})
	// Keep what comes next: the tail the late replicas read.
	cfg := s.CachedInfo().Config
	cfg.MaxAge, cfg.Duplicates = time.Hour, time.Minute
	if _, err := js.UpdateStream(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	publishAll(t, js, msgs[cut:])
	last := lastSeq(t, js)

	warm := startReplica(t, ns.url, "warm", sources, withSnapshots("snaps", -1, time.Hour, 2))
	defer warm.cancel()
	cold := startReplica(t, ns.url, "cold", sources, nil)
	defer cold.cancel()
	for _, rr := range []*runningReplica{full, warm, cold} {
		waitApplied(t, rr, last, 20*time.Second)
	}
	want := feedRef(t, sources, msgs).Digest()
	if got := full.r.Index().Digest(); got != want {
		t.Fatalf("the digest %x of the replica that saw the whole stream differs from the reference's %x", got, want)
	}
	if got := warm.r.Index().Digest(); got != want {
		t.Errorf("the warm replica's digest %x differs from the full replica's %x", got, want)
	}
	if got := cold.r.Index().Digest(); got == want {
		t.Errorf("the cold replica, which never saw the expired messages, has the full digest %x", got)
	}
	ws, cs := warm.r.Status(), cold.r.Status()
	if sn := ws.Snapshot; sn.RestoredCovers != uint64(cut) || sn.RestoredFrom == "" || sn.TailExpired || ws.HistoryTruncated || sn.Refused != 0 {
		t.Errorf("warm replica status %+v, snapshot %+v: want restored from covers %d, no tail expired", ws, *sn, cut)
	}
	if ws.Messages != last-uint64(cut) {
		t.Errorf("the warm replica applied %d messages, want the %d after the snapshot", ws.Messages, last-uint64(cut))
	}
	if !cs.HistoryTruncated || cs.FirstSeq != uint64(cut)+1 {
		t.Errorf("cold replica: history truncated %v at %d, want true at %d", cs.HistoryTruncated, cs.FirstSeq, cut+1)
	}
	for _, rr := range []*runningReplica{full, warm, cold} {
		rr.stop(t)
	}
}

// warnLog collects WARN lines, for the refusal test.
type warnLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *warnLog) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelWarn }
func (l *warnLog) Handle(_ context.Context, r slog.Record) error {
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
	l.mu.Lock()
	l.lines = append(l.lines, msg)
	l.mu.Unlock()
	return nil
}
func (l *warnLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *warnLog) WithGroup(string) slog.Handler      { return l }

func (l *warnLog) find(sub ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ln := range l.lines {
		ok := true
		for _, s := range sub {
			ok = ok && strings.Contains(ln, s)
		}
		if ok {
			return true
		}
	}
	return false
}

// TestCorruptSnapshotIsRefusedAndThePreviousUsed: the newest snapshot with
// one bit flipped and the one before it cut short are both refused, each
// with a WARN line naming the object and the reason, and a starting
// replica restores the third; after reading the stream from there its
// digest is the writer's. The flip is rewritten through the object store
// (so its own digest matches): the envelope's checksum is what refuses it.
func TestCorruptSnapshotIsRefusedAndThePreviousUsed(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	ns := startNATS(t)
	defer ns.stop()
	nc, js := ns.connect(t)
	defer nc.Close()
	createStream(t, js, StreamOptions{})

	sources, msgs, _ := genRelayStream(8, 3000, 20)
	w := startReplica(t, ns.url, "writer", sources, withSnapshots("snaps", -1, 100*time.Millisecond, 3))
	defer w.cancel()
	var covers []uint64
	for i := 1; i <= 3; i++ {
		publishAll(t, js, msgs[(i-1)*len(msgs)/4:i*len(msgs)/4])
		waitApplied(t, w, uint64(i*len(msgs)/4), 20*time.Second)
		waitSnapshotAt(t, w, uint64(i*len(msgs)/4))
		covers = append(covers, uint64(i*len(msgs)/4))
	}
	publishAll(t, js, msgs[3*len(msgs)/4:])
	last := lastSeq(t, js)
	waitApplied(t, w, last, 20*time.Second)
	w.stop(t) // no snapshot of the tail: the next replica must read it

	os, names := objectNames(t, js, "snaps")
	if len(names) != 3 {
		t.Fatalf("bucket holds %v, want 3 snapshots", names)
	}
	ctx := context.Background()
	b, err := os.GetBytes(ctx, names[0])
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x10
	if _, err := os.PutBytes(ctx, names[0], b); err != nil {
		t.Fatal(err)
	}
	b, err = os.GetBytes(ctx, names[1])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.PutBytes(ctx, names[1], b[:len(b)*2/3]); err != nil {
		t.Fatal(err)
	}

	warns := &warnLog{}
	late := startReplica(t, ns.url, "late", sources, func(o *ReplicaOptions) {
		withSnapshots("snaps", -1, time.Hour, 3)(o)
		o.Logger = slog.New(warns)
	})
	defer late.cancel()
	waitApplied(t, late, last, 20*time.Second)
	sn := snapStatus(late)
	if sn.RestoredFrom != names[2] || sn.RestoredCovers != covers[0] || sn.Refused != 2 {
		t.Errorf("snapshot status %+v: want restored from %s (covers %d) after 2 refusals", sn, names[2], covers[0])
	}
	if !warns.find("snapshot refused", names[0], "envelope.checksum") {
		t.Errorf("no WARN line refusing %s for its checksum: %q", names[0], warns.lines)
	}
	if !warns.find("snapshot refused", names[1], "envelope.checksum") && !warns.find("snapshot refused", names[1], "truncated") {
		t.Errorf("no WARN line refusing the truncated %s: %q", names[1], warns.lines)
	}
	if got, want := late.r.Index().Digest(), w.r.Index().Digest(); got != want {
		t.Errorf("digest %x after the third snapshot and the stream, writer %x", got, want)
	}
	late.stop(t)
}

// TestSnapshotsAreWrittenWhileMessagesFlow: snapshots every 100 messages
// while a publisher keeps publishing; the first snapshot, frozen, is held
// before its encoding until the replica has applied 200 more messages
// (ingest waits neither for the encoding nor for the upload, §2.10 A12),
// and the snapshots due meanwhile are skipped and counted. The index
// encoded after those 200 messages is the index at the freeze: it
// restores to the reference fed the messages up to its covers. Every
// snapshot covers a message boundary: the replica's digest at the end is
// the reference's, and a replica restored from the last one agrees.
func TestSnapshotsAreWrittenWhileMessagesFlow(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	ns := startNATS(t)
	defer ns.stop()
	nc, js := ns.connect(t)
	defer nc.Close()
	createStream(t, js, StreamOptions{})

	sources, msgs, _ := genRelayStream(9, 20000, 10)
	w := startReplica(t, ns.url, "writer", sources, withSnapshots("snaps", 100, -1, 2))
	defer w.cancel()
	var held, first sync.Once
	heldOK := make(chan bool, 1)
	type encoded struct {
		covers uint64
		index  []byte
	}
	firstEncoded := make(chan encoded, 1)
	w.r.snap.encoded = func(covers uint64, index []byte) {
		first.Do(func() { firstEncoded <- encoded{covers, index} })
	}
	w.r.snap.beforeEncode = func(covers uint64) {
		held.Do(func() {
			// The first encoding waits for ingest to move 200 messages on.
			deadline := time.Now().Add(20 * time.Second)
			for w.r.Status().AppliedSeq < covers+200 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			heldOK <- w.r.Status().AppliedSeq >= covers+200
		})
	}
	// Publish 100 messages at a time, each after the replica applied the
	// previous ones (never waiting for an upload): each hundred is due a
	// snapshot.
	for i := 0; i < len(msgs); i += 100 {
		publishAll(t, js, msgs[i:min(i+100, len(msgs))])
		waitApplied(t, w, uint64(min(i+100, len(msgs))), 20*time.Second)
	}
	last := lastSeq(t, js)
	waitApplied(t, w, last, 30*time.Second)
	if !<-heldOK {
		t.Fatal("ingest stopped while a frozen snapshot waited for its encoding")
	}
	fe := <-firstEncoded
	rx, covers, err := fast.RestoreKVEvIndex(spec.KVEvConfig{}, fe.index)
	if err != nil || covers != fe.covers {
		t.Fatalf("the first snapshot's index: restore %v, covers %d want %d", err, covers, fe.covers)
	}
	if got, want := rx.Digest(), feedRef(t, sources, msgs[:fe.covers]).Digest(); got != want {
		t.Fatalf("the first snapshot, encoded 200 messages after its freeze at %d, has digest %x; the index at %d has %x", fe.covers, got, fe.covers, want)
	}
	waitFor(t, 20*time.Second, "uploads to settle", func() bool { return !w.r.snap.uploading.Load() })
	sn := snapStatus(w)
	if sn.Uploads < 3 || sn.UploadsSkipped == 0 || sn.UploadsFailed != 0 {
		t.Errorf("snapshot status %+v: want 3 or more uploads, skips while the first was held, no failure", sn)
	}
	if _, names := objectNames(t, js, "snaps"); len(names) != 2 || sn.Pruned != sn.Uploads-2 {
		t.Errorf("bucket holds %v after %d uploads and %d deletions, want the newest 2 kept", names, sn.Uploads, sn.Pruned)
	}
	if sn.LastBytes == 0 || sn.LastIndexBytes >= sn.LastBytes {
		t.Errorf("snapshot sizes %d (index %d): want the envelope around a non-empty index", sn.LastBytes, sn.LastIndexBytes)
	}
	want := feedRef(t, sources, msgs).Digest()
	if got := w.r.Index().Digest(); got != want {
		t.Errorf("writer digest %x, reference %x", got, want)
	}
	w.stop(t)
	late := startReplica(t, ns.url, "late", sources, withSnapshots("snaps", -1, time.Hour, 2))
	defer late.cancel()
	waitApplied(t, late, last, 20*time.Second)
	if got := late.r.Index().Digest(); got != want || snapStatus(late).RestoredCovers == 0 {
		t.Errorf("replica restored from %+v: digest %x, want %x", snapStatus(late), got, want)
	}
	late.stop(t)
	t.Logf("last snapshot: %d bytes (index %d) covering %d messages, ingest pause %.3f ms, encode %.3f ms, upload %.3f ms",
		sn.LastBytes, sn.LastIndexBytes, sn.LastCovers, sn.LastPauseSeconds*1e3, sn.LastEncodeSeconds*1e3, sn.LastUploadSeconds*1e3)
}

// TestEnvelopeRoundTripsAndRefusesDamage: the envelope decodes to what was
// encoded, and each kind of damage is refused at its field.
func TestEnvelopeRoundTripsAndRefusesDamage(t *testing.T) {
	ix, err := fast.NewKVEvIndex(spec.KVEvConfig{}, []spec.KVEvStream{{Name: "a"}, {Name: "b", Rank: 2}})
	if err != nil {
		t.Fatal(err)
	}
	a12, err := ix.(spec.KVEvSnapshotter).Snapshot(42)
	if err != nil {
		t.Fatal(err)
	}
	env := envelope{Covers: 42, Stream: "KVTWIN_KV", Index: a12, Sources: []ruleState{
		{Token: "b", Rank: 2, EpochKnown: true, Epoch: 3, SeqKnown: true, Seq: 17},
		{Token: "a", EpochKnown: true},
	}}
	b := encodeEnvelope(env)
	got, err := decodeEnvelope(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Covers != 42 || got.Stream != "KVTWIN_KV" || !bytes.Equal(got.Index, a12) || len(got.Sources) != 2 ||
		got.Sources[0] != (ruleState{Token: "a", EpochKnown: true}) || got.Sources[1] != env.Sources[0] {
		t.Fatalf("decoded %+v, want %+v with sources sorted by token", got, env)
	}
	// Byte offsets: magic 0, version 8, covers 12, stream length 20,
	// stream 28 (9 bytes), source count 37, first token length 45.
	resum := func(b []byte) []byte { return encodeRaw(b[:len(b)-32]) }
	for _, c := range []struct {
		name  string
		b     []byte
		field string
	}{
		{"short", b[:envelopeMinBytes-1], "envelope.length"},
		{"magic", set(b, 0, 'X'), "envelope.magic"},
		{"version", set(b, 8, 2), "envelope.version"},
		{"bit flip", set(b, len(b)/2, b[len(b)/2]^1), "envelope.checksum"},
		{"truncated", b[:len(b)-40], "envelope.checksum"},
		{"stream length past its bound", resum(set(b, 20, 200)), "envelope.stream.length"},
		{"source count past the bytes", resum(set(b, 37+7, 1)), "envelope.sources.count"},
		{"a flag of 2", resum(set(b, 45+8+1+8, 2)), "envelope.sources[0].epoch_known"},
		{"index length", resum(append(bytes.Clone(b[:len(b)-32]), 0)), "envelope.index.length"},
	} {
		_, err := decodeEnvelope(c.b)
		ie, ok := spec.AsInputError(err)
		if !ok || ie.Field != c.field || ie.Err != spec.ErrBadSnapshot {
			t.Errorf("%s: error %v, want bad_snapshot at %s", c.name, err, c.field)
		}
	}
}

// set returns a copy of b with b[i] = v.
func set(b []byte, i int, v byte) []byte {
	c := bytes.Clone(b)
	c[i] = v
	return c
}

// encodeRaw appends the SHA-256 trailer to a body.
func encodeRaw(body []byte) []byte {
	sum := sha256.Sum256(body)
	return append(bytes.Clone(body), sum[:]...)
}

// TestRestoredApplyStateDropsAResetAlreadyApplied: the envelope's apply
// state travels with the index. After the snapshot, the stream carries
// src-c's epoch-1 reset again (a relay's publish retried past the
// duplicate window): the writer's rule drops it as a duplicate, and so
// must a replica restored from the snapshot, or it would restart src-c and
// lose its engine. A replica that read the whole stream is the reference.
func TestRestoredApplyStateDropsAResetAlreadyApplied(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	ns := startNATS(t)
	defer ns.stop()
	nc, js := ns.connect(t)
	defer nc.Close()
	createStream(t, js, StreamOptions{})

	sources, msgs, _ := genRelayStream(10, 3000, 20)
	w := startReplica(t, ns.url, "writer", sources, withSnapshots("snaps", -1, 100*time.Millisecond, 2))
	defer w.cancel()
	publishAll(t, js, msgs)
	waitApplied(t, w, uint64(len(msgs)), 20*time.Second)
	waitSnapshotAt(t, w, uint64(len(msgs)))
	w.stop(t)

	dup := resetMsg("src-c", 2, 1)
	dup.Header.Set("Nats-Msg-Id", "src-c.1.reset.retried")
	if _, err := js.PublishMsg(context.Background(), dup); err != nil {
		t.Fatal(err)
	}
	last := lastSeq(t, js)
	warm := startReplica(t, ns.url, "warm", sources, withSnapshots("snaps", -1, time.Hour, 2))
	defer warm.cancel()
	full := startReplica(t, ns.url, "full", sources, nil)
	defer full.cancel()
	waitApplied(t, warm, last, 20*time.Second)
	waitApplied(t, full, last, 20*time.Second)
	if snapStatus(warm).RestoredCovers != uint64(len(msgs)) {
		t.Fatalf("warm replica restored %+v, want covers %d", snapStatus(warm), len(msgs))
	}
	for _, rr := range []*runningReplica{warm, full} {
		for _, s := range rr.r.Status().Sources {
			if s.Token == "src-c" && s.Counters.Duplicates != 1 {
				t.Errorf("%s: src-c counters %+v, want the retried reset dropped as a duplicate", rr.r.o.ID, s.Counters)
			}
		}
	}
	if got, want := warm.r.Index().Digest(), full.r.Index().Digest(); got != want {
		t.Errorf("warm replica digest %x, full replica %x", got, want)
	}
	warm.stop(t)
	full.stop(t)
}

// TestSnapshotOptionsDefaultsAndBounds pins §4.5's defaults (a snapshot
// every 1,000,000 messages or 5 min, 3 kept, objects up to 1 GiB, 10 min
// an upload) and refuses bad values naming the field.
func TestSnapshotOptionsDefaultsAndBounds(t *testing.T) {
	r := fast.RestoreKVEvIndex
	got, err := SnapshotOptions{Bucket: "b", Restore: r}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if got.Every != 1_000_000 || got.Interval != 5*time.Minute || got.Keep != 3 || got.MaxBytes != 1<<30 || got.UploadTimeout != 10*time.Minute {
		t.Errorf("defaults %+v", got)
	}
	if got, err := (SnapshotOptions{}).withDefaults(); err != nil || got.Every != 0 {
		t.Errorf("no bucket: %+v %v, want nothing filled", got, err)
	}
	for _, c := range []struct {
		o     SnapshotOptions
		field string
	}{
		{SnapshotOptions{Bucket: "a.b", Restore: r}, "snapshots.bucket"},
		{SnapshotOptions{Bucket: "b", Every: -1, Interval: -1, Restore: r}, "snapshots.every"},
		{SnapshotOptions{Bucket: "b", Interval: time.Millisecond, Restore: r}, "snapshots.interval"},
		{SnapshotOptions{Bucket: "b", Keep: 101, Restore: r}, "snapshots.keep"},
		{SnapshotOptions{Bucket: "b", Keep: -1, Restore: r}, "snapshots.keep"},
		{SnapshotOptions{Bucket: "b", MaxBytes: 75, Restore: r}, "snapshots.max_bytes"},
		{SnapshotOptions{Bucket: "b", MaxBytes: 1<<40 + 1, Restore: r}, "snapshots.max_bytes"},
		{SnapshotOptions{Bucket: "b", UploadTimeout: time.Millisecond, Restore: r}, "snapshots.upload_timeout"},
		{SnapshotOptions{Bucket: "b"}, "snapshots.restore"},
	} {
		_, err := c.o.withDefaults()
		if ie, ok := spec.AsInputError(err); !ok || ie.Field != c.field || ie.Err != ErrBadOption {
			t.Errorf("%+v: %v, want bad_option at %s", c.o, err, c.field)
		}
	}
	// A replica over an index that cannot write a snapshot is refused.
	ix := slowIndex{mustFastIndex(t)}
	if _, err := NewReplica(ix, ReplicaOptions{URL: "nats://127.0.0.1:1", ID: "r", Sources: []string{"a"}, Snapshots: SnapshotOptions{Bucket: "b", Restore: r}}); err == nil || !strings.Contains(err.Error(), "KVEvSnapshotter") {
		t.Errorf("replica over a non-snapshotter: %v", err)
	}
}

func mustFastIndex(t *testing.T) spec.KVEvIndex {
	t.Helper()
	ix, err := fast.NewKVEvIndex(spec.KVEvConfig{}, []spec.KVEvStream{{Name: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// snapshotOnly is an index that writes whole snapshots but cannot freeze.
type snapshotOnly struct {
	spec.KVEvIndex
	sn spec.KVEvSnapshotter
}

func (s snapshotOnly) Snapshot(covers uint64) ([]byte, error) { return s.sn.Snapshot(covers) }

// TestFreezeOfAnIndexThatCannotFreezeEncodesAtOnce: through the replica's
// index, an index that implements spec.KVEvSnapshotter but not
// spec.KVEvFreezer is snapshotted at the freeze (the bytes are its
// Snapshot's, whatever it does after), and one that implements neither
// is refused.
func TestFreezeOfAnIndexThatCannotFreezeEncodesAtOnce(t *testing.T) {
	ix, err := fast.NewKVEvIndex(spec.KVEvConfig{}, []spec.KVEvStream{{Name: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ix.(spec.KVEvSnapshotter).Snapshot(3)
	fz, err := newSwapIndex(snapshotOnly{ix, ix.(spec.KVEvSnapshotter)}).Freeze(3)
	if err != nil {
		t.Fatal(err)
	}
	ix.Restart("a") // after the freeze: not in its bytes
	if now, _ := ix.(spec.KVEvSnapshotter).Snapshot(3); bytes.Equal(now, want) {
		t.Fatal("the restart changed nothing: the test proves nothing")
	}
	got, _ := fz.Encode()
	var streamed bytes.Buffer
	if _, err := fz.WriteTo(&streamed); err != nil || !bytes.Equal(got, want) || !bytes.Equal(streamed.Bytes(), want) || fz.Covers() != 3 {
		t.Fatalf("frozen through Snapshot: %d bytes (streamed %d, %v), want %d; covers %d", len(got), streamed.Len(), err, len(want), fz.Covers())
	}
	if _, err := newSwapIndex(struct{ spec.KVEvIndex }{ix}).Freeze(3); err != errNoSnapshotter {
		t.Fatalf("an index without Snapshot: %v, want errNoSnapshotter", err)
	}
}
