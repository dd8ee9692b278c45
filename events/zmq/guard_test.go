package zmq

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// zmtpGreeting is a ZMTP 3.0 NULL greeting.
func zmtpGreeting(asServer bool) []byte {
	g := make([]byte, zmtpGreetingLen)
	g[0], g[9], g[10] = 0xff, 0x7f, 3
	copy(g[12:], "NULL")
	if asServer {
		g[32] = 1
	}
	return g
}

// zmtpReady is a READY command frame for socket type typ.
func zmtpReady(typ string) []byte {
	body := append([]byte{5}, "READY"...)
	body = append(body, byte(len("Socket-Type")))
	body = append(body, "Socket-Type"...)
	body = binary.BigEndian.AppendUint32(body, uint32(len(typ)))
	body = append(body, typ...)
	return append([]byte{flagCommand, byte(len(body))}, body...)
}

func frame(flags byte, body []byte) []byte {
	if len(body) > 255 {
		h := binary.BigEndian.AppendUint64([]byte{flags | flagLong}, uint64(len(body)))
		return append(h, body...)
	}
	return append([]byte{flags, byte(len(body))}, body...)
}

// scanChunks feeds stream to a fresh guard in random chunks.
func scanChunks(rng *rand.Rand, maxBytes uint64, maxFrames int, stream []byte) error {
	g := &guardConn{Conn: nopConn{}, maxBytes: maxBytes, maxFrames: maxFrames, greeting: zmtpGreetingLen}
	for len(stream) > 0 {
		k := 1 + rng.IntN(min(len(stream), 40))
		if err := g.scan(stream[:k]); err != nil {
			return err
		}
		stream = stream[k:]
	}
	return nil
}

type nopConn struct{ net.Conn }

func (nopConn) SetDeadline(time.Time) error { return nil }

func TestGuardScan(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	rng := rand.New(rand.NewPCG(1, 2))
	base := slices.Concat(zmtpGreeting(true), zmtpReady("PUB"))
	msg := func(sizes ...int) []byte {
		var b []byte
		for i, n := range sizes {
			var fl byte
			if i < len(sizes)-1 {
				fl = flagMore
			}
			b = append(b, frame(fl, make([]byte, n))...)
		}
		return b
	}
	cases := []struct {
		name   string
		stream []byte
		want   string // "" for no error
	}{
		{"three frames", slices.Concat(base, msg(3, 8, 300), msg(0, 8, 1000)), ""},
		{"frame at the bound", slices.Concat(base, msg(1, 8, 2000)), ""},
		{"long frame past the bound", slices.Concat(base, msg(1, 8, 2001)), "exceeds max message bytes"},
		{"message past the bound", slices.Concat(base, msg(1000, 8, 1002)), "exceeds max message bytes"},
		{"frames at the bound", slices.Concat(base, msg(0, 0, 0, 0)), ""},
		{"too many frames", slices.Concat(base, msg(0, 0, 0, 0, 0)), "max frames"},
		{"huge declared size", slices.Concat(base, binary.BigEndian.AppendUint64([]byte{flagLong}, 1<<62)), "exceeds max message bytes"},
		{"huge command", slices.Concat(base, binary.BigEndian.AppendUint64([]byte{flagCommand | flagLong}, 1<<40)), "ZMTP command"},
		{"counts reset per message", slices.Concat(base, msg(0, 0, 0, 0), msg(0, 0, 0, 0), msg(2000)), ""},
	}
	for _, c := range cases {
		for range 20 {
			err := scanChunks(rng, 2009, 4, c.stream)
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("%s: %v, want %q", c.name, err, c.want)
			}
		}
	}
}

// zmtpServer accepts connections and runs handle on each until stop.
func zmtpServer(t *testing.T, handle func(c net.Conn)) (ep string, stop func()) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { handle(c) })
		}
	})
	return fmt.Sprintf("tcp://%s", l.Addr()), func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}
}

// handshake plays a PUB's side of the ZMTP handshake.
func handshake(c net.Conn) error {
	if _, err := c.Write(zmtpGreeting(true)); err != nil {
		return err
	}
	if _, err := io.ReadFull(c, make([]byte, zmtpGreetingLen)); err != nil {
		return err
	}
	if _, err := c.Write(zmtpReady("PUB")); err != nil {
		return err
	}
	var h [2]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		return err
	}
	_, err := io.ReadFull(c, make([]byte, h[1]))
	return err
}

// TestHugeFrameHeader: a peer that declares a 2^62-byte frame would make
// go-zeromq allocate it (a panic or an OOM in its own goroutine); the guard
// closes the connection at the header and the subscriber reconnects.
func TestHugeFrameHeader(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	for _, evil := range [][]byte{
		binary.BigEndian.AppendUint64([]byte{flagLong}, 1<<62),
		append(frame(flagMore, []byte("t")), binary.BigEndian.AppendUint64([]byte{flagLong}, 1<<40)...),
		[]byte(strings.Repeat(string([]byte{flagMore, 0}), 100)),
	} {
		ep, stop := zmtpServer(t, func(c net.Conn) {
			if handshake(c) == nil {
				c.Write(evil)
				io.Copy(io.Discard, c)
			}
			c.Close()
		})
		e := newEnv(t, Source{Name: "a", Endpoint: ep}, testOptions(t))
		e.waitFor("two disconnects", func() bool { return e.status().Disconnects >= 2 })
		e.stop()
		stop()
		if s := e.status(); !strings.Contains(s.LastError, "exceeds max") || s.Messages != 0 {
			t.Errorf("status %+v", s)
		}
	}
}

// TestSilentPeer: a peer that accepts and never speaks ZMTP fails the dial
// after DialTimeout instead of holding it forever.
func TestSilentPeer(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	ep, stop := zmtpServer(t, func(c net.Conn) {
		io.Copy(io.Discard, c)
		c.Close()
	})
	defer stop()
	o := testOptions(t)
	o.DialTimeout = 100 * time.Millisecond
	e := newEnv(t, Source{Name: "a", Endpoint: ep}, o)
	e.waitFor("two dial failures", func() bool { return e.status().DialFailures >= 2 })
	e.stop()
	if s := e.status(); !strings.Contains(s.LastError, "timeout") || s.Connects != 0 {
		t.Errorf("status %+v", s)
	}
}
