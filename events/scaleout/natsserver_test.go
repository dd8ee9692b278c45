package scaleout

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"
)

// goleakOpts: goroutines of libraries that outlive their objects by design.
//   - go-zeromq's PUB writer (pubMWriter.run), never stopped by Close
//     (v0.17.0), as in events/zmq's tests;
//   - nats-server's process-wide helpers, started once and never stopped;
//   - nats.go's resetPendingAcksOnReconnect (v1.55.0, jetstream/publish.go):
//     ObjectStore.Put publishes through its own JetStream context, whose
//     first async publish starts this goroutine to read the status channel,
//     and defers cleanupReplySub, which sets that channel to nil; when the
//     Put ends before the goroutine first runs, it reads a nil channel and
//     blocks for good. A library race, one goroutine per unlucky Put (a
//     snapshot upload, minutes apart), not a goroutine of this package.
var goleakOpts = []goleak.Option{
	goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*pubMWriter).run"),
	goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.(*fileStore).expireMsgs"),
	goleak.IgnoreAnyFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect"),
}

// natsServer is an embedded JetStream server on a random loopback port.
type natsServer struct {
	s   *server.Server
	url string
	dir string
}

func startNATS(t testing.TB) *natsServer {
	t.Helper()
	return startNATSIn(t, t.TempDir())
}

// startNATSIn starts a server storing in dir (a restart reuses it).
func startNATSIn(t testing.TB, dir string) *natsServer {
	t.Helper()
	return startNATSAt(t, dir, -1)
}

// startNATSAt starts a server storing in dir on port (-1: a random one).
func startNATSAt(t testing.TB, dir string, port int) *natsServer {
	t.Helper()
	s, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir,
		NoLog: true, NoSigs: true, MaxPayload: 8 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		t.Fatal("nats-server not ready in 10s")
	}
	return &natsServer{s: s, url: s.ClientURL(), dir: dir}
}

func (n *natsServer) stop() {
	n.s.Shutdown()
	n.s.WaitForShutdown()
}

// connect opens a client connection closed at the test's end.
func (n *natsServer) connect(t testing.TB) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(n.url)
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// createStream makes the relay's stream with o (defaults for zero fields).
func createStream(t testing.TB, js jetstream.JetStream, o StreamOptions) jetstream.Stream {
	t.Helper()
	o, err := o.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	s, err := ensureStream(context.Background(), js, o, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// waitFor polls cond every 5 ms until it holds, failing after d.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
