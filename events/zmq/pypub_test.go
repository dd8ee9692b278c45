package zmq

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/kvtwin/kvtwin/events/pypub"
)

// pyPublisher is scripts/kvev_publisher.py in a child process, driven over
// its stdin and stdout (events/pypub).
type pyPublisher struct {
	t        testing.TB
	p        *pypub.Publisher
	topicStr string
}

func startPyPublisher(t testing.TB, cfg pubConfig) *pyPublisher {
	t.Helper()
	args := []string{"--topic", cfg.Topic, "--rank", strconv.FormatInt(cfg.Rank, 10)}
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
	if cfg.Snapshot {
		args = append(args, "--snapshot")
	}
	if cfg.SnapshotChunkEvents != 0 {
		args = append(args, "--snapshot-chunk-events", strconv.Itoa(cfg.SnapshotChunkEvents))
	}
	if cfg.HeartbeatMS != 0 {
		args = append(args, "--heartbeat-ms", strconv.Itoa(cfg.HeartbeatMS))
	}
	p := pypub.Start(t, filepath.Join("..", "..", "scripts", "kvev_publisher.py"), args...)
	return &pyPublisher{t: t, p: p, topicStr: cfg.Topic}
}

func (p *pyPublisher) topic() string          { return p.topicStr }
func (p *pyPublisher) pubEndpoint() string    { return p.p.Pub }
func (p *pyPublisher) replayEndpoint() string { return p.p.Replay }

// snapshotEndpoint is the snapshot REP socket's endpoint ("" without
// cfg.Snapshot); publisherID the current incarnation's id, in hex.
func (p *pyPublisher) snapshotEndpoint() string { return p.p.Snapshot }
func (p *pyPublisher) publisherID() string      { return p.p.PublisherID }

// do runs c; pypub keeps the endpoints an "up" or "restart" answers with.
func (p *pyPublisher) do(c pubCmd) pubAck {
	p.t.Helper()
	var a pubAck
	p.p.Do(c, &a)
	return a
}

// close ends the process (exit, then EOF, then a kill after 10 s) and its reader.
func (p *pyPublisher) close() { p.p.Close() }
