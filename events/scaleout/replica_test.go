package scaleout

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// relayed is one message of a generated relay stream.
type relayed struct {
	token   string
	rank    int64
	reset   bool
	epoch   uint64
	seq     uint64
	gap     bool
	topic   []byte
	payload []byte
}

func (m relayed) msg() *nats.Msg {
	if m.reset {
		return resetMsg(m.token, m.rank, m.epoch)
	}
	return batchMsg(m.token, m.rank, m.epoch, m.seq, m.gap, m.topic, m.payload)
}

// genSource is one publisher of a generated stream.
type genSource struct {
	token string
	rank  int64
	topic []byte
	g     *gen
	epoch uint64
	seq   uint64
}

// genRelayStream generates what a relay would publish for three publishers
// carrying about `events` events in batches of about perBatch: pod-a (an
// llm-d topic kv@pod-a@llama), src-b (loses three batches at 30 % of the
// stream, a gap that makes it stale, then clears its cache at 60 %, which
// makes it fresh again), src-c (SGLang-like: batches without a rank,
// configured rank 2; its publisher restarts at 50 %).
func genRelayStream(seed uint64, events, perBatch int) (sources []string, msgs []relayed, nEvents int) {
	srcs := []*genSource{
		{token: "pod-a", topic: []byte("kv@pod-a@llama"), g: newGen(seed+1, 16, new(int64), 300)},
		{token: "src-b", g: newGen(seed+2, 16, new(int64), 300)},
		{token: "src-c", rank: 2, g: newGen(seed+3, 16, nil, 300)},
	}
	rng := rand.New(rand.NewPCG(seed, 99))
	lostDone, clearDone, restartDone := false, false, false
	for nEvents < events {
		s := srcs[rng.IntN(len(srcs))]
		frac := float64(nEvents) / float64(events)
		switch {
		case s.token == "src-b" && !lostDone && frac > 0.3:
			lostDone = true
			for range 3 {
				nEvents += perBatch
				s.g.batch(perBatch) // generated, never published
				s.seq++
			}
			continue
		case s.token == "src-b" && !clearDone && frac > 0.6:
			clearDone = true
			s.g.reset()
			s.g.forceClear = true
		case s.token == "src-c" && !restartDone && frac > 0.5:
			restartDone = true
			s.epoch++
			s.seq = 0
			s.g.reset()
			msgs = append(msgs, relayed{token: s.token, rank: s.rank, reset: true, epoch: s.epoch})
		}
		n := perBatch/2 + rng.IntN(perBatch+1)
		nEvents += n
		msgs = append(msgs, relayed{token: s.token, rank: s.rank, epoch: s.epoch, seq: s.seq, topic: s.topic, payload: s.g.batch(n)})
		s.seq++
	}
	return []string{"pod-a", "src-b", "src-c,rank=2"}, msgs, nEvents
}

// feedRef applies a generated stream directly to a reference index, as a
// replica would receive it, and returns the index.
func feedRef(t testing.TB, sources []string, msgs []relayed) spec.KVEvIndex {
	t.Helper()
	streams, err := ReplicaStreams(sources)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := ref.NewKVEvIndex(spec.KVEvConfig{}, streams)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.reset {
			ix.Restart(m.token)
			continue
		}
		ix.Live(m.token, [][]byte{m.topic, binary.BigEndian.AppendUint64(nil, m.seq), m.payload})
	}
	return ix
}

// runningReplica is a replica whose Run runs in a goroutine.
type runningReplica struct {
	r  *Replica
	ix spec.KVEvIndex
	running
}

func startReplica(t testing.TB, url, id string, sources []string, tune func(*ReplicaOptions)) *runningReplica {
	t.Helper()
	return startReplicaWith(t, url, id, sources, nil, tune)
}

// startReplicaWith is startReplica feeding wrap(ix) (ix itself when wrap
// is nil): a test's index that takes its time or holds a message.
func startReplicaWith(t testing.TB, url, id string, sources []string, wrap func(spec.KVEvIndex) spec.KVEvIndex, tune func(*ReplicaOptions)) *runningReplica {
	t.Helper()
	streams, err := ReplicaStreams(sources)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := fast.NewKVEvIndex(spec.KVEvConfig{}, streams)
	if err != nil {
		t.Fatal(err)
	}
	o := ReplicaOptions{URL: url, ID: id, Sources: sources, Logger: testLogger(t), RetryMin: 10 * time.Millisecond, RetryMax: 200 * time.Millisecond, ReadIdle: time.Second}
	if tune != nil {
		tune(&o)
	}
	fed := spec.KVEvIndex(ix)
	if wrap != nil {
		fed = wrap(ix)
	}
	r, err := NewReplica(fed, o)
	if err != nil {
		t.Fatal(err)
	}
	return &runningReplica{r: r, ix: ix, running: goRun(r.Run)}
}

// stop cancels the replica and waits for Run to return.
func (rr *runningReplica) stop(t testing.TB) {
	t.Helper()
	rr.stopRun(t, "replica")
}

// publishAll publishes msgs in order (one connection keeps the order),
// 256 PubAcks outstanding at most, and waits for every PubAck.
func publishAll(t testing.TB, js jetstream.JetStream, msgs []relayed) {
	t.Helper()
	for len(msgs) > 0 {
		n := min(len(msgs), 256)
		acks := make([]jetstream.PubAckFuture, n)
		for i, m := range msgs[:n] {
			f, err := js.PublishMsgAsync(m.msg())
			if err != nil {
				t.Fatal(err)
			}
			acks[i] = f
		}
		for i, f := range acks {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				t.Fatalf("publish %d: %v", i, err)
			case <-time.After(30 * time.Second):
				t.Fatalf("publish %d: no PubAck in 30s", i)
			}
		}
		msgs = msgs[n:]
	}
}

func lastSeq(t testing.TB, js jetstream.JetStream) uint64 {
	t.Helper()
	s, err := js.Stream(context.Background(), DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().State.LastSeq
}

func waitApplied(t testing.TB, rr *runningReplica, seq uint64, d time.Duration) {
	t.Helper()
	waitFor(t, d, "replica "+rr.r.o.ID+" to apply the stream", func() bool { return rr.r.Status().AppliedSeq >= seq })
}

// TestReplicasConverge is the acceptance test of issue 19's deliverable 5:
// two replicas reach identical digests after 100,000 events, one of them
// killed mid-stream and restarted with a fresh index (it resumes its
// durable consumer after rebuilding from the stream), and both equal a
// reference index fed the same batches directly. A third replica that
// starts after the fact reads the whole stream through a new durable
// consumer, for the apply rate. Under -race (or -short) it runs 20,000
// events: `make test` runs it at full size without -race (test-full),
// where it takes seconds instead of the detector's twenty.
func TestReplicasConverge(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	ns := startNATS(t)
	defer ns.stop()
	nc, js := ns.connect(t)
	defer nc.Close()
	createStream(t, js, StreamOptions{})

	events := 100_000
	if testing.Short() || raceEnabled {
		events = 20_000
	}
	sources, msgs, nEvents := genRelayStream(1, events, 20)
	feed := func() spec.KVEvIndex {
		t0 := time.Now()
		ix := feedRef(t, sources, msgs)
		t.Logf("reference index fed %d events directly in %v", nEvents, time.Since(t0))
		return ix
	}
	refDone := make(chan spec.KVEvIndex, 1)
	if raceEnabled {
		// The reference twin is the slow part under -race: feed it while
		// the replicas run (the rates logged are then not the twins' own).
		go func() { refDone <- feed() }()
	}

	a := startReplica(t, ns.url, "replica-a", sources, nil)
	defer a.cancel()
	b := startReplica(t, ns.url, "replica-b", sources, nil)
	cut1, cut2 := len(msgs)*4/10, len(msgs)*7/10
	t0 := time.Now()
	publishAll(t, js, msgs[:cut1])
	pubTook := time.Since(t0)
	waitApplied(t, b, uint64(cut1)/2, 30*time.Second)
	b.stop(t) // killed mid-stream: whatever it had not applied stays unacked
	killedAt := b.r.Status().AppliedSeq

	t0 = time.Now()
	publishAll(t, js, msgs[cut1:cut2])
	pubTook += time.Since(t0)
	b2 := startReplica(t, ns.url, "replica-b", sources, nil) // same id, fresh index
	defer b2.cancel()
	t0 = time.Now()
	publishAll(t, js, msgs[cut2:])
	pubTook += time.Since(t0)
	last := lastSeq(t, js)
	if last != uint64(len(msgs)) {
		t.Fatalf("stream holds %d messages, want %d", last, len(msgs))
	}
	waitApplied(t, a, last, 60*time.Second)
	waitApplied(t, b2, last, 60*time.Second)

	t0 = time.Now()
	c := startReplica(t, ns.url, "replica-c", sources, nil)
	defer c.cancel()
	waitApplied(t, c, last, 60*time.Second)
	applyTook := time.Since(t0)

	if !raceEnabled {
		refDone <- feed()
	}
	want := <-refDone
	wantDigest := want.Digest()
	for _, rr := range []*runningReplica{a, b2, c} {
		if got := rr.ix.Digest(); got != wantDigest {
			t.Errorf("replica %s digest %x, reference %x", rr.r.o.ID, got, wantDigest)
		}
	}
	// The stream carries a gap (src-b, healed by its clear later), a
	// restart (src-c): the reference's engines and stale flags are what the
	// replicas report.
	stale := map[string]bool{}
	for _, e := range want.State().Engines {
		stale[e.Source] = e.Stale
	}
	if len(stale) != 3 {
		t.Fatalf("reference engines %v: want pod-a, src-b, src-c", stale)
	}
	sb := b2.r.Status()
	if !sb.Resumed || sb.RebuildMessages == 0 || sb.Redelivered+sb.RebuildMessages < killedAt {
		t.Errorf("restarted replica status %+v: want resumed with a rebuild covering the %d messages applied before the kill", sb, killedAt)
	}
	sa := a.r.Status()
	for _, s := range sa.Sources {
		switch s.Token {
		case "src-b":
			if s.Counters.Gaps != 1 || s.Counters.GapBatchesLost != 3 {
				t.Errorf("src-b counters %+v: want one gap of 3 batches", s.Counters)
			}
		case "src-c":
			if s.Counters.Resets != 1 || s.Epoch != 1 {
				t.Errorf("src-c %+v: want one reset, epoch 1", s)
			}
		}
	}
	for _, rr := range []*runningReplica{a, b2, c} {
		rr.stop(t)
	}
	t.Logf("published %d messages (%d events, async) in %v: %.0f msgs/s, %.0f events/s",
		len(msgs), nEvents, pubTook, float64(len(msgs))/pubTook.Seconds(), float64(nEvents)/pubTook.Seconds())
	t.Logf("a new replica applied the stream through its durable consumer in %v: %.0f msgs/s, %.0f events/s",
		applyTook, float64(len(msgs))/applyTook.Seconds(), float64(nEvents)/applyTook.Seconds())
	t.Logf("the restarted replica rebuilt %d messages in %.3fs (%.0f msgs/s), then %d redelivered and dropped, %d fills",
		sb.RebuildMessages, sb.RebuildSeconds, float64(sb.RebuildMessages)/sb.RebuildSeconds, sb.Redelivered, sb.Fills)
}

// TestReplicaExpiredHistory: a replica that starts after the stream lost
// its first messages (expired or purged) marks stale exactly the sources
// whose retained history does not start at an epoch's first batch; a
// source whose retained history opens with a reset and seq 0 is complete.
// A resumed replica rebuilt over the truncated history agrees.
func TestReplicaExpiredHistory(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	ns := startNATS(t)
	defer ns.stop()
	nc, js := ns.connect(t)
	defer nc.Close()
	s := createStream(t, js, StreamOptions{})

	ga, gb := newGen(5, 4, new(int64), 100), newGen(6, 4, new(int64), 100)
	var msgs []relayed
	for i := range uint64(5) { // a: epoch 0, seqs 0..4; b: epoch 0, seqs 0..4
		msgs = append(msgs, relayed{token: "a", seq: i, payload: ga.batch(5)})
		msgs = append(msgs, relayed{token: "b", seq: i, payload: gb.batch(5)})
	}
	gb.reset()
	msgs = append(msgs, relayed{token: "b", reset: true, epoch: 1})
	for i := range uint64(5) { // a: seqs 5..9; b: epoch 1, seqs 0..4
		msgs = append(msgs, relayed{token: "a", seq: 5 + i, payload: ga.batch(5)})
		msgs = append(msgs, relayed{token: "b", epoch: 1, seq: i, payload: gb.batch(5)})
	}
	sources := []string{"a", "b"}

	old := startReplica(t, ns.url, "old", sources, nil) // resumes after the purge
	publishAll(t, js, msgs[:6])
	waitApplied(t, old, 6, 10*time.Second)
	old.stop(t)
	publishAll(t, js, msgs[6:])
	// Drop everything before b's reset: a loses seqs 0..4, b its epoch 0.
	resetAt := uint64(0)
	for i, m := range msgs {
		if m.reset {
			resetAt = uint64(i) + 1
		}
	}
	if err := s.Purge(context.Background(), jetstream.WithPurgeSequence(resetAt)); err != nil {
		t.Fatal(err)
	}
	want := feedRef(t, sources, msgs[resetAt-1:])
	last := lastSeq(t, js)

	fresh := startReplica(t, ns.url, "fresh", sources, nil)
	defer fresh.cancel()
	resumed := startReplica(t, ns.url, "old", sources, nil)
	defer resumed.cancel()
	waitApplied(t, fresh, last, 10*time.Second)
	waitApplied(t, resumed, last, 10*time.Second)
	for _, rr := range []*runningReplica{fresh, resumed} {
		st := rr.r.Status()
		if !st.HistoryTruncated || st.FirstSeq != resetAt {
			t.Errorf("%s: history truncated %v at %d, want true at %d", rr.r.o.ID, st.HistoryTruncated, st.FirstSeq, resetAt)
		}
		got := map[string]bool{}
		for _, e := range rr.ix.State().Engines {
			got[e.Source] = e.Stale
		}
		if !got["a"] || got["b"] || len(got) != 2 {
			t.Errorf("%s: engines' stale flags %v, want a stale, b fresh", rr.r.o.ID, got)
		}
		if d := rr.ix.Digest(); d != want.Digest() {
			t.Errorf("%s: digest differs from a reference fed the retained messages", rr.r.o.ID)
		}
	}
	if !resumed.r.Status().Resumed {
		t.Error("the restarted replica did not resume its consumer")
	}
	fresh.stop(t)
	resumed.stop(t)
}

// TestReplicaOptions: bad options are refused naming the field.
func TestReplicaOptions(t *testing.T) {
	ix, _ := fast.NewKVEvIndex(spec.KVEvConfig{}, []spec.KVEvStream{{Name: "a"}})
	for _, c := range []struct {
		o    ReplicaOptions
		want string
	}{
		{ReplicaOptions{ID: "r", Sources: []string{"a"}}, "url"},
		{ReplicaOptions{URL: "nats://x:1", Sources: []string{"a"}}, "id"},
		{ReplicaOptions{URL: "nats://x:1", ID: "r.1", Sources: []string{"a"}}, "id"},
		{ReplicaOptions{URL: "nats://x:1", ID: "r"}, "sources"},
		{ReplicaOptions{URL: "nats://x:1", ID: "r", Sources: []string{"a.b"}}, "source"},
		{ReplicaOptions{URL: "nats://x:1", ID: "r", Sources: []string{"a", "a"}}, "source"},
		{ReplicaOptions{URL: "nats://x:1", ID: "r", Sources: []string{"a,rank=x"}}, "source[a].rank"},
		{ReplicaOptions{URL: "nats://x:1", ID: "r", Sources: []string{"b"}}, "sources"},
		{ReplicaOptions{URL: "nats://x:1", ID: "r", Sources: []string{"a"}, Stream: "A.B"}, "stream"},
		{ReplicaOptions{URL: "nats://x:1", ID: "r", Sources: []string{"a"}, AckWait: time.Millisecond}, "ack_wait"},
		{ReplicaOptions{URL: "nats://x:1", ID: "r", Sources: []string{"a"}, MaxMessageBytes: -1}, "max_message_bytes"},
	} {
		_, err := NewReplica(ix, c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one naming %s", c.o, err, c.want)
		}
	}
	if _, err := NewReplica(ix, ReplicaOptions{URL: "nats://x:1", ID: "r", Sources: []string{"a,rank=0"}}); err != nil {
		t.Fatal(err)
	}
}

// TestReplicaFillsDeliveredToAPreviousRun: a replica that died with a pull
// request outstanding leaves messages the server delivered to it; JetStream
// redelivers them only after AckWait, after newer ones. The restarted
// replica rebuilds up to what the consumer had delivered when it started,
// reads the messages delivered after that (to the dead run's request)
// from the stream when the first newer one arrives, and drops the
// redeliveries.
func TestReplicaFillsDeliveredToAPreviousRun(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	ns := startNATS(t)
	defer ns.stop()
	nc, js := ns.connect(t)
	defer nc.Close()
	s := createStream(t, js, StreamOptions{})
	g := newGen(9, 4, new(int64), 100)
	var msgs []relayed
	for i := range uint64(10) {
		msgs = append(msgs, relayed{token: "a", seq: i, payload: g.batch(10)})
	}
	publishAll(t, js, msgs)
	want := feedRef(t, []string{"a"}, msgs)

	ctx := context.Background()
	const ackWait = 2 * time.Second
	dead, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: "r", AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, FilterSubjects: []string{Subject("a")},
	})
	if err != nil {
		t.Fatal(err)
	}
	fetch := func(n int) {
		t.Helper()
		b, err := dead.FetchNoWait(n)
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for range b.Messages() {
			got++ // delivered, never acked: the dead run
		}
		if got != n {
			t.Fatalf("fetched %d, want %d (%v)", got, n, b.Error())
		}
	}
	fetch(3)

	streams, _ := ReplicaStreams([]string{"a"})
	ix, _ := fast.NewKVEvIndex(spec.KVEvConfig{}, streams)
	r, err := NewReplica(ix, ReplicaOptions{URL: ns.url, ID: "r", Sources: []string{"a"}, AckWait: ackWait, Logger: testLogger(t), ReadIdle: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r.afterStart = func() { fetch(3) } // the dead run's outstanding request takes 4..6
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()
	rr := &runningReplica{r: r, ix: ix, running: running{cancel: cancel, done: done}}
	defer cancel()
	waitApplied(t, rr, 10, 10*time.Second)
	waitFor(t, 3*ackWait, "the redeliveries", func() bool { return r.Status().Redelivered >= 6 })
	st := r.Status()
	if !st.Resumed || st.RebuildMessages != 3 || st.Fills != 1 || st.Messages != 10 {
		t.Errorf("status %+v: want resumed, 3 rebuilt, 1 fill, 10 handled", st)
	}
	if ix.Digest() != want.Digest() {
		t.Error("digest differs from the reference")
	}
	rr.stop(t)
}

// TestRelayPublishRate runs the 100,000-event stream of TestReplicasConverge
// through the relay's publishing path (its index, then one synchronous
// publish per applied batch, as from the ZMQ subscriber) into JetStream,
// checks that it published exactly that stream (the lost batches as a
// Kvtwin-Gap on the next one, the restart as a reset), and reports the
// rate.
func TestRelayPublishRate(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	ns := startNATS(t)
	defer ns.stop()
	nc, js := ns.connect(t)
	defer nc.Close()
	createStream(t, js, StreamOptions{})
	events := 100_000
	if testing.Short() || raceEnabled {
		events = 10_000
	}
	_, msgs, nEvents := genRelayStream(1, events, 20)
	streams := []spec.KVEvStream{{Name: "pod-a"}, {Name: "src-b"}, {Name: "src-c", Rank: 2}}
	inner, err := fast.NewKVEvIndex(spec.KVEvConfig{}, streams)
	if err != nil {
		t.Fatal(err)
	}
	o, err := RelayOptions{URL: ns.url, Logger: testLogger(t)}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	px := newPubIndex(inner, o, streams)
	px.start(context.Background(), func(ctx context.Context, m *nats.Msg) (*jetstream.PubAck, error) {
		return js.PublishMsg(ctx, m, jetstream.WithExpectStream(DefaultStream))
	}, nc.MaxPayload())
	var batches []relayed
	for _, m := range msgs {
		if !m.reset {
			batches = append(batches, m)
		}
	}
	t0 := time.Now()
	for _, m := range batches {
		px.Live(m.token, [][]byte{m.topic, binary.BigEndian.AppendUint64(nil, m.seq), m.payload})
	}
	took := time.Since(t0)
	var got []string
	_, err = readRange(context.Background(), js, DefaultStream, []string{SubjectFilter}, 1, uint64(len(msgs)), time.Second, func(_ uint64, jm jetstream.Msg) {
		w, err := parseWire(jm.Subject(), jm.Headers(), jm.Data())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %v %d %d %v %x", w.token, w.reset, w.epoch, w.seq, w.gap, sha256.Sum256(w.body)))
	})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	gapNext := false
	for i, m := range msgs {
		if m.token == "src-b" && i > 0 && !m.reset {
			prev := -1
			for j := i - 1; j >= 0; j-- {
				if msgs[j].token == "src-b" {
					prev = j
					break
				}
			}
			gapNext = prev >= 0 && m.seq != msgs[prev].seq+1
		} else {
			gapNext = false
		}
		want = append(want, fmt.Sprintf("%s %v %d %d %v %x", m.token, m.reset, m.epoch, m.seq, gapNext, sha256.Sum256(m.payload)))
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("published stream differs from the generated one (-want +got):\n%s", d)
	}
	t.Logf("relay path: %d batches (%d events) applied and published synchronously in %v: %.0f batches/s, %.0f events/s",
		len(batches), nEvents, took, float64(len(batches))/took.Seconds(), float64(nEvents)/took.Seconds())
}

// TestReplicaWaitsForStream: a replica started before any relay created
// the stream waits for it (retrying, shown in Status) and then consumes.
func TestReplicaWaitsForStream(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	ns := startNATS(t)
	defer ns.stop()
	rep := startReplica(t, ns.url, "early", []string{"a"}, func(o *ReplicaOptions) { o.Logger = quietLogger(t) })
	defer rep.cancel()
	waitFor(t, 10*time.Second, "a failed attempt", func() bool { return rep.r.Status().LastError != "" })
	if st := rep.r.Status(); st.Phase != PhaseWaiting || !st.Connected {
		t.Fatalf("status %+v: want waiting_for_stream, connected", st)
	}
	nc, js := ns.connect(t)
	defer nc.Close()
	createStream(t, js, StreamOptions{})
	g := newGen(11, 4, new(int64), 50)
	msgs := []relayed{{token: "a", seq: 0, payload: g.batch(5)}, {token: "a", seq: 1, payload: g.batch(5)}}
	publishAll(t, js, msgs)
	waitApplied(t, rep, 2, 10*time.Second)
	if rep.ix.Digest() != feedRef(t, []string{"a"}, msgs).Digest() {
		t.Error("digest differs from the reference")
	}
	rep.stop(t)
	if st := rep.r.Status(); st.Phase != PhaseStopped || st.Connected {
		t.Fatalf("status after Run %+v: want stopped, not connected", st)
	}
}

// TestAReplicaReadsOnlyItsSourcesSubjects: a replica's durable consumer
// filters its sources' subjects, so a replica serving engines a and c of
// a stream that also carries b is sent none of b's messages (nothing to
// ignore), and its index is a reference fed a's and c's alone. A durable
// left by a replica that filtered every subject is recreated, not resumed.
func TestAReplicaReadsOnlyItsSourcesSubjects(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	ns := startNATS(t)
	defer ns.stop()
	nc, js := ns.connect(t)
	defer nc.Close()
	s := createStream(t, js, StreamOptions{})
	if _, err := s.CreateConsumer(context.Background(), jetstream.ConsumerConfig{
		Durable: "part-1", AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: SubjectFilter,
	}); err != nil {
		t.Fatal(err)
	}
	gens := map[string]*gen{"a": newGen(1, 4, new(int64), 100), "b": newGen(2, 4, new(int64), 100), "c": newGen(3, 4, new(int64), 100)}
	var msgs, mine []relayed
	for i := range uint64(12) {
		for _, tok := range []string{"a", "b", "c"} {
			m := relayed{token: tok, seq: i, payload: gens[tok].batch(5)}
			msgs = append(msgs, m)
			if tok != "b" {
				mine = append(mine, m)
			}
		}
	}
	publishAll(t, js, msgs)
	want := feedRef(t, []string{"a", "c"}, mine)

	rr := startReplica(t, ns.url, "part-1", []string{"a", "c"}, nil)
	defer rr.stop(t)
	waitFor(t, 10*time.Second, "the replica to apply a's and c's messages", func() bool { return rr.r.Status().Messages >= uint64(len(mine)) })
	st := rr.r.Status()
	if st.Messages != uint64(len(mine)) || st.Ignored != 0 || st.Resumed {
		t.Errorf("status: %d messages, %d ignored, resumed %v; want %d, 0, false (b's never sent, the old durable recreated)", st.Messages, st.Ignored, st.Resumed, len(mine))
	}
	info, err := js.Consumer(context.Background(), DefaultStream, "part-1")
	if err != nil {
		t.Fatal(err)
	}
	if got := info.CachedInfo().Config.FilterSubjects; !sameSubjects(got, []string{"kvtwin.kv.a", "kvtwin.kv.c"}) {
		t.Errorf("the durable filters %q, want kvtwin.kv.a and kvtwin.kv.c", got)
	}
	if rr.ix.Digest() != want.Digest() {
		t.Error("digest differs from a reference fed a's and c's messages")
	}
}
