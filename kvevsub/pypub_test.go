package kvevsub

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// python is the interpreter the publisher script needs: Debian's, where
// python3-zmq and python3-msgpack install.
const python = "/usr/bin/python3"

var (
	pyOnce   sync.Once
	pyReason string
)

// requirePython skips the test, with the reason, only when /usr/bin/python3
// lacks zmq or msgpack; with KVTWIN_REQUIRE_PYZMQ set (CI) it fails instead.
func requirePython(t testing.TB) {
	t.Helper()
	pyOnce.Do(func() {
		out, err := exec.Command(python, "-c", "import zmq, msgpack").CombinedOutput()
		if err != nil {
			pyReason = fmt.Sprintf("%s cannot import zmq and msgpack (%v: %s); install python3-zmq and python3-msgpack (apt-get install python3-zmq python3-msgpack)", python, err, bytes.TrimSpace(out))
		}
	})
	if pyReason != "" {
		if os.Getenv("KVTWIN_REQUIRE_PYZMQ") != "" {
			t.Fatal(pyReason + " (KVTWIN_REQUIRE_PYZMQ is set)")
		}
		t.Skip(pyReason)
	}
}

// pyPublisher is scripts/kvev_publisher.py in a child process, driven over
// its stdin and stdout.
type pyPublisher struct {
	t        testing.TB
	cmd      *exec.Cmd
	stdin    interface{ Write([]byte) (int, error) }
	closeIn  func() error
	lines    chan string
	stderr   *syncBuffer
	pub      string
	replay   string
	topicStr string
	readerWG sync.WaitGroup
	closed   bool
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startPyPublisher(t testing.TB, cfg pubConfig) *pyPublisher {
	t.Helper()
	requirePython(t)
	args := []string{filepath.Join("..", "scripts", "kvev_publisher.py"), "--topic", cfg.Topic,
		"--rank", strconv.FormatInt(cfg.Rank, 10)}
	if !cfg.PlainPub {
		args = append(args, "--socket", "xpub")
	}
	if cfg.Layout != 0 {
		args = append(args, "--layout", strconv.Itoa(cfg.Layout))
	}
	if cfg.Sentinel != "" {
		args = append(args, "--sentinel", cfg.Sentinel)
	}
	if cfg.NoReplay {
		args = append(args, "--no-replay")
	}
	if cfg.Buffer != 0 {
		args = append(args, "--buffer", strconv.Itoa(cfg.Buffer))
	}
	cmd := exec.Command(python, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &pyPublisher{t: t, cmd: cmd, topicStr: cfg.Topic, stdin: stdin, closeIn: stdin.Close, lines: make(chan string, 16), stderr: &syncBuffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.readerWG.Add(1)
	go func() {
		defer p.readerWG.Done()
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	var eps pubAck
	p.read(&eps)
	p.pub, p.replay = eps.Pub, eps.Replay
	return p
}

func (p *pyPublisher) read(v any) {
	p.t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			p.t.Fatalf("publisher exited: %s", p.stderr)
		}
		if err := json.Unmarshal([]byte(line), v); err != nil {
			p.t.Fatalf("publisher said %q: %v", line, err)
		}
	case <-time.After(30 * time.Second):
		p.t.Fatalf("publisher silent for 30s: %s", p.stderr)
	}
}

func (p *pyPublisher) topic() string          { return p.topicStr }
func (p *pyPublisher) pubEndpoint() string    { return p.pub }
func (p *pyPublisher) replayEndpoint() string { return p.replay }

func (p *pyPublisher) do(c pubCmd) pubAck {
	p.t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		p.t.Fatal(err)
	}
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.t.Fatalf("publisher stdin: %v (%s)", err, p.stderr)
	}
	var a pubAck
	p.read(&a)
	if a.Error != "" {
		p.t.Fatalf("publisher %s: %s", c.Op, a.Error)
	}
	if a.Op == "up" || a.Op == "restart" {
		p.pub, p.replay = a.Pub, a.Replay
	}
	return a
}

// close ends the process (exit, then EOF, then a kill after 10 s) and its reader.
func (p *pyPublisher) close() {
	if p.closed {
		return
	}
	p.closed = true
	_, _ = p.stdin.Write([]byte(`{"op":"exit"}` + "\n"))
	_ = p.closeIn()
	done := make(chan struct{})
	go func() {
		for range p.lines {
		}
		close(done)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	select {
	case <-done:
	case <-ctx.Done():
		_ = p.cmd.Process.Kill()
		<-done
	}
	p.readerWG.Wait()
	if err := p.cmd.Wait(); err != nil {
		p.t.Errorf("publisher: %v: %s", err, p.stderr)
	}
}
