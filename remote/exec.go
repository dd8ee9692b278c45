package remote

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"mvdan.cc/sh/v3/shell"

	"github.com/kvtwin/kvtwin/fixtures"
)

// closeGrace is how long Close lets an exec adapter exit after its stdin
// closes before killing it (docs/adapters.md "End").
const closeGrace = 2 * time.Second

// stderrTailBytes is how much of an exec adapter's stderr crash reports
// quote.
const stderrTailBytes = 2 << 10

// execImpl is an adapter run as a subprocess speaking JSON Lines
// (docs/adapters.md "exec:"). One process serves every call, pipelined; a
// protocol violation, a timeout or an exit fails every call in flight and
// the next call starts a new process.
type execImpl struct {
	target string
	argv   []string
	o      Options
	ids    atomic.Uint64
	tail   *tailBuffer
	wg     sync.WaitGroup // every process's goroutines

	mu     sync.Mutex
	cur    *proc
	closed bool
}

// ExecArgv splits an exec: target's command line like a shell would,
// without running one (no expansion: $VAR stays empty).
func ExecArgv(target string) ([]string, error) {
	cmdline, ok := strings.CutPrefix(target, "exec:")
	if !ok {
		return nil, fmt.Errorf("implementation %q is not exec:CMD ARGS…", target)
	}
	argv, err := shell.Fields(cmdline, func(string) string { return "" })
	if err != nil {
		return nil, fmt.Errorf("implementation %q: %w", target, err)
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("implementation %q: no command after \"exec:\"", target)
	}
	return argv, nil
}

func openExec(target string, o Options) (*execImpl, error) {
	argv, err := ExecArgv(target)
	if err != nil {
		return nil, err
	}
	e := &execImpl{target: target, argv: argv, o: o, tail: &tailBuffer{max: stderrTailBytes}}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cur, err = e.start(); err != nil {
		return nil, fmt.Errorf("implementation %q: %w", target, err)
	}
	return e, nil
}

func (e *execImpl) Name() string { return e.target }

// Ops implements Impl: the kvtwin.ops call.
func (e *execImpl) Ops() ([]string, error) {
	res, err := e.Run("kvtwin.ops", []byte("{}"))
	if err != nil {
		return nil, err
	}
	if res.Rejected {
		return nil, &TransportError{Op: "kvtwin.ops", Reason: fmt.Sprintf("answered with an error object: %.200s", res.Bytes)}
	}
	return parseOpList(res.Bytes)
}

// Run implements fixtures.Runner.
func (e *execImpl) Run(op string, in []byte) (fixtures.Result, error) {
	id := e.ids.Add(1)
	ch := make(chan reply, 1)
	p, err := e.register(id, ch)
	if err != nil {
		return fixtures.Result{}, &TransportError{Op: op, Reason: err.Error()}
	}
	req, err := json.Marshal(struct {
		ID uint64          `json:"id"`
		Op string          `json:"op"`
		In json.RawMessage `json:"in"`
	}{id, op, in})
	if err != nil {
		p.unregister(id)
		return fixtures.Result{}, fmt.Errorf("encode request: %w", err)
	}
	if err := p.write(append(req, '\n')); err != nil {
		p.fail(fmt.Errorf("write request: %w", err))
	}
	timer := time.NewTimer(e.o.Timeout)
	defer timer.Stop()
	var r reply
	select {
	case r = <-ch:
	case <-timer.C:
		p.fail(fmt.Errorf("no reply within %s to call %d (%s); adapter killed", e.o.Timeout, id, op))
		r = <-ch
	}
	return r.result(op)
}

// register files call id with the running process, starting a new one
// when the last failed (twice at most, so a process that dies between the
// two steps costs no call).
func (e *execImpl) register(id uint64, ch chan reply) (*proc, error) {
	var err error
	for range 2 {
		var p *proc
		if p, err = e.proc(); err != nil {
			return nil, err
		}
		if err = p.register(id, ch); err == nil {
			return p, nil
		}
	}
	return nil, err
}

// proc returns the running process, starting a new one when the last
// failed.
func (e *execImpl) proc() (*proc, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, errors.New("adapter closed")
	}
	if e.cur == nil || e.cur.failed() {
		p, err := e.start()
		if err != nil {
			return nil, err
		}
		e.cur = p
	}
	return e.cur, nil
}

// Close implements Impl: stdin closes, the adapter has closeGrace to exit,
// then it is killed; Close returns when every goroutine has ended.
func (e *execImpl) Close() error {
	e.mu.Lock()
	e.closed = true
	p := e.cur
	e.mu.Unlock()
	if p != nil {
		_ = p.stdin.Close()
		select {
		case <-p.done:
		case <-time.After(closeGrace):
			p.fail(errors.New("adapter did not exit after stdin closed; killed"))
		}
	}
	e.wg.Wait()
	return nil
}

// reply is what a call got: an output, an error object, or a failure.
type reply struct {
	out, errObj json.RawMessage
	fail        error
}

func (r reply) result(op string) (fixtures.Result, error) {
	switch {
	case r.fail != nil:
		return fixtures.Result{}, &TransportError{Op: op, Reason: r.fail.Error()}
	case r.errObj != nil:
		var obj struct {
			Code string `json:"code"`
		}
		if json.Unmarshal(r.errObj, &obj) == nil && obj.Code == "not_implemented" {
			return fixtures.Result{}, fmt.Errorf("%s: %w", op, ErrNotImplemented)
		}
		return fixtures.Result{Bytes: r.errObj, Rejected: true}, nil
	}
	return fixtures.Result{Bytes: r.out}, nil
}

// proc is one run of the adapter process.
type proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	wmu   sync.Mutex
	w     *bufio.Writer
	done  chan struct{} // closed once the process is reaped

	mu      sync.Mutex
	pending map[uint64]chan reply
	dead    error
}

func (e *execImpl) start() (*proc, error) {
	cmd := exec.Command(e.argv[0], e.argv[1:]...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", e.argv[0], err)
	}
	p := &proc{cmd: cmd, stdin: stdin, w: bufio.NewWriter(stdin), done: make(chan struct{}), pending: map[uint64]chan reply{}}
	var copied sync.WaitGroup
	copied.Add(1)
	e.wg.Add(2)
	go func() {
		defer e.wg.Done()
		defer copied.Done()
		e.copyStderr(stderr)
	}()
	go func() {
		defer e.wg.Done()
		reason := p.readReplies(stdout, e.o.MaxReplyBytes)
		if reason != nil {
			p.fail(reason)
			_ = cmd.Process.Kill()
		}
		copied.Wait()
		werr := cmd.Wait()
		p.fail(fmt.Errorf("adapter exited (%v); stderr: %s", exitStatus(werr), e.tail.String()))
		close(p.done)
	}()
	return p, nil
}

func exitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

func (e *execImpl) copyStderr(r io.Reader) {
	w := io.Writer(e.tail)
	if e.o.Stderr != nil {
		w = io.MultiWriter(e.tail, e.o.Stderr)
	}
	_, _ = io.Copy(w, r)
}

// readReplies delivers reply lines to their calls until stdout ends or the
// adapter breaks the protocol, which it returns as the reason.
func (p *proc) readReplies(stdout io.Reader, maxBytes int64) error {
	br := bufio.NewReaderSize(stdout, 64<<10)
	for {
		line, err := readLine(br, maxBytes)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		id, r, err := parseReply(line)
		if err != nil {
			return err
		}
		if !p.deliver(id, r) {
			return fmt.Errorf("reply to unknown id %d: %.200s", id, line)
		}
	}
}

// readLine reads one '\n'-terminated line of at most maxBytes; a longer
// line is an error after at most maxBytes have been held.
func readLine(br *bufio.Reader, maxBytes int64) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if int64(len(line))+int64(len(chunk)) > maxBytes+1 {
			return nil, fmt.Errorf("reply line exceeds %d bytes", maxBytes)
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(line) > 0:
			return nil, errors.New("adapter exited mid-reply (no newline)")
		default:
			return nil, err
		}
	}
}

// parseReply decodes {"id":N,"out":…} or {"id":N,"err":{…}}.
func parseReply(line []byte) (uint64, reply, error) {
	var m struct {
		ID  *json.Number    `json:"id"`
		Out json.RawMessage `json:"out"`
		Err json.RawMessage `json:"err"`
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return 0, reply{}, fmt.Errorf("reply is not a JSON object: %v: %.200s", err, line)
	}
	if m.ID == nil {
		return 0, reply{}, fmt.Errorf("reply has no id: %.200s", line)
	}
	id, err := strconv.ParseUint(m.ID.String(), 10, 64)
	if err != nil {
		return 0, reply{}, fmt.Errorf("reply id %s is not a positive integer", m.ID)
	}
	hasErr := m.Err != nil && !bytes.Equal(m.Err, []byte("null"))
	switch {
	case hasErr && m.Out != nil && !bytes.Equal(m.Out, []byte("null")):
		return 0, reply{}, fmt.Errorf("reply %d has both out and err", id)
	case hasErr:
		return id, reply{errObj: m.Err}, nil
	case m.Out == nil:
		return 0, reply{}, fmt.Errorf("reply %d has neither out nor err", id)
	}
	return id, reply{out: m.Out}, nil
}

func (p *proc) register(id uint64, ch chan reply) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead != nil {
		return p.dead
	}
	p.pending[id] = ch
	return nil
}

func (p *proc) unregister(id uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.pending, id)
}

func (p *proc) deliver(id uint64, r reply) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch, ok := p.pending[id]
	if ok {
		delete(p.pending, id)
		ch <- r
	}
	return ok
}

func (p *proc) write(line []byte) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if _, err := p.w.Write(line); err != nil {
		return err
	}
	return p.w.Flush()
}

func (p *proc) failed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dead != nil
}

// fail marks the process failed for reason (the first reason wins), fails
// every call in flight with it, and kills the process.
func (p *proc) fail(reason error) {
	p.mu.Lock()
	if p.dead == nil {
		p.dead = reason
	}
	for id, ch := range p.pending {
		ch <- reply{fail: p.dead}
		delete(p.pending, id)
	}
	p.mu.Unlock()
	_ = p.cmd.Process.Kill()
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.b) == 0 {
		return "(empty)"
	}
	return string(bytes.TrimSpace(t.b))
}
