package scaleout

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/kvtwin/kvtwin/events/pypub"
	"github.com/kvtwin/kvtwin/events/zmq"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// runningRelay is a relay whose Run runs in a goroutine.
type runningRelay struct {
	r *Relay
	running
}

// running is a Run loop on its own goroutine: cancel ends it, done
// carries what Run returned.
type running struct {
	cancel context.CancelFunc
	done   chan error
}

// goRun starts run on a goroutine with a context its cancel ends.
func goRun(run func(context.Context) error) running {
	ctx, cancel := context.WithCancel(context.Background())
	l := running{cancel: cancel, done: make(chan error, 1)}
	go func() { l.done <- run(ctx) }()
	return l
}

// stopRun cancels the loop and waits for Run to return, failing t on an
// error or after 20 s.
func (l running) stopRun(t testing.TB, what string) {
	t.Helper()
	l.cancel()
	select {
	case err := <-l.done:
		if err != nil {
			t.Fatalf("%s Run: %v", what, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("%s Run did not return within 20s of its cancel", what)
	}
}

func startRelay(t testing.TB, url string, sources []zmq.Source) *runningRelay {
	t.Helper()
	r, err := NewRelay(RelayOptions{
		Sources: sources, URL: url, Logger: testLogger(t), NewIndex: fast.NewKVEvIndex,
		RetryMin: 10 * time.Millisecond, RetryMax: 100 * time.Millisecond, ReadIdle: time.Second,
		Subscriber: zmq.Options{
			ReconnectMin: 10 * time.Millisecond, ReconnectMax: 200 * time.Millisecond,
			DialTimeout: 2 * time.Second, ReplayTimeout: 3 * time.Second, ReplayCooldown: 200 * time.Millisecond,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &runningRelay{r: r, running: goRun(r.Run)}
}

func (rr *runningRelay) stop(t testing.TB) {
	t.Helper()
	rr.stopRun(t, "relay")
}

// refFeed is a reference index fed what the publisher emitted, as the
// replicas should see it (stream named by the token, no replay).
type refFeed struct {
	t     testing.TB
	ix    spec.KVEvIndex
	token string
	topic []byte
}

func newRefFeed(t testing.TB, token, topic string) *refFeed {
	ix, err := ref.NewKVEvIndex(spec.KVEvConfig{}, []spec.KVEvStream{{Name: token}})
	if err != nil {
		t.Fatal(err)
	}
	return &refFeed{t: t, ix: ix, token: token, topic: []byte(topic)}
}

func (f *refFeed) batch(seq uint64, payload []byte) {
	f.ix.Live(f.token, [][]byte{f.topic, binary.BigEndian.AppendUint64(nil, seq), payload})
}

// TestRelayEndToEnd: a real ZMQ publisher (scripts/kvev_publisher.py, with
// vLLM's replay ROUTER) → kvtwin's relay → JetStream → a replica. A batch
// the PUB socket drops is replayed and relayed in order; a publisher
// restart is relayed as a reset opening epoch 1; a relay restarted while
// the publisher goes on rebuilds its cursor from the stream and fills what
// it missed through replay, with no reset and no gap. The replica, the
// relay's index and a reference index fed the emitted batches directly
// agree.
func TestRelayEndToEnd(t *testing.T) {
	pypub.Require(t)
	defer goleak.VerifyNone(t, goleakOpts...)
	ns := startNATS(t)
	defer ns.stop()
	nc, js := ns.connect(t)
	defer nc.Close()

	const topic = "kv@pod-7@llama"
	pub := startPyPublisher(t, topic)
	defer pub.close()
	g := newGen(42, 16, new(int64), 300)
	want := newRefFeed(t, "src-a", topic)
	var incarnation [][]byte // the current publisher's payloads by seq
	emit := func(send bool) {
		p := g.batch(20)
		seq := pub.emit(p, send)
		want.batch(seq, p)
		incarnation = append(incarnation, p)
	}
	src := zmq.Source{Name: "src-a", Endpoint: pub.Pub, Replay: pub.Replay, Topic: "kv@"}
	relay := startRelay(t, ns.url, []zmq.Source{src})
	rep := startReplica(t, ns.url, "r1", []string{"src-a"}, nil)
	defer rep.cancel()
	pub.awaitSubscribers(1)

	for range 5 {
		emit(true) // 0..4
	}
	emit(false) // 5: dropped on the way, kept in the replay buffer
	emit(true)  // 6: reveals the gap; the relay replays 5, 6
	emit(true)  // 7
	waitApplied(t, rep, 8, 20*time.Second)

	pub.do(map[string]any{"op": "restart"}) // a new incarnation, seq back to 0
	g.reset()
	incarnation = nil
	want.ix.Restart("src-a")
	pub.awaitSubscribers(1)
	for range 3 {
		emit(true) // 0..2 of epoch 1
	}
	waitApplied(t, rep, 8+1+3, 20*time.Second)
	// The replica can apply a batch before the relay, back from its
	// PubAck, has counted it: wait for the count, then check the rest.
	waitFor(t, 20*time.Second, "the relay to count 11 published batches", func() bool { return relay.r.Status().Sources[0].Published >= 11 })
	if st := relay.r.Status().Sources[0]; st.Epoch != 1 || st.Resets != 1 || st.Published != 11 {
		t.Fatalf("relay status %+v: want epoch 1, 1 reset, 11 batches published", st)
	}
	relayDigest := relay.r.Index().Digest()
	relay.stop(t)

	emit(true) // 3, 4: published while no relay listens; buffered for replay
	emit(true)
	relay2 := startRelay(t, ns.url, []zmq.Source{src})
	pub.awaitSubscribers(2)
	emit(true) // 5: the rebuilt cursor (next 3) sees the gap; replay brings 3, 4
	waitApplied(t, rep, 8+1+3+3, 20*time.Second)

	s, err := js.Stream(context.Background(), DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.CachedInfo().State.Msgs; n != 15 {
		t.Errorf("stream holds %d messages, want 15 (8 batches, 1 reset, 6 batches)", n)
	}
	waitFor(t, 20*time.Second, "the restarted relay to count 3 published batches", func() bool { return relay2.r.Status().Sources[0].Published >= 3 })
	st2 := relay2.r.Status()
	if st2.RebuildMessages != 12 || st2.Sources[0].Epoch != 1 || st2.Sources[0].Resets != 0 || st2.Sources[0].Published != 3 {
		t.Errorf("restarted relay status %+v: want 12 messages rebuilt, epoch 1 continued, no reset, 3 published", st2)
	}
	rs := rep.r.Status().Sources[0]
	if rs.Counters.Resets != 1 || rs.Counters.Gaps != 0 || rs.Counters.Batches != 14 || rs.Epoch != 1 || rs.Seq != 5 {
		t.Errorf("replica source %+v: want 14 batches, 1 reset, no gap, epoch 1 at seq 5", rs)
	}
	for _, e := range rep.ix.State().Engines {
		if e.Stale || e.Source != "pod-7" {
			t.Errorf("replica engine %+v: want pod-7, fresh", e)
		}
	}
	if d := rep.ix.Digest(); d != want.ix.Digest() {
		t.Error("the replica's digest differs from the reference's")
	}
	if d := relay2.r.Index().Digest(); d != want.ix.Digest() {
		t.Error("the restarted relay's digest differs from the reference's")
	}
	if relayDigest == want.ix.Digest() {
		t.Error("the reference did not move after the first relay stopped (the test checks nothing)")
	}

	// An operator's restart signal: a reset opens epoch 2; the next live
	// message (seq 6) finds the cursor unknown and replays from 0, so the
	// replicas rebuild the source from the publisher's buffer.
	if err := relay2.r.Restart("src-a"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the reset", func() bool { return relay2.r.Status().Sources[0].Epoch == 2 })
	want.ix.Restart("src-a")
	for seq, p := range incarnation {
		want.batch(uint64(seq), p)
	}
	emit(true) // 6
	waitApplied(t, rep, 15+1+7, 20*time.Second)
	if rs := rep.r.Status().Sources[0]; rs.Epoch != 2 || rs.Counters.Resets != 2 || rs.Seq != 6 {
		t.Errorf("replica source %+v: want epoch 2 after 2 resets, at seq 6", rs)
	}
	if d := rep.ix.Digest(); d != want.ix.Digest() {
		t.Error("after the operator's restart the replica's digest differs from the reference's")
	}
	relay2.stop(t)
	rep.stop(t)
}

// flakyPublish stores each message on its first attempt but reports that
// attempt as failed (a PubAck lost on the way), failing outright while
// down is set.
type flakyPublish struct {
	js   jetstream.JetStream
	mu   sync.Mutex
	seen map[string]bool
	down bool
}

func (f *flakyPublish) publish(ctx context.Context, m *nats.Msg) (*jetstream.PubAck, error) {
	f.mu.Lock()
	down, first := f.down, !f.seen[m.Header.Get(nats.MsgIdHdr)]
	f.seen[m.Header.Get(nats.MsgIdHdr)] = true
	f.mu.Unlock()
	if down {
		return nil, errors.New("simulated: no route to the server")
	}
	ack, err := f.js.PublishMsg(ctx, m)
	if first && err == nil {
		return nil, context.DeadlineExceeded
	}
	return ack, err
}

// TestRelayPublishRetry: a publish whose PubAck is lost is retried with the
// same Msg-Id and JetStream drops the copy; a publish that keeps failing
// past --retry-for is given up, the next batch carries Kvtwin-Gap, and a
// replica sees the gap and marks the source stale; a batch past the
// server's max payload is given up at once.
func TestRelayPublishRetry(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	ns := startNATS(t)
	defer ns.stop()
	nc, js := ns.connect(t)
	defer nc.Close()
	s := createStream(t, js, StreamOptions{})

	streams := []spec.KVEvStream{{Name: "s"}}
	inner, err := fast.NewKVEvIndex(spec.KVEvConfig{}, streams)
	if err != nil {
		t.Fatal(err)
	}
	o, err := RelayOptions{URL: ns.url, RetryFor: 300 * time.Millisecond, RetryMin: 5 * time.Millisecond, RetryMax: 20 * time.Millisecond, Logger: quietLogger(t)}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	px := newPubIndex(inner, o, streams)
	f := &flakyPublish{js: js, seen: map[string]bool{}}
	px.start(context.Background(), f.publish, 64<<10)
	p := &simPublisher{topic: []byte("t"), keep: 100, gen: newGen(3, 4, new(int64), 50), rng: nil}
	p.rng = newRand(3)
	for range 4 {
		px.Live("s", liveFrames(p.emit()))
	}
	f.down = true
	px.Live("s", liveFrames(p.emit())) // 4: given up
	f.down = false
	px.Live("s", liveFrames(p.emit())) // 5: Kvtwin-Gap
	big := p.emit()
	big.payload = make([]byte, 70<<10) // 6: past max payload (garbage: never decoded)
	px.Live("s", liveFrames(big))
	px.Live("s", liveFrames(p.emit())) // 7: Kvtwin-Gap

	st := px.streams["s"].st
	if st.Published != 6 || st.Duplicates != 6 || st.Failed != 2 || st.GapFlags != 2 || st.Retries < 6 {
		t.Fatalf("status %+v: want 6 published, each once a duplicate, 2 failed, 2 flagged", st)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 6 {
		t.Fatalf("stream holds %d messages, want 6 (the retries dropped as duplicates)", info.State.Msgs)
	}
	var gaps []string
	_, err = readRange(context.Background(), js, DefaultStream, []string{SubjectFilter}, 1, 6, time.Second, func(_ uint64, m jetstream.Msg) {
		gaps = append(gaps, m.Headers().Get(HeaderSeq)+m.Headers().Get(HeaderGap))
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(gaps, " "); got != "0 1 2 3 51 71" {
		t.Fatalf("stream seqs and gap flags %q, want \"0 1 2 3 51 71\"", got)
	}
	rep := startReplica(t, ns.url, "r", []string{"s"}, nil)
	waitApplied(t, rep, 6, 10*time.Second)
	if e := rep.ix.State().Engines; len(e) != 1 || !e[0].Stale || e[0].StaleSince != 5 {
		t.Fatalf("replica engines %+v: want one, stale since 5", e)
	}
	if c := rep.r.Status().Sources[0].Counters; c.Gaps != 2 || c.GapFlags != 2 {
		t.Fatalf("replica counters %+v: want 2 gaps, 2 flags", c)
	}
	rep.stop(t)
}

// TestRelayOptions: bad options are refused naming the flag.
func TestRelayOptions(t *testing.T) {
	src := zmq.Source{Name: "a", Endpoint: "tcp://127.0.0.1:5557"}
	for _, c := range []struct {
		o    RelayOptions
		want string
	}{
		{RelayOptions{Sources: []zmq.Source{src}}, "--nats"},
		{RelayOptions{URL: "nats://x:1"}, "--events"},
		{RelayOptions{URL: "nats://x:1", Sources: []zmq.Source{src, {Name: "a", Endpoint: "tcp://h:1"}}}, "source.name"},
		{RelayOptions{URL: "nats://x:1", Sources: []zmq.Source{src, {Name: "a.b", Endpoint: "tcp://h:1"}, {Name: "a_b", Endpoint: "tcp://h:2"}}}, "token"},
		{RelayOptions{URL: "nats://x:1", Sources: []zmq.Source{src}, Stream: StreamOptions{Name: "a.b"}}, "--stream"},
		{RelayOptions{URL: "nats://x:1", Sources: []zmq.Source{src}, Stream: StreamOptions{MaxAge: -1}}, "--max-age"},
		{RelayOptions{URL: "nats://x:1", Sources: []zmq.Source{src}, Stream: StreamOptions{MaxAge: time.Minute, DuplicateWindow: time.Hour}}, "--duplicate-window"},
		{RelayOptions{URL: "nats://x:1", Sources: []zmq.Source{src}, RetryFor: time.Hour}, "--retry-for"},
		{RelayOptions{URL: "nats://x:1", Sources: []zmq.Source{src}, Stream: StreamOptions{Replicas: 7}}, "--stream-replicas"},
		{RelayOptions{URL: "nats://x:1", Sources: []zmq.Source{src}, Index: spec.KVEvConfig{MaxHeld: -1}}, "max_held"},
		{RelayOptions{URL: "nats://x:1", Sources: []zmq.Source{src}}, "new_index"},
		// The relay would otherwise be refused by the subscriber for its
		// index wrapper, with no word of why it cannot relay a snapshot.
		{RelayOptions{URL: "nats://x:1", Sources: []zmq.Source{{Name: "a", Endpoint: "tcp://h:1", Snapshot: "tcp://h:2"}}, NewIndex: fast.NewKVEvIndex}, "source[a].snapshot = tcp://h:2: want unset: the relay does not relay"},
	} {
		_, err := NewRelay(c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one naming %s", c.o, err, c.want)
		}
	}
}

// TestRelayStreamMismatch: a stream that exists with other subjects is
// refused (Run returns), naming --stream.
func TestRelayStreamMismatch(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	ns := startNATS(t)
	defer ns.stop()
	nc, js := ns.connect(t)
	defer nc.Close()
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: DefaultStream, Subjects: []string{"other.>"}}); err != nil {
		t.Fatal(err)
	}
	r, err := NewRelay(RelayOptions{URL: ns.url, Sources: []zmq.Source{{Name: "a", Endpoint: "tcp://127.0.0.1:1"}}, Logger: quietLogger(t), NewIndex: fast.NewKVEvIndex})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.Run(ctx); err == nil || !strings.Contains(err.Error(), "--stream") {
		t.Fatalf("Run: %v, want an error naming --stream", err)
	}
}

// TestServerRestart: the NATS server restarts (same store, same port)
// while a relay publishes and a replica consumes. The relay's publish
// retries until the server is back and stores the batch once; the
// replica's connection and pull consumer recover and it applies the rest.
func TestServerRestart(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	dir := t.TempDir()
	ns := startNATSIn(t, dir)
	port := ns.s.Addr().(*net.TCPAddr).Port
	nc, err := nats.Connect(ns.url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	createStream(t, js, StreamOptions{})

	streams := []spec.KVEvStream{{Name: "s"}}
	inner, _ := fast.NewKVEvIndex(spec.KVEvConfig{}, streams)
	o, err := RelayOptions{URL: ns.url, PublishTimeout: time.Second, RetryFor: 20 * time.Second, RetryMin: 20 * time.Millisecond, RetryMax: 200 * time.Millisecond, Logger: testLogger(t)}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	px := newPubIndex(inner, o, streams)
	px.start(context.Background(), func(ctx context.Context, m *nats.Msg) (*jetstream.PubAck, error) {
		return js.PublishMsg(ctx, m, jetstream.WithExpectStream(DefaultStream))
	}, nc.MaxPayload())
	p := &simPublisher{topic: []byte("t"), keep: 100, gen: newGen(4, 4, new(int64), 50), rng: newRand(4)}
	want := newRefFeed(t, "s", "t")
	live := func() {
		h := p.emit()
		want.batch(h.seq, h.payload)
		px.Live("s", liveFrames(h))
	}
	rep := startReplica(t, ns.url, "r", []string{"s"}, func(o *ReplicaOptions) { o.Logger = quietLogger(t) })
	defer rep.cancel()
	for range 5 {
		live()
	}
	waitApplied(t, rep, 5, 10*time.Second)

	ns.stop()
	done := make(chan struct{})
	go func() { defer close(done); live() }() // retries while the server is down
	time.Sleep(300 * time.Millisecond)
	ns = startNATSAt(t, dir, port)
	defer ns.stop()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the publish did not complete after the server came back")
	}
	for range 5 {
		live()
	}
	waitApplied(t, rep, 11, 30*time.Second)
	if st := px.streams["s"].st; st.Published != 11 || st.Failed != 0 {
		t.Errorf("relay status %+v: want 11 published, none failed", st)
	}
	if rep.ix.Digest() != want.ix.Digest() {
		t.Error("the replica's digest differs from the reference's")
	}
	rep.stop(t)
}
