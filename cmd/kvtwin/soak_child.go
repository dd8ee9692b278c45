package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// This file runs `kvtwin serve` as the soak's child process: started on an
// ephemeral 127.0.0.1 port, its logs drained (a full pipe would stall it),
// its last lines kept for a crash report, and stopped with SIGTERM, then
// SIGKILL, whatever happened.

// soakChild is the server under test.
type soakChild struct {
	cmd  *exec.Cmd
	addr string // host:port it bound, always 127.0.0.1
	logs *logRing

	done    chan struct{} // closed once the process has exited and been waited for
	waitErr error         // cmd.Wait's result; read only after done

	stopping atomic.Bool // set before the soak stops it: a later exit is not a crash
	stopOnce sync.Once
	stopErr  error
}

// childStartTimeout bounds the wait for the "serving" log record and /readyz.
const childStartTimeout = 30 * time.Second

// childStopGrace is how long the child may drain after SIGTERM before
// SIGKILL. Every client has gone by then, so a drain is immediate; one that
// takes this long is stuck.
const childStopGrace = 10 * time.Second

// childServeArgs are the flags the soak sets itself; a --serve-arg may not
// override them (the address must stay loopback and ephemeral, and the logs
// JSON so the bound address can be read from them). Everything else is the
// server's default: the soak measures the server as shipped.
func childServeArgs() []string {
	return []string{"serve", "--addr", "127.0.0.1:0", "--log-format", "json"}
}

// checkServeArgs refuses extra serve flags that would move the server off
// loopback or change the log format the soak parses.
func checkServeArgs(extra []string) error {
	for _, a := range extra {
		for _, reserved := range []string{"--addr", "--log-format"} {
			if a == reserved || strings.HasPrefix(a, reserved+"=") {
				return fmt.Errorf("--serve-arg %q: the soak sets %s itself", a, reserved)
			}
		}
	}
	return nil
}

// startChild starts bin serve on 127.0.0.1:0 and waits until it serves and
// /readyz answers 200. On any error the process is already stopped.
func startChild(ctx context.Context, bin string, extra []string, client *http.Client) (*soakChild, error) {
	cmd := exec.Command(bin, append(childServeArgs(), extra...)...)
	cmd.SysProcAttr = childSysProcAttr()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("soak: stderr pipe: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("soak: start %s: %w", bin, err)
	}
	c := &soakChild{cmd: cmd, logs: newLogRing(), done: make(chan struct{})}
	addrCh := make(chan string, 1)
	go c.drainLogs(stderr, addrCh)
	if err := c.awaitReady(ctx, addrCh, client); err != nil {
		_ = c.stop()
		return nil, err
	}
	return c, nil
}

// drainLogs reads the child's stderr until it closes, hands the bound
// address from the "serving" record to addrCh, then waits for the process
// (exec requires the pipe read to completion before Wait).
func (c *soakChild) drainLogs(r io.Reader, addrCh chan<- string) {
	defer close(c.done)
	br := bufio.NewReaderSize(r, 64<<10)
	found := false
	for {
		line, err := readLine(br)
		if len(line) > 0 {
			c.logs.add(line)
			if !found {
				if addr := servingAddr(line); addr != "" {
					found = true
					addrCh <- addr
				}
			}
		}
		if err != nil {
			break
		}
	}
	c.waitErr = c.cmd.Wait()
}

// maxLogLine is how much of one log line is kept; a panic's record carries
// a whole stack.
const maxLogLine = 512

// readLine returns the next line, cut to maxLogLine bytes; the rest of a
// longer line is read and dropped, so a long line never stalls the pipe.
func readLine(br *bufio.Reader) (string, error) {
	var b []byte
	for {
		frag, isPrefix, err := br.ReadLine()
		if room := maxLogLine - len(b); room > 0 {
			b = append(b, frag[:min(len(frag), room)]...)
		}
		if err != nil || !isPrefix {
			return string(b), err
		}
	}
}

// servingAddr is the addr of a JSON {"msg":"serving","addr":...} record, or "".
func servingAddr(line string) string {
	var rec struct{ Msg, Addr string }
	if json.Unmarshal([]byte(line), &rec) != nil || rec.Msg != "serving" {
		return ""
	}
	return rec.Addr
}

// awaitReady waits for the bound address, checks it is 127.0.0.1, then
// polls /readyz until 200.
func (c *soakChild) awaitReady(ctx context.Context, addrCh <-chan string, client *http.Client) error {
	deadline := time.NewTimer(childStartTimeout)
	defer deadline.Stop()
	select {
	case c.addr = <-addrCh:
	case <-c.done:
		return fmt.Errorf("soak: kvtwin serve exited before serving (%v): %s", c.waitErr, c.logs.tail(5))
	case <-deadline.C:
		return fmt.Errorf("soak: no \"serving\" log record within %s: %s", childStartTimeout, c.logs.tail(5))
	case <-ctx.Done():
		return fmt.Errorf("soak: interrupted while starting kvtwin serve: %w", ctx.Err())
	}
	host, _, err := net.SplitHostPort(c.addr)
	if err != nil || host != "127.0.0.1" {
		return fmt.Errorf("soak: kvtwin serve bound %q, want 127.0.0.1:port", c.addr)
	}
	return c.pollReady(ctx, client, deadline.C)
}

// pollReady asks /readyz every 50 ms until 200, the child exits, or the deadline.
func (c *soakChild) pollReady(ctx context.Context, client *http.Client, deadline <-chan time.Time) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if status, err := getStatus(ctx, client, c.base()+"/readyz"); err == nil && status == http.StatusOK {
			return nil
		}
		select {
		case <-c.done:
			return fmt.Errorf("soak: kvtwin serve exited before /readyz answered (%v): %s", c.waitErr, c.logs.tail(5))
		case <-deadline:
			return fmt.Errorf("soak: /readyz not 200 within %s", childStartTimeout)
		case <-ctx.Done():
			return fmt.Errorf("soak: interrupted while waiting for /readyz: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// getStatus GETs url and returns its status, the body read and discarded.
func getStatus(ctx context.Context, client *http.Client, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, fmt.Errorf("GET %s: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

func (c *soakChild) base() string { return "http://" + c.addr }

func (c *soakChild) pid() int { return c.cmd.Process.Pid }

// exited reports whether the process is gone, without blocking.
func (c *soakChild) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop ends the child, once: SIGTERM, childStopGrace to drain, then
// SIGKILL. It returns nil only for a clean exit (status 0) after SIGTERM.
func (c *soakChild) stop() error {
	c.stopOnce.Do(func() {
		c.stopping.Store(true)
		if c.exited() {
			c.stopErr = fmt.Errorf("had already exited (%v)", c.waitErr)
			return
		}
		if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			_ = c.cmd.Process.Kill() // no SIGTERM on this platform, or already exiting
		}
		grace := time.NewTimer(childStopGrace)
		defer grace.Stop()
		select {
		case <-c.done:
			if c.waitErr != nil {
				c.stopErr = fmt.Errorf("exited with %w after SIGTERM: %s", c.waitErr, c.logs.tail(3))
			}
		case <-grace.C:
			_ = c.cmd.Process.Kill()
			<-c.done
			c.stopErr = fmt.Errorf("did not exit within %s of SIGTERM; killed", childStopGrace)
		}
	})
	return c.stopErr
}

// logRing keeps the child's last log lines and its first crash lines;
// safe for concurrent use.
type logRing struct {
	mu    sync.Mutex
	lines []string
	next  int
	crash []string
}

// logRingSize is how many recent lines a crash report shows.
const logRingSize = 40

func newLogRing() *logRing { return &logRing{lines: make([]string, 0, logRingSize)} }

func (r *logRing) add(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.crash) < 3 && isCrashLine(line) {
		r.crash = append(r.crash, line)
	}
	if len(r.lines) < logRingSize {
		r.lines = append(r.lines, line)
		return
	}
	r.lines[r.next] = line
	r.next = (r.next + 1) % logRingSize
}

// isCrashLine matches what the Go runtime prints when a process dies:
// "panic: ...", "fatal error: ...", "runtime: goroutine stack exceeds ..."
// and, for a fatal signal, "SIGSEGV: segmentation violation".
func isCrashLine(line string) bool {
	for _, p := range []string{"panic: ", "fatal error: ", "runtime: "} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	name, _, ok := strings.Cut(line, ": ")
	return ok && len(name) > 3 && strings.HasPrefix(name, "SIG") && strings.ToUpper(name) == name
}

// tail is the last n lines, oldest first, joined with " | ".
func (r *logRing) tail(n int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ordered := append(append([]string(nil), r.lines[r.next:]...), r.lines[:r.next]...)
	if len(ordered) > n {
		ordered = ordered[len(ordered)-n:]
	}
	if len(ordered) == 0 {
		return "(no log output)"
	}
	return strings.Join(ordered, " | ")
}

// crashLines are the first runtime crash lines seen, if any.
func (r *logRing) crashLines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.crash...)
}
