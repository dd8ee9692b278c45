package zmq

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/kvtwin/kvtwin/events/pypub"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// vLLM's snapshot bootstrap (docs/spec/kv-events.md §3.5, §2.10 A13) over
// real ZeroMQ: scripts/kvev_publisher.py --snapshot serves the snapshot
// service (publisher id in every batch, a REP socket answering
// "snapshot" with chunks that re-create its blocks), and the subscriber
// talks to it with a DEALER carrying REQ's envelope.

// snapPublisher starts the Python publisher with its snapshot service.
func snapPublisher(t *testing.T, cfg pubConfig) *pyPublisher {
	t.Helper()
	pypub.Require(t)
	cfg.Snapshot = true
	p := startPyPublisher(t, cfg)
	if p.snapshotEndpoint() == "" || len(p.publisherID()) != 2*spec.KVPublisherIDBytes {
		t.Fatalf("publisher started without its snapshot service: %q, id %q", p.snapshotEndpoint(), p.publisherID())
	}
	return p
}

// snapSource is p's source, with its snapshot endpoint when snapshot is set.
func snapSource(p *pyPublisher, snapshot bool) Source {
	src := Source{Name: "src-a", Endpoint: p.pubEndpoint(), Replay: p.replayEndpoint()}
	if snapshot {
		src.Snapshot = p.snapshotEndpoint()
	}
	return src
}

// snapOptions are testOptions with the snapshot's clocks shrunk.
func snapOptions(t *testing.T) Options {
	o := testOptions(t)
	o.SnapshotTimeout = 3 * time.Second
	o.HeartbeatTimeout = time.Hour // only the heartbeat test watches silence
	return o
}

// removeCmd removes block k.
func removeCmd(k int) pubCmd {
	return pubCmd{Op: "emit", Events: []pubEvent{removed(chainHash(k))}}
}

// publishGapped publishes blocks 0-2, loses the store of block 3 and the
// removal of block 1 (an interior block: a hole under resident 2 and 3),
// then publishes block 4: the subscriber sees seqs 0-2, then 5.
func publishGapped(e *env, p publisher) {
	for k := range 3 {
		e.publish(p, storeCmd(k))
	}
	e.publish(p, lose(storeCmd(3)))
	e.publish(p, lose(removeCmd(1)))
	e.publish(p, storeCmd(4))
}

// TestSnapshotFillsAGapReplayCannot is issue 32's done-when: with no replay
// endpoint, or a replay buffer too small for the gap, a source with
// snapshot= bootstraps from the publisher's snapshot and ends with the
// engines and pages (digest) of an index fed every batch, not stale; the
// same source without snapshot= stays stale.
func TestSnapshotFillsAGapReplayCannot(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	for _, v := range []struct {
		name string
		cfg  pubConfig
		// calls is the recorded script with snapshot=.
		calls string
	}{
		{"no replay endpoint", pubConfig{NoReplay: true},
			"live:0h live:1h live:2h live:5h snapshot_reply:5/1 live:6h "},
		{"replay buffer too small", pubConfig{Buffer: 1},
			"live:0h live:1h live:2h live:5h replay:5h replay:end snapshot_reply:5/1 live:6h "},
	} {
		t.Run(v.name, func(t *testing.T) {
			for _, snapshot := range []bool{true, false} {
				p := snapPublisher(t, v.cfg)
				e := newEnv(t, snapSource(p, snapshot), snapOptions(t))
				p.do(awaitSub)
				publishGapped(e, p)
				if snapshot {
					// The publisher answers between commands: let it answer
					// before the next batch, so the calls are known.
					e.waitFor("the snapshot", func() bool { return e.status().SnapshotReplies == 1 })
				}
				e.publish(p, storeCmd(5))
				e.settle(7)
				e.stop()
				e.checkRecorded()
				st := e.ix.State()
				if !snapshot {
					if s := staleEngines(st); len(s) != 1 {
						t.Errorf("without snapshot=: stale %v, want [src-a]", s)
					}
					p.close()
					continue
				}
				noStale(t, e.checkIdeal(e.published, e.streams))
				if got := e.ix.ops(); got != v.calls {
					t.Errorf("calls %q, want %q", got, v.calls)
				}
				ss := e.stream()
				if ss.Counters.SnapshotsOK != 1 || ss.StaleSince != nil || hex.EncodeToString(ss.PublisherID) != p.publisherID() {
					t.Errorf("stream %+v, want one snapshot installed, not stale, publisher id %s", ss, p.publisherID())
				}
				if s := e.status(); s.SnapshotRequests != 1 || s.SnapshotReplies != 1 || s.SnapshotsOK != 1 || s.SnapshotsFailed != 0 || s.Snapshotting {
					t.Errorf("status %+v", s)
				}
				p.close()
			}
		})
	}
}

// TestSnapshotBootstrapsALateSubscriber: a subscriber that connects after
// the publisher's first batches has a gap [0, s) at its first message; it
// bootstraps from the snapshot (no replay endpoint), so the batches it
// never saw count.
func TestSnapshotBootstrapsALateSubscriber(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	p := snapPublisher(t, pubConfig{NoReplay: true})
	defer p.close()
	src := snapSource(p, true)
	// The batches before the subscriber exists go nowhere (a PUB drops
	// them): the ideal script still has them.
	var early []spec.KVEvStep
	pre := &env{t: t, src: src}
	for k := range 4 {
		pre.publish(p, storeCmd(k))
	}
	pre.publish(p, removeCmd(1)) // a hole under resident 2 and 3
	early = pre.published
	e := newEnv(t, src, snapOptions(t))
	p.do(awaitSub)
	e.publish(p, storeCmd(4))
	e.settle(6)
	e.stop()
	e.checkRecorded()
	e.published = append(early, e.published...)
	noStale(t, e.checkIdeal(e.published, e.streams))
	if got, want := e.ix.ops(), "live:5h snapshot_reply:5/1 "; got != want {
		t.Errorf("calls %q, want %q", got, want)
	}
}

// TestSnapshotDetectsARestartByPublisherID: a publisher that restarts and
// publishes past the old last seq before the subscriber hears it again is,
// by seq alone, a gap (§3.4); its new publisher id makes it a restart: the
// old incarnation's engines go, and the snapshot of the new one fills the
// gap.
func TestSnapshotDetectsARestartByPublisherID(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	for _, snapshot := range []bool{true, false} {
		p := snapPublisher(t, pubConfig{NoReplay: true})
		e := newEnv(t, snapSource(p, snapshot), snapOptions(t))
		p.do(awaitSub)
		e.publish(p, storeCmd(0))
		e.publish(p, storeCmd(1))
		e.settle(2)
		oldID := p.publisherID()
		p.do(pubCmd{Op: "restart"})
		if p.publisherID() == oldID {
			t.Fatalf("restart kept the publisher id %s", oldID)
		}
		e.published = nil // the ideal index is the new incarnation's
		for k := 5; k < 8; k++ {
			e.publish(p, lose(storeCmd(k-5))) // published before the subscriber is back
		}
		p.do(awaitSub)
		e.publish(p, storeCmd(3))
		e.settle(4)
		e.stop()
		e.checkRecorded()
		ss := e.stream()
		if !snapshot {
			// Seq 3 > last_live 1: a gap; the old engines stay, stale.
			if ss.Counters.Restarts != 0 || len(staleEngines(e.ix.State())) != 1 {
				t.Errorf("without snapshot=: restarts %d, stale %v; want 0 and [src-a]", ss.Counters.Restarts, staleEngines(e.ix.State()))
			}
			p.close()
			continue
		}
		noStale(t, e.checkIdeal(e.published, e.streams))
		if ss.Counters.Restarts != 1 || ss.Counters.SnapshotsOK != 1 || hex.EncodeToString(ss.PublisherID) != p.publisherID() {
			t.Errorf("stream %+v: want 1 restart, 1 snapshot, publisher id %s", ss, p.publisherID())
		}
		p.close()
	}
}

// TestSnapshotUnavailableLeavesTheStreamStale: a publisher that answers
// seq -2 has no snapshot: the gap stays lost, the engines stale, and the
// cooldown answers the next request without asking the publisher.
func TestSnapshotUnavailableLeavesTheStreamStale(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	p := snapPublisher(t, pubConfig{NoReplay: true})
	defer p.close()
	e := newEnv(t, snapSource(p, true), snapOptions(t))
	p.do(awaitSub)
	p.p.Do(map[string]string{"op": "snapshot_mode", "mode": "unavailable"}, nil)
	e.publish(p, storeCmd(0))
	e.publish(p, lose(storeCmd(1)))
	e.publish(p, storeCmd(2))
	e.settle(3)
	e.publish(p, lose(storeCmd(3)))
	e.publish(p, storeCmd(4))
	e.settle(5)
	e.stop()
	e.checkRecorded()
	if s := staleEngines(e.ix.State()); len(s) != 1 {
		t.Errorf("stale %v, want [src-a]", s)
	}
	if got, want := e.ix.ops(), "live:0h live:2h snapshot_reply:-2/0 live:4h snapshot_failed(unavailable) "; got != want {
		t.Errorf("calls %q, want %q", got, want)
	}
	if s := e.status(); s.SnapshotRequests != 1 || s.SnapshotsFailed != 2 || s.SnapshotUnavailable != 2 || s.SnapshotCooldownTill.IsZero() {
		t.Errorf("status %+v", s)
	}
	if ss := e.stream(); ss.Counters.SnapshotsFailed != 2 || ss.Counters.SnapshotsOK != 0 {
		t.Errorf("stream %+v", ss)
	}
}

// TestSnapshotHeartbeatLossAsksForSnapshot: while the publisher sends
// heartbeats the source is never silent; once they stop (an idle publisher
// without heartbeats looks the same), the silence past HeartbeatTimeout is
// reported once, and the next live message asks for a snapshot, which
// leaves the pages of every store published and no stale engine.
func TestSnapshotHeartbeatLossAsksForSnapshot(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	p := snapPublisher(t, pubConfig{NoReplay: true})
	defer p.close()
	o := snapOptions(t)
	o.HeartbeatTimeout = 500 * time.Millisecond
	e := newEnv(t, snapSource(p, true), o)
	p.do(awaitSub)
	e.publish(p, storeCmd(0))
	e.settle(1)
	p.p.Do(map[string]any{"op": "heartbeat", "ms": 50}, nil)
	// 1 s of heartbeats: a few dozen messages, no silence.
	p.do(pubCmd{Op: "sleep", Seconds: 1})
	if s := e.status(); s.HeartbeatsLost != 0 || s.Messages < 5 {
		t.Fatalf("with heartbeats every 50 ms: status %+v, want no heartbeat lost and a few messages", s)
	}
	p.p.Do(map[string]any{"op": "heartbeat", "ms": 0}, nil)
	e.waitFor("the heartbeat loss", func() bool { return e.status().HeartbeatsLost == 1 })
	if !e.stream().Resync {
		t.Errorf("stream %+v: want resync after the heartbeat loss", e.stream())
	}
	e.publish(p, storeCmd(1))
	e.waitFor("the snapshot", func() bool { return e.stream().Counters.SnapshotsOK == 1 && e.stream().Held == 0 })
	e.stop()
	e.checkRecorded()
	if s := e.status(); s.HeartbeatsLost != 1 || s.SnapshotRequests != 1 {
		t.Errorf("status %+v, want one heartbeat loss and one snapshot request", s)
	}
	// The heartbeats took seqs the test did not number: compare pages, not
	// the stale flags a gapped ideal script would set.
	got := e.ix.State()
	noStale(t, got)
	want, _ := e.apply(e.published, []spec.KVEvStream{{Name: "src-a"}}, nil)
	if diff := cmp.Diff(poolsOf(want), poolsOf(got)); diff != "" {
		t.Errorf("pages differ from every store applied (-want +got):\n%s", diff)
	}
}

// poolsOf is each engine's pools, by source.
func poolsOf(st spec.KVEvState) map[string][]spec.KVEvPoolState {
	out := map[string][]spec.KVEvPoolState{}
	for _, e := range st.Engines {
		out[e.Source] = e.Pools
	}
	return out
}

// notBootstrapper is an index that serves no snapshot bootstrap (as the
// relay's and --verify-state's wrappers do not).
type notBootstrapper struct{ spec.KVEvIndex }

// TestSnapshotNeedsABootstrapper: New and AddSource refuse snapshot= over
// an index that cannot take a snapshot, naming the option.
func TestSnapshotNeedsABootstrapper(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	src := Source{Name: "a", Endpoint: "tcp://127.0.0.1:1", Snapshot: "tcp://127.0.0.1:2"}
	inner, err := ref.NewKVEvIndex(spec.KVEvConfig{}, Streams([]Source{src}))
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error) {
		t.Helper()
		ie, ok := spec.AsInputError(err)
		if !ok || !errors.Is(err, ErrBadSource) || ie.Field != "source[a].snapshot" || !strings.Contains(ie.Bound, "spec.KVEvBootstrapper") {
			t.Errorf("%s: %v; want ErrBadSource naming source[a].snapshot and spec.KVEvBootstrapper", what, err)
		}
	}
	_, err = New(notBootstrapper{inner}, []Source{src}, Options{})
	check("New", err)
	sub, err := New(notBootstrapper{inner}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	check("AddSource", sub.AddSource(src))
	if _, err := New(inner, []Source{src}, Options{}); err != nil {
		t.Errorf("New over the reference index: %v", err)
	}
}

// TestSnapshotReplyPastItsBoundsIsCut: a reply of more chunks than
// SnapshotMaxChunks closes the snapshot connection at the frame past the
// bound (before its body is read), the request fails, the gap stays lost.
func TestSnapshotReplyPastItsBoundsIsCut(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	p := snapPublisher(t, pubConfig{NoReplay: true, SnapshotChunkEvents: 1})
	defer p.close()
	o := snapOptions(t)
	o.SnapshotMaxChunks = 2 // the publisher's snapshot of 3 blocks is 3 one-event chunks
	e := newEnv(t, snapSource(p, true), o)
	p.do(awaitSub)
	publishGapped(e, p)
	e.settle(6)
	e.stop()
	e.checkRecorded()
	if s := staleEngines(e.ix.State()); len(s) != 1 {
		t.Errorf("stale %v, want [src-a]", s)
	}
	if got, want := e.ix.ops(), "live:0h live:1h live:2h live:5h snapshot_failed(unavailable) "; got != want {
		t.Errorf("calls %q, want %q", got, want)
	}
	if s := e.status(); s.SnapshotRequests != 1 || s.SnapshotReplies != 0 || s.SnapshotUnavailable != 1 || !strings.Contains(s.LastError, "max frames") {
		t.Errorf("status %+v", s)
	}
}

// TestWithIndexBoundsTakesTheIndexsReplyBounds: the snapshot reply's
// bounds default to the index's max_held and max_held_bytes (their own
// defaults when zero), the bytes capped at one message's cap; set values
// are kept.
func TestWithIndexBoundsTakesTheIndexsReplyBounds(t *testing.T) {
	for _, c := range []struct {
		o      Options
		ix     spec.KVEvConfig
		bytes  int64
		chunks int
	}{
		{Options{}, spec.KVEvConfig{}, 64 << 20, 10000},
		{Options{}, spec.KVEvConfig{MaxHeld: 5, MaxHeldBytes: 1 << 20}, 1 << 20, 5},
		{Options{}, spec.KVEvConfig{MaxHeldBytes: 1 << 40}, 1 << 30, 10000},
		{Options{SnapshotMaxBytes: 7, SnapshotMaxChunks: 3}, spec.KVEvConfig{MaxHeld: 5}, 7, 3},
	} {
		got := c.o.WithIndexBounds(c.ix)
		if got.SnapshotMaxBytes != c.bytes || got.SnapshotMaxChunks != c.chunks {
			t.Errorf("%+v over %+v: %d bytes, %d chunks; want %d, %d", c.o, c.ix, got.SnapshotMaxBytes, got.SnapshotMaxChunks, c.bytes, c.chunks)
		}
	}
}
