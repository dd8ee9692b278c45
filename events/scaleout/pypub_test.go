package scaleout

import (
	"encoding/hex"
	"path/filepath"
	"testing"

	"github.com/kvtwin/kvtwin/events/pypub"
)

// pyPublisher is scripts/kvev_publisher.py (a real ZMQ PUB with vLLM's
// replay ROUTER) in a child process, driven over stdin and stdout
// (events/pypub), whose Pub and Replay are its endpoints.
type pyPublisher struct {
	*pypub.Publisher
	t testing.TB
}

type pyAck struct {
	Op          string `json:"op"`
	Error       string `json:"error"`
	Seq         uint64 `json:"seq"`
	Payload     string `json:"payload"`
	Subscribers int    `json:"subscribers"`
	Pub         string `json:"pub"`
	Replay      string `json:"replay"`
}

func startPyPublisher(t testing.TB, topic string) *pyPublisher {
	t.Helper()
	p := pypub.Start(t, filepath.Join("..", "..", "scripts", "kvev_publisher.py"), "--topic", topic, "--socket", "xpub")
	return &pyPublisher{Publisher: p, t: t}
}

func (p *pyPublisher) do(cmd map[string]any) pyAck {
	p.t.Helper()
	var a pyAck
	p.Do(cmd, &a)
	return a
}

// emit sends payload live (send) or only buffers it (a PUB drop); it
// returns the seq the publisher gave it.
func (p *pyPublisher) emit(payload []byte, send bool) uint64 {
	p.t.Helper()
	op := "emit"
	if !send {
		op = "lose"
	}
	a := p.do(map[string]any{"op": op, "payload": hex.EncodeToString(payload)})
	if a.Payload != hex.EncodeToString(payload) {
		p.t.Fatalf("publisher sent %s, want %x", a.Payload, payload)
	}
	return a.Seq
}

func (p *pyPublisher) awaitSubscribers(n int) {
	p.t.Helper()
	p.do(map[string]any{"op": "await_subscribers", "n": n, "timeout": 20})
}

// close ends the process and its reader.
func (p *pyPublisher) close() { p.Close() }
