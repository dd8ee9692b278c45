package remote

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
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

// drainGrace is how long, after an adapter process has exited, kvtwin
// keeps reading its stdout and stderr: a process it started (a shell's
// child) may hold them open, hung, and must not hold the audit with them.
const drainGrace = 500 * time.Millisecond

// execImpl is an adapter run as a subprocess speaking JSON Lines
// (docs/adapters.md "exec:"). One process serves every call, pipelined; a
// protocol violation, a timeout or an exit fails every call in flight and
// the next call starts a new process.
type execImpl struct {
	target string
	argv   []string
	o      Options
	ids    atomic.Uint64
	brk    *breaker
	log    *runLog
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
	e := &execImpl{target: target, argv: argv, o: o, brk: newBreaker(o.UnavailableAfter), log: newRunLog(target, o.Stderr)}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cur, err = e.start(); err != nil {
		return nil, fmt.Errorf("implementation %q: %w", target, err)
	}
	return e, nil
}

func (e *execImpl) Name() string { return e.target }

// Unavailable implements Impl.
func (e *execImpl) Unavailable(op string) (string, bool) { return e.brk.unavailable(op) }

// Log implements Impl.
func (e *execImpl) Log() Log { return e.log.snapshot() }

// Ops implements Impl: the kvtwin.ops call.
func (e *execImpl) Ops() ([]Listed, error) {
	res, err := e.Run("kvtwin.ops", []byte("{}"))
	if err != nil {
		return nil, err
	}
	if res.Rejected {
		return nil, &TransportError{Op: "kvtwin.ops", Kind: KindMalformed, Reason: "answered with an error object: " + quote(res.Bytes)}
	}
	return parseOpList(res.Bytes)
}

// Run implements fixtures.Runner.
func (e *execImpl) Run(op string, in []byte) (fixtures.Result, error) {
	if err := e.brk.refuse(op); err != nil {
		return fixtures.Result{}, err
	}
	res, event, err := e.call(op, in)
	e.brk.record(op, event, err)
	return res, err
}

// call sends one request and waits for its reply; event names the process
// (the failure) a transport error came from, for the breaker.
func (e *execImpl) call(op string, in []byte) (fixtures.Result, uint64, error) {
	id := e.ids.Add(1)
	ch := make(chan reply, 1)
	p, err := e.register(id, op, ch)
	if err != nil {
		// a failed start is an event of its own: no process carries it
		return fixtures.Result{}, 1<<63 | id, transportError(op, err)
	}
	event := uint64(p.run)
	req, err := json.Marshal(struct {
		ID uint64          `json:"id"`
		Op string          `json:"op"`
		In json.RawMessage `json:"in"`
	}{id, op, in})
	if err != nil {
		p.unregister(id)
		return fixtures.Result{}, event, fmt.Errorf("encode request: %w", err)
	}
	if err := p.write(append(req, '\n')); err != nil {
		p.fail(fail(KindExited, "write request: %v", err))
	}
	timer := time.NewTimer(e.o.Timeout)
	defer timer.Stop()
	var r reply
	select {
	case r = <-ch:
	case <-timer.C:
		p.fail(fail(KindTimeout, "no reply within %s to call %d (%s); adapter killed", e.o.Timeout, id, op))
		r = <-ch
	}
	if r.fail != nil {
		return fixtures.Result{}, event, transportError(op, r.fail)
	}
	res, err := answer(op, r.out, r.errObj)
	return res, event, err
}

// register files call id with the running process, starting a new one
// when the last failed (twice at most, so a process that dies between the
// two steps costs no call).
func (e *execImpl) register(id uint64, op string, ch chan reply) (*proc, error) {
	var err error
	for range 2 {
		var p *proc
		if p, err = e.proc(); err != nil {
			return nil, err
		}
		if err = p.register(id, op, ch); err == nil {
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
		return nil, fail(KindExited, "adapter closed")
	}
	if e.cur == nil || e.cur.failed() {
		p, err := e.start()
		if err != nil {
			return nil, fail(KindExited, "restart: %v", err)
		}
		e.cur = p
	}
	return e.cur, nil
}

// Close implements Impl: stdin closes, the adapter has closeGrace to exit,
// then it is killed; Close returns when every goroutine has ended.
func (e *execImpl) Close() error {
	e.mu.Lock()
	already := e.closed
	e.closed = true
	p := e.cur
	e.mu.Unlock()
	if p != nil && !already {
		p.askToExit()
		select {
		case <-p.done:
		case <-time.After(closeGrace):
			p.fail(fail(KindTimeout, "adapter did not exit within %s of stdin closing; killed", closeGrace))
		}
	}
	e.wg.Wait()
	if !already {
		e.log.closed()
	}
	return nil
}

// reply is what a call got: an output, an error object, or a failure.
type reply struct {
	out, errObj json.RawMessage
	fail        *failure
}

// pendingCall is a call in flight: where its reply goes, and its op.
type pendingCall struct {
	ch chan reply
	op string
}

// proc is one run of the adapter process.
type proc struct {
	log     *runLog
	run     int
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	wmu     sync.Mutex
	w       *bufio.Writer
	stderr  *ring
	started time.Time
	done    chan struct{} // closed once the process is reaped and recorded

	mu           sync.Mutex
	pending      map[uint64]pendingCall
	answered     recentCalls // the calls answered last, to tell a second reply from a wrong id
	dead         *failure
	closing      bool // Close asked the process to exit
	unattributed bool // it failed while no call was in flight
}

// start runs a new adapter process. Its stdout and stderr are pipes this
// side owns, so a process the adapter started cannot keep them (and the
// goroutines reading them) open past drainGrace after the adapter exits.
func (e *execImpl) start() (*proc, error) {
	cmd := exec.Command(e.argv[0], e.argv[1:]...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("start %s: %w", e.argv[0], err)
	}
	p := &proc{log: e.log, run: e.log.started(), cmd: cmd, stdin: stdin, w: bufio.NewWriter(stdin), stderr: newRing(RingBytes),
		started: time.Now(), done: make(chan struct{}), pending: map[uint64]pendingCall{}}
	var readers sync.WaitGroup
	readers.Add(2)
	e.wg.Add(3)
	go func() {
		defer e.wg.Done()
		defer readers.Done()
		_, _ = io.Copy(p.stderr, errR)
	}()
	go func() {
		defer e.wg.Done()
		defer readers.Done()
		if f := p.readReplies(outR, e.o.MaxReplyBytes); f != nil {
			p.fail(f)
		}
	}()
	go func() {
		defer e.wg.Done()
		e.reap(p, &readers, outR, errR)
	}()
	return p, nil
}

// reap waits for p to exit, drains its pipes for at most drainGrace, fails
// every call still in flight, and records the run.
func (e *execImpl) reap(p *proc, readers *sync.WaitGroup, outR, errR *os.File) {
	werr := p.cmd.Wait()
	drained := make(chan struct{})
	go func() {
		readers.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(drainGrace):
	}
	outR.Close() // ends a reader still blocked on a pipe a child holds
	errR.Close()
	<-drained
	_ = p.stdin.Close()
	kept, total, lines := p.stderr.snapshot()
	p.fail(fail(KindExited, "adapter exited (%s); last stderr line: %q", exitStatus(werr), lastLine(kept)))
	p.mu.Lock()
	r := Run{Run: p.run, PID: p.cmd.Process.Pid, Millis: time.Since(p.started).Milliseconds(),
		StderrBytes: total, StderrLines: lines, Stderr: string(kept), Unattributed: p.unattributed}
	switch {
	case p.closing && p.dead.kind == KindExited:
		r.Ended = fmt.Sprintf("exited (%s) after stdin closed", exitStatus(werr))
	case p.dead.kind == KindExited:
		r.Ended, r.Kind = p.dead.reason, KindExited
	default:
		r.Ended, r.Kind = "killed: "+p.dead.Error(), p.dead.kind
	}
	p.mu.Unlock()
	e.log.ended(r, time.Since(p.started))
	close(p.done)
}

func exitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// readReplies delivers reply lines to their calls until stdout ends or the
// adapter breaks the protocol, which it returns as the failure.
func (p *proc) readReplies(stdout io.Reader, maxBytes int64) *failure {
	br := bufio.NewReaderSize(stdout, 64<<10)
	for {
		line, f := readLine(br, maxBytes)
		if f != nil {
			return f
		}
		if line == nil {
			return nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		id, r, f := parseReply(line)
		if f != nil {
			return f
		}
		delivered, answeredOp := p.deliver(id, r)
		switch {
		case delivered:
		case answeredOp != "":
			// the call has its answer and the stream is still whole: the
			// second reply is the adapter's failure, no call's
			p.log.outside(fmt.Sprintf("process %d: protocol: second reply to call %d (%s): %s", p.run, id, answeredOp, quote(line)))
		default:
			return fail(KindProtocol, "reply to id %d, which is not in flight (a wrong id, or a reply to a call of an earlier process): %s", id, quote(line))
		}
	}
}

// readLine reads one '\n'-terminated line of at most maxBytes, checking
// the bound before each chunk is kept and growing the line by doubling up
// to the bound, never past it, so a longer line costs at most 2 ×
// maxBytes of allocation (the line and the buffers it outgrew); nil, nil
// at the end of stdout.
func readLine(br *bufio.Reader, maxBytes int64) ([]byte, *failure) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		need := int64(len(line)) + int64(len(chunk))
		if need > maxBytes+1 {
			return nil, fail(KindTooLarge, "reply line exceeds %d bytes (--max-reply-bytes)", maxBytes)
		}
		if need > int64(cap(line)) {
			grown := make([]byte, len(line), min(max(2*int64(cap(line)), need), maxBytes+1))
			copy(grown, line)
			line = grown
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case len(line) > 0:
			return nil, fail(KindExited, "stdout ended mid-reply, after %d bytes without a newline: %s", len(line), quote(line))
		case err == io.EOF || errors.Is(err, os.ErrClosed):
			return nil, nil
		default:
			return nil, fail(KindExited, "read stdout: %v", err)
		}
	}
}

// parseReply decodes {"id":N,"out":…} or {"id":N,"err":{…}}. A line that
// names no call (not JSON, no id) is returned as the stream's failure;
// one that names its call but is otherwise malformed (invalid UTF-8,
// neither or both of out and err) fails that call alone.
func parseReply(line []byte) (uint64, reply, *failure) {
	var m struct {
		ID  *json.Number    `json:"id"`
		Out json.RawMessage `json:"out"`
		Err json.RawMessage `json:"err"`
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		if f := checkJSON(line, "reply line"); f != nil {
			return 0, reply{}, f
		}
		return 0, reply{}, fail(KindMalformed, "reply line is not a JSON object (%v): %s", err, quote(line))
	}
	if m.ID == nil {
		return 0, reply{}, fail(KindMalformed, "reply line has no id: %s", quote(line))
	}
	id, err := strconv.ParseUint(m.ID.String(), 10, 64)
	if err != nil || id == 0 {
		return 0, reply{}, fail(KindMalformed, "reply id %s is not a positive integer: %s", m.ID, quote(line))
	}
	if f := checkJSON(line, "reply line"); f != nil {
		return id, reply{fail: f}, nil
	}
	hasOut := m.Out != nil && !bytes.Equal(m.Out, []byte("null"))
	hasErr := m.Err != nil && !bytes.Equal(m.Err, []byte("null"))
	switch {
	case hasErr && hasOut:
		return id, reply{fail: fail(KindMalformed, "reply %d has both out and err", id)}, nil
	case hasErr:
		return id, reply{errObj: m.Err}, nil
	case m.Out == nil:
		return id, reply{fail: fail(KindMalformed, "reply %d has neither out nor err", id)}, nil
	}
	return id, reply{out: m.Out}, nil
}

func (p *proc) register(id uint64, op string, ch chan reply) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead != nil {
		return p.dead
	}
	p.pending[id] = pendingCall{ch: ch, op: op}
	return nil
}

func (p *proc) unregister(id uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.pending, id)
}

// deliver hands r to call id; when id is not in flight, answeredOp is the
// op of call id if this process answered it lately (r is a second reply).
func (p *proc) deliver(id uint64, r reply) (delivered bool, answeredOp string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.pending[id]
	if !ok {
		return false, p.answered.op(id)
	}
	delete(p.pending, id)
	p.answered.add(id, c.op)
	c.ch <- r
	return true, ""
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

// askToExit closes stdin, the protocol's request to exit (Close).
func (p *proc) askToExit() {
	p.mu.Lock()
	p.closing = true
	p.mu.Unlock()
	_ = p.stdin.Close()
}

// fail marks the process failed for f (the first failure wins), fails
// every call in flight with it, and kills the process. A first failure
// with no call in flight, unless Close asked for the exit, is unattributed:
// no case will carry it.
func (p *proc) fail(f *failure) {
	p.mu.Lock()
	if p.dead == nil {
		p.dead = f
		p.unattributed = len(p.pending) == 0 && !p.closing
	}
	for id, c := range p.pending {
		c.ch <- reply{fail: p.dead}
		delete(p.pending, id)
	}
	p.mu.Unlock()
	_ = p.cmd.Process.Kill()
}

// answeredWindow is how many answered calls a process remembers: a second
// reply to one of them is told from a reply to a wrong id.
const answeredWindow = 1024

// recentCalls remembers the last answeredWindow answered calls' ids and
// ops (the caller locks).
type recentCalls struct {
	ids  [answeredWindow]uint64
	ops  [answeredWindow]string
	next int
}

func (r *recentCalls) add(id uint64, op string) {
	r.ids[r.next], r.ops[r.next] = id, op
	r.next = (r.next + 1) % answeredWindow
}

// op is the op of answered call id, or "" when it is not remembered.
func (r *recentCalls) op(id uint64) string {
	for i, v := range r.ids {
		if v == id && id != 0 {
			return r.ops[i]
		}
	}
	return ""
}
