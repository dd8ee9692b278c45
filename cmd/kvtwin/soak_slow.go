package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// This file is the slow hostile clients: raw TCP connections to the child,
// so the soak controls every byte and its pace. A slow client lives until
// the server answers or cuts it off, or the run ends.

// slowBodyBytes is the Content-Length a slow writer declares: at a few bytes
// a second it never finishes, so only the server's timeouts can end it.
const slowBodyBytes = 1 << 20

// slowReadBuffer is the slow reader's socket receive buffer (SO_RCVBUF): a
// small window makes the server's writes block, as a far, slow client would.
const slowReadBuffer = 4 << 10

// slowReadOp and slowReadBody ask for a large output (about 8 MB) from a
// tiny input: larger than a loopback socket's largest send buffer (Linux
// tcp_wmem, 4 MiB by default), so the server's write blocks on the reader.
// Slow readers alternate it with GET /v1/ops.
const (
	slowReadOp   = "hicache.owner_counts"
	slowReadBody = `{"cp_size":4,"page_size":1,"token_depth":3,"tokens":4000000}`
)

// spawnSlow keeps up to cfg.slowClients clients of each enabled slow kind
// alive, starting at most one of each kind per cfg.slowInterval, until ctx
// ends; it returns once every client it started has ended. Each kind has
// its own slots, so readers the server never cuts off do not crowd out
// writers it does.
func (r *soakRun) spawnSlow(ctx context.Context) {
	kinds := r.cfg.hostile.kinds(true)
	if len(kinds) == 0 || r.cfg.slowClients == 0 {
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	var slots [numHostileKinds]chan struct{}
	var seq [numHostileKinds]int // each kind rotates over its own routes
	for _, k := range kinds {
		slots[k] = make(chan struct{}, r.cfg.slowClients)
	}
	tick := time.NewTicker(r.cfg.slowInterval)
	defer tick.Stop()
	maxTicks := int(r.cfg.duration/r.cfg.slowInterval) + 1
	for range maxTicks {
		for _, k := range kinds {
			select {
			case slots[k] <- struct{}{}:
				n := seq[k]
				seq[k]++
				wg.Go(func() {
					defer func() { <-slots[k] }()
					if o, ok := r.slowClient(ctx, k, n); ok {
						r.stats.record(o)
					}
				})
			default: // this kind's clients are all still alive
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// slowClient runs one slow client of kind; seq, its number among the
// clients of that kind, picks its route. ok is false when the run ended
// before it connected.
func (r *soakRun) slowClient(ctx context.Context, kind hostileKind, seq int) (soakOutcome, bool) {
	o := soakOutcome{class: classSlow, kind: kind}
	start := time.Now()
	d := net.Dialer{Timeout: 5 * time.Second}
	if kind == hostileSlowRead {
		d.Control = slowReadControl
	}
	conn, err := d.DialContext(ctx, "tcp", r.child.addr)
	if err != nil {
		o.transport = true
		o.note = fmt.Sprintf("dial at %s of the run, after %s: %v", time.Since(r.start).Round(time.Millisecond), time.Since(start).Round(time.Millisecond), err)
		return o, !runEnded(ctx)
	}
	// Closing the connection when the run ends unblocks every read and write below.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	defer conn.Close()
	var what string
	if kind == hostileSlowWrite {
		what = r.slowWritePath(seq)
		r.slowWrite(ctx, conn, what, &o)
	} else {
		what = r.slowRead(ctx, conn, seq, &o)
	}
	o.latency = time.Since(start)
	if o.status >= 500 {
		o.note = fmt.Sprintf("%s: status %d after %s", what, o.status, o.latency.Round(time.Millisecond))
	}
	return o, true
}

// slowWritePath rotates the slow writer over the three body-reading routes.
func (r *soakRun) slowWritePath(seq int) string {
	switch seq % 3 {
	case 0:
		return "/v1/ops/" + r.load.ops[0].name
	case 1:
		return preflightPath
	}
	return "/v1/prefix/" + r.load.pools[0].name + "/insert"
}

// headReader reads a response head in its own goroutine; res is valid
// once done is closed.
type headReader struct {
	done chan struct{}
	res  int // the status, 0 when the connection ended first
}

func startHeadReader(conn net.Conn) *headReader {
	h := &headReader{done: make(chan struct{})}
	go func() {
		defer close(h.done)
		h.res = readHead(bufio.NewReader(conn))
	}()
	return h
}

// slowWrite sends the head, then the body a byte at a time at
// cfg.slowWriteRate, while a reader waits for whatever the server answers.
func (r *soakRun) slowWrite(ctx context.Context, conn net.Conn, path string, o *soakOutcome) {
	h := startHeadReader(conn)
	defer func() { conn.Close(); <-h.done }() // the reader ends with its owner
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
		path, r.child.addr, slowBodyBytes)
	r.trickle(ctx, conn, head, h.done)
	// A failed write may be the server answering early and closing: give
	// the answer a second to arrive.
	wait := time.NewTimer(time.Second)
	defer wait.Stop()
	select {
	case <-h.done:
	case <-wait.C:
	case <-ctx.Done():
	}
	select {
	case <-h.done:
		o.status = h.res
	default:
	}
	if o.status == 0 {
		o.fate = r.cutOrOpen(ctx)
	}
}

// trickle writes head, then the body {"pad":"aaa... one byte per tick,
// until the server answers, a write fails or ctx ends.
func (r *soakRun) trickle(ctx context.Context, conn net.Conn, head string, answered <-chan struct{}) {
	if _, err := io.WriteString(conn, head); err != nil {
		return
	}
	const open = `{"pad":"`
	tick := time.NewTicker(time.Second / time.Duration(r.cfg.slowWriteRate))
	defer tick.Stop()
	for i := range slowBodyBytes {
		select {
		case <-answered:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		c := byte('a')
		if i < len(open) {
			c = open[i]
		}
		if _, err := conn.Write([]byte{c}); err != nil {
			return
		}
	}
}

// readHead reads a response's status line and headers; status 0 when the
// connection ended first.
func readHead(br *bufio.Reader) int {
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0
	}
	return resp.StatusCode
}

// slowRead asks for a large response and reads it at cfg.slowReadRate:
// first a large op output, whose handler holds a compute slot while its
// write blocks, then GET /v1/ops, alternately.
// It returns the route it asked.
func (r *soakRun) slowRead(ctx context.Context, conn net.Conn, seq int, o *soakOutcome) string {
	what, req := "GET /v1/ops", fmt.Sprintf("GET /v1/ops HTTP/1.1\r\nHost: %s\r\n\r\n", r.child.addr)
	if seq%2 == 0 && r.load.hasOp(slowReadOp) {
		what = "POST /v1/ops/" + slowReadOp
		req = fmt.Sprintf("POST /v1/ops/%s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			slowReadOp, r.child.addr, len(slowReadBody), slowReadBody)
	}
	if _, err := io.WriteString(conn, req); err != nil {
		o.fate = r.cutOrOpen(ctx)
		return what
	}
	br := bufio.NewReaderSize(&throttledReader{ctx: ctx, r: conn, rate: r.cfg.slowReadRate}, 512)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		o.fate = r.cutOrOpen(ctx)
		return what
	}
	o.status = resp.StatusCode
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		o.fate = r.cutOrOpen(ctx)
	}
	return what
}

// cutOrOpen is the fate of a connection that failed: ours at the end of the
// run, else the server's doing.
func (r *soakRun) cutOrOpen(ctx context.Context) slowFate {
	if runEnded(ctx) {
		return fateOpenAtEnd
	}
	return fateCut
}

// hasOp reports whether the server lists op.
func (l *soakLoad) hasOp(op string) bool {
	for _, o := range l.ops {
		if o.name == op {
			return true
		}
	}
	return false
}

// throttledReader reads at about rate bytes a second, in quarter-second
// slices, and stops when ctx ends.
type throttledReader struct {
	ctx  context.Context
	r    io.Reader
	rate int
}

func (t *throttledReader) Read(p []byte) (int, error) {
	chunk := max(t.rate/4, 1)
	if len(p) > chunk {
		p = p[:chunk]
	}
	n, err := t.r.Read(p)
	pause := time.NewTimer(time.Duration(n) * time.Second / time.Duration(t.rate))
	defer pause.Stop()
	select {
	case <-pause.C:
	case <-t.ctx.Done():
		if err == nil {
			err = fmt.Errorf("slow read: %w", t.ctx.Err())
		}
	}
	return n, err
}
