// Package pypub drives the real KV-event publisher, scripts/kvev_publisher.py,
// in a child process, for tests. The script uses python3-zmq and
// python3-msgpack (vLLM's PUB and replay ROUTER, and with --snapshot the
// snapshot service of docs/spec/kv-events.md §3.5) and is driven over its
// stdin and stdout. It is a normal package only
// so that the test packages that need a real publisher (events/zmq,
// events/scaleout, server, cmd/kvtwin) share one driver instead of each keeping a copy; it is used by
// tests alone, links testing, and production code never imports it
// (internal/repolint checks that).
package pypub

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// Python is the interpreter the publisher script needs: Debian's, where
// python3-zmq and python3-msgpack install.
const Python = "/usr/bin/python3"

// RequireEnv names the environment variable that, when set (CI sets it),
// turns a missing zmq or msgpack from a skip into a failure.
const RequireEnv = "KVTWIN_REQUIRE_PYZMQ"

// answerTimeout is how long a publisher may stay silent before the test fails.
const answerTimeout = 30 * time.Second

// exitTimeout is how long Close waits for the publisher to exit before it
// kills the process.
const exitTimeout = 10 * time.Second

// unavailable says, once per test binary, why Python cannot run the
// publisher ("" when it can).
var unavailable = sync.OnceValue(func() string {
	out, err := exec.Command(Python, "-c", "import zmq, msgpack").CombinedOutput()
	if err == nil {
		return ""
	}
	return fmt.Sprintf("%s cannot import zmq and msgpack (%v: %s); install python3-zmq and python3-msgpack (apt-get install python3-zmq python3-msgpack)",
		Python, err, bytes.TrimSpace(out))
})

// Require skips t, with the reason, when Python lacks zmq or msgpack, and
// fails it instead when RequireEnv is set.
func Require(t testing.TB) {
	t.Helper()
	reason := unavailable()
	if reason == "" {
		return
	}
	if os.Getenv(RequireEnv) != "" {
		t.Fatal(reason + " (" + RequireEnv + " is set)")
	}
	t.Skip(reason)
}

// Publisher is the publisher script running in a child process.
type Publisher struct {
	// Pub is the PUB (or XPUB) socket's endpoint, from the first line and
	// refreshed by any answer that carries endpoints ("up", "restart").
	Pub string
	// Replay is the replay ROUTER's endpoint ("" with --no-replay), kept
	// like Pub.
	Replay string
	// Snapshot is the snapshot REP socket's endpoint ("" without
	// --snapshot), kept like Pub.
	Snapshot string
	// PublisherID is the hex of the publisher id of the current
	// incarnation ("" without --snapshot), kept like Pub: a "restart"
	// draws a new one.
	PublisherID string

	t       testing.TB
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan string
	stderr  *lockedBuffer
	readers sync.WaitGroup
	closed  bool
}

// endpoints is the publisher's first line and its answer to "up" and "restart".
type endpoints struct {
	Pub         string `json:"pub"`
	Replay      string `json:"replay"`
	Snapshot    string `json:"snapshot"`
	PublisherID string `json:"publisher_id"`
}

// set keeps the endpoints and publisher id of an answer that has them.
func (p *Publisher) set(eps endpoints) {
	p.Pub, p.Replay, p.Snapshot, p.PublisherID = eps.Pub, eps.Replay, eps.Snapshot, eps.PublisherID
}

// Start runs Python on scriptPath with args (after Require), reads the
// endpoints from its first line, and registers Close with t.Cleanup.
func Start(t testing.TB, scriptPath string, args ...string) *Publisher {
	t.Helper()
	Require(t)
	cmd := exec.Command(Python, append([]string{scriptPath}, args...)...)
	p := &Publisher{t: t, cmd: cmd, lines: make(chan string, 16), stderr: &lockedBuffer{}}
	cmd.Stderr = p.stderr
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
	line, err := p.readLine()
	if err == nil {
		var eps endpoints
		if err = json.Unmarshal([]byte(line), &eps); err == nil {
			p.set(eps)
		} else {
			err = fmt.Errorf("publisher said %q: %v", line, err)
		}
	}
	if err != nil {
		_ = p.stop()
		t.Fatalf("%v; stderr:\n%s", err, p.stderr)
	}
	t.Cleanup(p.Close)
	return p
}

// Do sends cmd as one JSON line and unmarshals the answer line into answer
// (nil: discard it); an {"error": ...} answer, a dead publisher or a silent
// one fails the test with the publisher's stderr.
func (p *Publisher) Do(cmd any, answer any) {
	p.t.Helper()
	b, err := json.Marshal(cmd)
	if err != nil {
		p.t.Fatal(err)
	}
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.t.Fatalf("publisher stdin: %v; stderr:\n%s", err, p.stderr)
	}
	line, err := p.readLine()
	if err != nil {
		p.t.Fatalf("publisher, after %s: %v; stderr:\n%s", b, err, p.stderr)
	}
	var ack struct {
		Error json.RawMessage `json:"error"`
		endpoints
	}
	if err := json.Unmarshal([]byte(line), &ack); err != nil {
		p.t.Fatalf("publisher said %q: %v", line, err)
	}
	if len(ack.Error) > 0 && string(ack.Error) != "null" {
		p.t.Fatalf("publisher refused %s: %s; stderr:\n%s", b, ack.Error, p.stderr)
	}
	if ack.Pub != "" {
		p.set(ack.endpoints)
	}
	if answer != nil {
		if err := json.Unmarshal([]byte(line), answer); err != nil {
			p.t.Fatalf("publisher said %q: %v", line, err)
		}
	}
}

// readLine returns the next stdout line, or why there is none.
func (p *Publisher) readLine() (string, error) {
	timer := time.NewTimer(answerTimeout)
	defer timer.Stop()
	select {
	case line, ok := <-p.lines:
		if !ok {
			return "", fmt.Errorf("publisher exited")
		}
		return line, nil
	case <-timer.C:
		return "", fmt.Errorf("publisher silent for %v", answerTimeout)
	}
}

// Close ends the publisher (an exit command, EOF on stdin, a kill if it has
// not exited after 10s) and joins its reader; a failed exit fails the test
// with the publisher's stderr. Later calls do nothing.
func (p *Publisher) Close() {
	p.t.Helper()
	if err := p.stop(); err != nil {
		p.t.Errorf("publisher: %v; stderr:\n%s", err, p.stderr)
	}
}

// stop ends the process and its reader once, returning how it ended.
func (p *Publisher) stop() error {
	if p.closed {
		return nil
	}
	p.closed = true
	_, _ = p.stdin.Write([]byte(`{"op":"exit"}` + "\n"))
	_ = p.stdin.Close()
	timer := time.NewTimer(exitTimeout)
	defer timer.Stop()
	var killed error
drain:
	for {
		select {
		case _, ok := <-p.lines:
			if !ok {
				break drain
			}
		case <-timer.C:
			_ = p.cmd.Process.Kill()
			killed = fmt.Errorf("killed after %v without exiting", exitTimeout)
			for range p.lines {
			}
			break drain
		}
	}
	p.readers.Wait()
	err := p.cmd.Wait()
	if killed != nil {
		return killed
	}
	return err
}

// lockedBuffer is a bytes.Buffer safe for exec's copying goroutine and the
// test reading it.
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
