package pypub

import (
	"encoding/hex"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

const script = "../../scripts/kvev_publisher.py"

// TestStartDoClose runs the real script: endpoints from the first line,
// answers decoded, endpoints refreshed by restart, and Close idempotent and
// leaving no goroutine behind.
func TestStartDoClose(t *testing.T) {
	Require(t)
	defer goleak.VerifyNone(t)
	p := Start(t, script, "--topic", "kv@t", "--socket", "xpub")
	if !strings.HasPrefix(p.Pub, "tcp://127.0.0.1:") || !strings.HasPrefix(p.Replay, "tcp://127.0.0.1:") {
		t.Fatalf("endpoints %q, %q", p.Pub, p.Replay)
	}
	var ack struct {
		Op      string `json:"op"`
		Seq     uint64 `json:"seq"`
		Payload string `json:"payload"`
	}
	for want := range uint64(3) {
		p.Do(map[string]any{"op": "emit", "payload": hex.EncodeToString([]byte{0x90})}, &ack)
		if ack.Op != "emit" || ack.Seq != want || ack.Payload != "90" {
			t.Fatalf("emit answered %+v, want seq %d and payload 90", ack, want)
		}
	}
	p.Do(map[string]any{"op": "down"}, nil)
	p.Do(map[string]any{"op": "restart"}, nil)
	if p.Pub == "" || p.Replay == "" {
		t.Fatalf("endpoints after restart %q, %q", p.Pub, p.Replay)
	}
	var stats struct {
		Seq      uint64 `json:"seq"`
		Restarts int    `json:"restarts"`
	}
	p.Do(map[string]any{"op": "stats"}, &stats)
	if stats.Seq != 0 || stats.Restarts != 1 {
		t.Fatalf("stats after restart %+v, want seq 0 and 1 restart", stats)
	}
	p.Close()
	p.Close()
}

// TestNoReplayHasNoReplayEndpoint: --no-replay leaves Replay empty.
func TestNoReplayHasNoReplayEndpoint(t *testing.T) {
	Require(t)
	defer goleak.VerifyNone(t)
	p := Start(t, script, "--no-replay")
	defer p.Close()
	if p.Pub == "" || p.Replay != "" {
		t.Fatalf("endpoints %q, %q; want a pub and no replay", p.Pub, p.Replay)
	}
}

// TestErrorAnswerFailsTheTest: an {"error": ...} answer fails the test
// with the command and the publisher's message, and Close still ends the
// process.
func TestErrorAnswerFailsTheTest(t *testing.T) {
	Require(t)
	defer goleak.VerifyNone(t)
	p := Start(t, script)
	defer p.Close()
	ft := &fatalTB{TB: t}
	p.t = ft
	var wg sync.WaitGroup
	wg.Go(func() { p.Do(map[string]any{"op": "nonsense"}, nil) })
	wg.Wait()
	p.t = t
	if !strings.Contains(ft.msg, `refused {"op":"nonsense"}`) || !strings.Contains(ft.msg, "unknown op") {
		t.Errorf("Do failed with %q; want the command and the publisher's error", ft.msg)
	}
}

// fatalTB records a Fatalf and ends its goroutine, as testing does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
