package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fixtures"
)

// TestRealBinaryServesAndExitsCleanlyOnSIGTERM builds the kvtwin binary,
// starts `kvtwin serve` on an ephemeral loopback port, lists the ops,
// replays a golden fixture file over HTTP, sends SIGTERM and requires a
// clean exit (status 0) within the shutdown timeout.
func TestRealBinaryServesAndExitsCleanlyOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	base, stop := serveBinary(t)

	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(base + "/v1/ops")
	if err != nil {
		t.Fatal(err)
	}
	var ops []struct{ Name string }
	err = json.NewDecoder(resp.Body).Decode(&ops)
	resp.Body.Close()
	if err != nil || len(ops) != len(catalog.All()) {
		t.Fatalf("GET /v1/ops: %d ops (%v), want %d", len(ops), err, len(catalog.All()))
	}
	cases, err := fixtures.ReadFile("../../fixtures/testdata/transfer.filter_cp_rank.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if n, mm, err := fixtures.Check(cases, &fixtures.HTTP{Base: base, Client: client}); err != nil || mm != nil {
		t.Fatalf("fixture replay over HTTP stopped after %d cases: %v %v", n, err, mm)
	}

	stop()
}

// serveBinary builds kvtwin, runs `kvtwin serve` on an ephemeral loopback
// port with extra flags, and returns the base URL and a stop function that
// sends SIGTERM and requires a clean exit. The process is killed at cleanup
// if the test ends first.
func serveBinary(t *testing.T, flags ...string) (string, func()) {
	t.Helper()
	sb := startServeBinary(t, flags...)
	return sb.base, sb.stop
}

// servedBinary is a running `kvtwin serve`: its base URL, its process (to
// signal), every line it logged, and stop (SIGTERM, then a clean exit).
type servedBinary struct {
	base string
	proc *os.Process
	logs *lockedLines
	stop func()
}

// lockedLines collects a child's log lines, read by the test while the
// child writes them.
type lockedLines struct {
	mu    sync.Mutex
	lines []string
}

// add appends one line.
func (l *lockedLines) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
}

// find returns the first JSON line logged at level with msg, decoded, or nil.
func (l *lockedLines) find(level, msg string) map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["level"] == level && rec["msg"] == msg {
			return rec
		}
	}
	return nil
}

// startServeBinary is serveBinary that also returns the process and its logs.
func startServeBinary(t *testing.T, flags ...string) servedBinary {
	t.Helper()
	bin := builtKvtwin(t)
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--log-format", "json", "--shutdown-timeout", "10s", "--op-timeout", "5s"}, flags...)
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	waited := make(chan struct{})
	logs := make(chan string, 64)
	all := &lockedLines{}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			all.add(sc.Text())
			select {
			case logs <- sc.Text():
			default:
			}
		}
		exited <- cmd.Wait()
		close(waited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // an error once it has exited, which is fine
		<-waited
	})
	base := "http://" + listenAddr(t, logs)
	stop := func() {
		t.Helper()
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("kvtwin serve exited with %v after SIGTERM", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("kvtwin serve did not exit within 15s of SIGTERM")
		}
	}
	return servedBinary{base: base, proc: cmd.Process, logs: all, stop: stop}
}

// listenAddr reads the server's JSON logs until the "serving" record and
// returns the address it bound.
func listenAddr(t *testing.T, logs <-chan string) string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case line := <-logs:
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "serving" && rec.Addr != "" {
				return rec.Addr
			}
		case <-deadline:
			t.Fatal("no \"serving\" log record within 30s")
		}
	}
}
