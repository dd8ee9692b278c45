package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestEventsRelayFlags: a bad command line is refused before anything
// connects, naming the flag.
func TestEventsRelayFlags(t *testing.T) {
	src := "a=tcp://127.0.0.1:5557"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--events", src}, "--nats"},
		{[]string{"--nats", "nats://127.0.0.1:1"}, "--events"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--events", "a=udp://x:1"}, "source[a].endpoint"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--events", src, "--retry-for", "5m"}, "--retry-for"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--events", src, "--max-age", "1m", "--duplicate-window", "2m"}, "--duplicate-window"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--events", src, "--stream", "A.B"}, "--stream"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--events", src, "--stream-replicas", "9"}, "--stream-replicas"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--events", src, "--events-max-held", "-1"}, "max_held"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--events", src, "--events-max-events", "-1"}, "max_events"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--events", src, "--events-max-decode-ratio", "2000"}, "max_decode_ratio"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--events", src, "--events-max-held-bytes", "2048GiB"}, "max_held_bytes"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--events", src, "--events-max-held-bytes", "lots"}, "--events-max-held-bytes"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--events", src, "--events-max-buffered-bytes", "1MiB"}, "MaxBufferedBytes"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--events", src, "--log-level", "loud"}, "--log-level"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--events", src, "--status-every", "-1s"}, "--status-every"},
	} {
		code, _, stderr := runCLI(t, append([]string{"events", "relay"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q: want 2 and a message naming %s", c.args, code, stderr, c.want)
		}
	}
}

// TestEventsRelayRuns: the command connects to NATS, creates the stream
// with the flags' settings, relays (no publisher is up: it keeps
// redialling) and returns cleanly when its context ends.
func TestEventsRelayRuns(t *testing.T) {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	defer func() { s.Shutdown(); s.WaitForShutdown() }()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	var out, errb bytes.Buffer
	root := newRoot(&out, &errb)
	root.SetArgs([]string{"events", "relay", "--nats", s.ClientURL(), "--events", "pod.a=tcp://127.0.0.1:1",
		"--stream", "KV_TEST", "--max-age", "10m", "--duplicate-window", "1m", "--retry-for", "20s", "--status-every", "20ms", "--log-format", "json"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	deadline := time.Now().Add(10 * time.Second)
	var cfg jetstream.StreamConfig
	for {
		st, err := js.Stream(ctx, "KV_TEST")
		if err == nil {
			cfg = st.CachedInfo().Config
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no stream after 10s: %v; stderr: %s", err, errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if cfg.MaxAge != 10*time.Minute || cfg.Duplicates != time.Minute || len(cfg.Subjects) != 1 || cfg.Subjects[0] != "kvtwin.kv.>" || cfg.Storage != jetstream.FileStorage {
		t.Fatalf("stream config %+v", cfg)
	}
	time.Sleep(100 * time.Millisecond) // a status line or two
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("relay: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("relay did not stop within 20s")
	}
	logs := errb.String()
	for _, want := range []string{`"msg":"stream created"`, `"msg":"relaying"`, `"msg":"relay status"`, `"source":"pod.a"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %s:\n%s", want, logs)
		}
	}
}
