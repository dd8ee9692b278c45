package zmq

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"
)

// go-zeromq reads a frame by allocating the length its header declares
// (make([]byte, size) in Conn.read, up to 2^63-1) in a goroutine of its own,
// so one 9-byte header from a peer can panic the process or exhaust its
// memory, and it has no option like libzmq's ZMQ_MAXMSGSIZE. The subscriber
// therefore dials through a transport of its own that watches the ZMTP
// stream as go-zeromq reads it and fails the read that would deliver a
// header past the bounds, before go-zeromq sees the size. The same
// transport bounds the handshake: go-zeromq reads the peer's greeting with
// no deadline, so a peer that accepts and stays silent would hold Dial
// forever. Past the handshake, the transport also reserves every frame's
// bytes in the subscriber's byte budget (budget.go) before go-zeromq sees
// the frame's size.

// zmtpGreetingLen is the ZMTP 3.x greeting: signature, version, mechanism,
// as-server, filler.
const zmtpGreetingLen = 64

// ZMTP frame flags.
const (
	flagMore    = 0x01
	flagLong    = 0x02
	flagCommand = 0x04
)

// errFrameBounds is returned by a read that would deliver a frame header
// past the bounds; the connection is closed.
type frameBoundsError struct{ msg string }

func (e *frameBoundsError) Error() string   { return e.msg }
func (e *frameBoundsError) Timeout() bool   { return false }
func (e *frameBoundsError) Temporary() bool { return false }

var _ net.Error = (*frameBoundsError)(nil)

// guardedScheme registers (once per pair of bounds) a tcp transport whose
// connections enforce them, and returns its scheme name.
func guardedScheme(maxMessageBytes int64, maxFrames int) (string, error) {
	name := fmt.Sprintf("kvevsub-tcp-%d-%d", maxMessageBytes, maxFrames)
	guardMu.Lock()
	defer guardMu.Unlock()
	if guardRegistered[name] {
		return name, nil
	}
	t := guardTransport{tcp: transport.New("tcp"), maxBytes: uint64(maxMessageBytes), maxFrames: maxFrames}
	if err := zmq4.RegisterTransport(name, t); err != nil {
		return "", err
	}
	guardRegistered[name] = true
	return name, nil
}

var (
	guardMu         sync.Mutex
	guardRegistered = map[string]bool{}
)

// guardedEndpoint rewrites tcp://HOST:PORT to the guarded scheme.
func guardedEndpoint(scheme, ep string) string {
	return scheme + "://" + strings.TrimPrefix(ep, "tcp://")
}

type guardTransport struct {
	tcp       transport.Transport
	maxBytes  uint64
	maxFrames int
}

func (t guardTransport) Dial(ctx context.Context, d transport.Dialer, addr string) (net.Conn, error) {
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	handshake := 5 * time.Second
	if nd, ok := d.(*net.Dialer); ok && nd.Timeout > 0 {
		handshake = nd.Timeout
	}
	// The deadline covers the greeting and the peer's READY; the guard
	// clears it once READY is through.
	_ = c.SetDeadline(time.Now().Add(handshake))
	// ctx is the socket's: closing the socket (or cancelling the
	// subscriber) closes the connection even while go-zeromq is in the
	// handshake or the guard waits for budget, and a connection whose
	// handshake failed (go-zeromq drops it without closing it) is closed
	// when the socket is. The socket's ledger, if the subscriber gave it
	// one, travels in the same context.
	g := &guardConn{Conn: c, maxBytes: t.maxBytes, maxFrames: t.maxFrames, greeting: zmtpGreetingLen,
		ledger: ledgerOf(ctx), ctx: ctx}
	context.AfterFunc(ctx, func() { _ = c.Close() })
	return g, nil
}

func (t guardTransport) Listen(ctx context.Context, addr string) (net.Listener, error) {
	return t.tcp.Listen(ctx, addr)
}

func (t guardTransport) Addr(ep string) (string, error) { return t.tcp.Addr(ep) }

// guardConn follows the ZMTP framing of the bytes go-zeromq reads. go-zeromq
// reads with io.ReadFull into buffers of exactly the header or body length
// (no read-ahead), so the guard sees every size before go-zeromq can use it.
type guardConn struct {
	net.Conn
	maxBytes  uint64
	maxFrames int
	// ledger receives every frame's reservation once the handshake is
	// through (nil: no budget); ctx, the socket's, ends a wait for room
	// when the socket closes.
	ledger *ledger
	ctx    context.Context

	mu       sync.Mutex
	err      error
	greeting int    // greeting bytes still to come
	state    int    // stFlags, stSize, stBody
	flags    byte   // the current frame's flags
	sizeLeft int    // size bytes still to come
	size     uint64 // the size read so far
	body     uint64 // body bytes still to come
	frames   int    // frames of the current message
	msgBytes uint64 // bytes of the current message
	ready    bool   // the peer's first command (READY) is through
}

const (
	stFlags = iota
	stSize
	stBody
)

func (c *guardConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.Conn.Read(p)
	if verr := c.scan(p[:n]); verr != nil {
		c.err = verr
		_ = c.Conn.Close()
		return 0, verr
	}
	return n, err
}

// scan advances the framing state over b.
func (c *guardConn) scan(b []byte) error {
	for len(b) > 0 {
		if c.greeting > 0 {
			k := min(c.greeting, len(b))
			c.greeting -= k
			b = b[k:]
			continue
		}
		switch c.state {
		case stFlags:
			c.flags = b[0]
			b = b[1:]
			c.size = 0
			c.sizeLeft = 1
			if c.flags&flagLong != 0 {
				c.sizeLeft = 8
			}
			c.state = stSize
		case stSize:
			c.size = c.size<<8 | uint64(b[0])
			b = b[1:]
			if c.sizeLeft--; c.sizeLeft > 0 {
				continue
			}
			if err := c.frameHeader(); err != nil {
				return err
			}
			c.body = c.size
			c.state = stBody
			if c.body == 0 {
				c.frameDone()
			}
		case stBody:
			k := uint64(len(b))
			if k > c.body {
				k = c.body
			}
			c.body -= k
			b = b[k:]
			if c.body == 0 {
				c.frameDone()
			}
		}
	}
	return nil
}

// frameHeader checks a complete frame header against the bounds, then
// reserves the frame in the budget.
func (c *guardConn) frameHeader() error {
	if c.flags&flagCommand != 0 {
		if c.size > c.maxBytes {
			return &frameBoundsError{fmt.Sprintf("kvevsub: ZMTP command of %d bytes exceeds max message bytes (%d); connection closed", c.size, c.maxBytes)}
		}
		return c.reserve()
	}
	c.frames++
	c.msgBytes += c.size
	if c.frames > c.maxFrames {
		return &frameBoundsError{fmt.Sprintf("kvevsub: message of more than %d frames exceeds max frames; connection closed", c.maxFrames)}
	}
	if c.size > c.maxBytes || c.msgBytes > c.maxBytes {
		return &frameBoundsError{fmt.Sprintf("kvevsub: message of at least %d bytes exceeds max message bytes (%d); connection closed", max(c.size, c.msgBytes), c.maxBytes)}
	}
	return c.reserve()
}

// reserve takes the current frame's bytes from the budget, past the
// handshake: after the peer's READY every frame, command or data, reaches
// the subscriber through go-zeromq's receive queue, where the subscriber
// takes it back out (budget.go). The handshake's own commands never do.
func (c *guardConn) reserve() error {
	if c.ledger == nil || !c.ready {
		return nil
	}
	return c.ledger.reserve(c.ctx, int64(c.size))
}

// frameDone ends a frame whose body is through.
func (c *guardConn) frameDone() {
	c.state = stFlags
	if c.flags&flagCommand != 0 {
		if !c.ready {
			c.ready = true
			_ = c.Conn.SetDeadline(time.Time{})
		}
		return
	}
	if c.flags&flagMore == 0 {
		c.frames = 0
		c.msgBytes = 0
	}
}

// isFrameBounds reports whether err is the guard's: a frame past the
// bounds or past the budget.
func isFrameBounds(err error) bool {
	var fe *frameBoundsError
	return errors.As(err, &fe) || isBudget(err)
}
