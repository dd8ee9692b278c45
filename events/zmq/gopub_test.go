package zmq

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
)

// pubConfig configures either publisher (the script's flags).
type pubConfig struct {
	Topic    string
	Layout   int    // replay reply frames after the empty one: 2 or 3; 1: a malformed [payload] (Go only)
	Sentinel string // "empty" (default), "topic", "none"
	NoReplay bool
	Buffer   int   // 0: 10000
	Rank     int64 // rank of batches that set none
	PlainPub bool  // Python: a PUB instead of an XPUB (await_subscribers then fails)
	PubPort  int   // Go: the PUB port (0: a free one)
	// Python only (the Go publisher has no snapshot service): serve vLLM's
	// snapshot service (§3.5), with chunks of at most SnapshotChunkEvents
	// events (0: 64) and heartbeats after HeartbeatMS idle ms (0: none).
	Snapshot            bool
	SnapshotChunkEvents int
	HeartbeatMS         int
}

// publisher is a real publisher process or goroutine set the tests drive.
type publisher interface {
	do(c pubCmd) pubAck
	pubEndpoint() string
	replayEndpoint() string
	topic() string
	close()
}

// goPublisher is vLLM's publisher in Go on go-zeromq: PUB + ROUTER, seq,
// buffer and the replay service, driven by pubCmds.
type goPublisher struct {
	t   testing.TB
	cfg pubConfig

	mu         sync.Mutex
	seq        uint64
	buf        []bufEntry
	pub        zmq4.Socket
	router     zmq4.Socket
	routerWG   sync.WaitGroup
	pubPort    int
	replayPort int
	stats      pubAck
}

type bufEntry struct {
	seq     uint64
	payload []byte
}

func startGoPublisher(t testing.TB, cfg pubConfig) *goPublisher {
	t.Helper()
	if cfg.Layout == 0 {
		cfg.Layout = 2
	}
	if cfg.Buffer == 0 {
		cfg.Buffer = 10000
	}
	p := &goPublisher{t: t, cfg: cfg, pubPort: cfg.PubPort}
	if err := p.bind(); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *goPublisher) topic() string       { return p.cfg.Topic }
func (p *goPublisher) pubEndpoint() string { return fmt.Sprintf("tcp://127.0.0.1:%d", p.pubPort) }
func (p *goPublisher) replayEndpoint() string {
	if p.cfg.NoReplay {
		return ""
	}
	return fmt.Sprintf("tcp://127.0.0.1:%d", p.replayPort)
}

// listen binds sck to port (0: a free one), retrying while the port is
// still held by a socket just closed.
func listen(sck zmq4.Socket, port int) (int, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := sck.Listen(fmt.Sprintf("tcp://127.0.0.1:%d", port))
		if err == nil {
			return sck.Addr().(*net.TCPAddr).Port, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			return 0, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (p *goPublisher) bind() error {
	pub := zmq4.NewPub(context.Background())
	port, err := listen(pub, p.pubPort)
	if err != nil {
		pub.Close()
		return err
	}
	p.pub, p.pubPort = pub, port
	if p.cfg.NoReplay {
		return nil
	}
	router := zmq4.NewRouter(context.Background())
	if port, err = listen(router, p.replayPort); err != nil {
		router.Close()
		return err
	}
	p.router, p.replayPort = router, port
	p.routerWG.Add(1)
	go p.serveReplay(router)
	return nil
}

func (p *goPublisher) unbind() {
	if p.pub != nil {
		p.pub.Close()
		p.pub = nil
	}
	if p.router != nil {
		p.router.Close()
		p.routerWG.Wait()
		closeSocket(p.router)
		p.router = nil
	}
}

// serveReplay is vLLM's _service_replay: only [identity, empty, start] is
// answered.
func (p *goPublisher) serveReplay(router zmq4.Socket) {
	defer p.routerWG.Done()
	for {
		m, err := router.Recv()
		if err != nil {
			return
		}
		p.mu.Lock()
		if len(m.Frames) != 3 {
			p.stats.ReplayIgnored++
			p.mu.Unlock()
			continue
		}
		id, start := m.Frames[0], m.Frames[2]
		var from uint64
		for _, b := range start { // int.from_bytes(start, "big")
			from = from<<8 | uint64(b)
		}
		var replies []zmq4.Msg
		for _, e := range p.buf {
			if e.seq >= from {
				replies = append(replies, p.reply(id, binary.BigEndian.AppendUint64(nil, e.seq), e.payload, []byte(p.cfg.Topic)))
				p.stats.ReplayedBatches++
			}
		}
		switch p.cfg.Sentinel {
		case "none":
		case "topic":
			replies = append(replies, p.reply(id, endSeq, nil, []byte(p.cfg.Topic)))
		default:
			replies = append(replies, p.reply(id, endSeq, nil, nil))
		}
		p.stats.ReplayAnswered++
		p.mu.Unlock()
		for _, r := range replies {
			if err := router.Send(r); err != nil {
				return
			}
		}
	}
}

var endSeq = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

func (p *goPublisher) reply(id, seq, payload, topic []byte) zmq4.Msg {
	switch p.cfg.Layout {
	case 1:
		return zmq4.NewMsgFrom(id, nil, payload)
	case 3:
		return zmq4.NewMsgFrom(id, nil, topic, seq, payload)
	}
	return zmq4.NewMsgFrom(id, nil, seq, payload)
}

func (p *goPublisher) do(c pubCmd) pubAck {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	switch c.Op {
	case "emit", "lose":
		seq := p.seq
		p.seq++
		payload := encodeBatch(c, p.cfg.Rank)
		if c.Op == "emit" && p.pub != nil {
			if err := p.pub.Send(zmq4.NewMsgFrom([]byte(p.cfg.Topic), binary.BigEndian.AppendUint64(nil, seq), payload)); err != nil {
				p.t.Fatalf("publish: %v", err)
			}
			p.stats.Sent++
		} else {
			p.stats.Lost++
		}
		p.buf = append(p.buf, bufEntry{seq, payload})
		if len(p.buf) > p.cfg.Buffer {
			p.buf = p.buf[len(p.buf)-p.cfg.Buffer:]
		}
		return pubAck{Op: c.Op, Seq: seq, Payload: hex.EncodeToString(payload)}
	case "drop":
		p.seq++
		p.stats.Dropped++
		return pubAck{Op: c.Op, Seq: p.seq - 1}
	case "down":
		p.mu.Unlock()
		p.unbind()
		p.mu.Lock()
		return pubAck{Op: c.Op}
	case "up", "restart":
		p.mu.Unlock()
		p.unbind()
		p.mu.Lock()
		if c.Op == "restart" {
			p.seq, p.buf = 0, nil
		}
		if err := p.bind(); err != nil {
			p.t.Fatalf("%s: %v", c.Op, err)
		}
		return pubAck{Op: c.Op, Pub: p.pubEndpoint(), Replay: p.replayEndpoint()}
	case "await_subscribers":
		deadline := time.Now().Add(10 * time.Second)
		for p.pub == nil || len(p.pub.(zmq4.Topics).Topics()) == 0 {
			if time.Now().After(deadline) {
				p.t.Fatal("await_subscribers: no subscriber")
			}
			p.mu.Unlock()
			time.Sleep(2 * time.Millisecond)
			p.mu.Lock()
		}
		return pubAck{Op: c.Op, Subscribers: 1}
	case "stats":
		s := p.stats
		s.Op = c.Op
		return s
	}
	p.t.Fatalf("go publisher: unknown op %q", c.Op)
	return pubAck{}
}

// setSentinel changes the sentinel of later replays.
func (p *goPublisher) setSentinel(s string) {
	p.mu.Lock()
	p.cfg.Sentinel = s
	p.mu.Unlock()
}

func (p *goPublisher) close() {
	p.unbind()
}
