package kvevjs

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// python is the interpreter scripts/kvev_publisher.py needs: Debian's,
// where python3-zmq and python3-msgpack install (as in kvevsub's tests).
const python = "/usr/bin/python3"

var (
	pyOnce   sync.Once
	pyReason string
)

// requirePython skips the test when /usr/bin/python3 lacks zmq or msgpack;
// with KVTWIN_REQUIRE_PYZMQ set (CI) it fails instead.
func requirePython(t testing.TB) {
	t.Helper()
	pyOnce.Do(func() {
		out, err := exec.Command(python, "-c", "import zmq, msgpack").CombinedOutput()
		if err != nil {
			pyReason = fmt.Sprintf("%s cannot import zmq and msgpack (%v: %s); install python3-zmq and python3-msgpack", python, err, bytes.TrimSpace(out))
		}
	})
	if pyReason != "" {
		if os.Getenv("KVTWIN_REQUIRE_PYZMQ") != "" {
			t.Fatal(pyReason + " (KVTWIN_REQUIRE_PYZMQ is set)")
		}
		t.Skip(pyReason)
	}
}

// pyPublisher is scripts/kvev_publisher.py (a real ZMQ PUB with vLLM's
// replay ROUTER) in a child process, driven over stdin and stdout.
type pyPublisher struct {
	t       testing.TB
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan string
	stderr  lockedBuffer
	readers sync.WaitGroup
	pub     string
	replay  string
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
	requirePython(t)
	cmd := exec.Command(python, filepath.Join("..", "scripts", "kvev_publisher.py"), "--topic", topic, "--socket", "xpub")
	p := &pyPublisher{t: t, cmd: cmd, lines: make(chan string, 16)}
	cmd.Stderr = &p.stderr
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.readers.Add(1)
	go func() {
		defer p.readers.Done()
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<26)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	var eps pyAck
	p.read(&eps)
	p.pub, p.replay = eps.Pub, eps.Replay
	return p
}

func (p *pyPublisher) read(v any) {
	p.t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			p.t.Fatalf("publisher exited: %s", p.stderr.String())
		}
		if err := json.Unmarshal([]byte(line), v); err != nil {
			p.t.Fatalf("publisher said %q: %v", line, err)
		}
	case <-time.After(30 * time.Second):
		p.t.Fatal("publisher silent for 30s")
	}
}

func (p *pyPublisher) do(cmd map[string]any) pyAck {
	p.t.Helper()
	b, _ := json.Marshal(cmd)
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.t.Fatalf("publisher stdin: %v", err)
	}
	var a pyAck
	p.read(&a)
	if a.Error != "" {
		p.t.Fatalf("publisher %v: %s", cmd["op"], a.Error)
	}
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

// lockedBuffer is a bytes.Buffer safe for exec's copying goroutine and
// the test reading it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// close ends the process and its reader.
func (p *pyPublisher) close() {
	_, _ = p.stdin.Write([]byte(`{"op":"exit"}` + "\n"))
	_ = p.stdin.Close()
	done := make(chan struct{})
	go func() {
		for range p.lines {
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
	p.readers.Wait()
	_ = p.cmd.Wait()
}
