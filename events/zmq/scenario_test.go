package zmq

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kvtwin/kvtwin/events/pypub"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// The scenarios run the subscriber on real sockets against the Go and the
// Python publisher. After each, the subscriber-fed reference index must
// equal ref.KVEvApply on the script of the calls the subscriber made
// (checkRecorded), and, where the outcome is known up front, ref.KVEvApply
// on the ideal script of the batches the publisher numbered (checkIdeal).

const (
	h1 = 0x1111111111111111
	h2 = 0xF0E1D2C3B4A59687
)

// chainHash is block k's hash, in one of the three wire forms: a uint64
// past 2^63, a negative int (SGLang) and 32 bytes (vLLM's bytes mode).
func chainHash(k int) pubHash {
	switch k % 3 {
	case 0:
		return hu(h2 + uint64(k))
	case 1:
		return hneg(-int64(k) - 7)
	}
	b := make([]byte, 32)
	for i := range b {
		b[i] = byte(k*31 + i)
	}
	return hbin(b)
}

// storeCmd stores block k (4 tokens) under block k-1, alternating the event
// and batch forms.
func storeCmd(k int) pubCmd {
	var parent *pubHash
	if k > 0 {
		p := chainHash(k - 1)
		parent = &p
	}
	toks := []uint32{uint32(4 * k), uint32(4*k + 1), 70000 + uint32(k), 1 << 20}
	c := pubCmd{Op: "emit", Events: []pubEvent{stored([]pubHash{chainHash(k)}, parent, toks, 4)}}
	if k%2 == 1 {
		c.Form = "map"
	}
	if k%4 == 3 {
		c.Batch = "map"
	}
	return c
}

func lose(c pubCmd) pubCmd { c.Op = "lose"; return c }

var awaitSub = pubCmd{Op: "await_subscribers", N: 1, Timeout: 10}

func sourceFor(p publisher, topic string) Source {
	return Source{Name: "src-a", Endpoint: p.pubEndpoint(), Replay: p.replayEndpoint(), Topic: topic}
}

func noStale(t *testing.T, st spec.KVEvState) {
	t.Helper()
	if s := staleEngines(st); len(s) > 0 {
		t.Errorf("stale engines %v, want none", s)
	}
	if len(st.Engines) == 0 {
		t.Error("no engines: nothing was applied")
	}
}

func TestPlainStream(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	forEachPublisher(t, func(t *testing.T, start func(testing.TB, pubConfig) publisher) {
		p := start(t, pubConfig{Topic: "kv@pod-a@llama"})
		defer p.close()
		e := newEnv(t, sourceFor(p, "kv@"), testOptions(t))
		p.do(awaitSub)
		for k := range 8 {
			e.publish(p, storeCmd(k))
		}
		e.publish(p, pubCmd{Op: "emit", Events: []pubEvent{removed(chainHash(7)), removed(chainHash(6))}})
		sglang := pubEvent{Type: "BlockStored", Fields: []field{{"block_hashes", []pubHash{hneg(-1)}}, {"parent_block_hash", nil},
			{"token_ids", []uint32{7, 8}}, {"block_size", int64(2)}, {"lora_id", nil}, {"medium", "GPU"}}}
		e.publish(p, pubCmd{Op: "emit", Events: []pubEvent{sglang}, NoRank: true})
		e.publish(p, pubCmd{Op: "emit", Events: []pubEvent{stored([]pubHash{hu(h1)}, nil, []uint32{1, 2, 3, 4}, 4), cleared()},
			Rank: new(int64(1))})
		e.settle(11)
		e.stop()
		e.checkRecorded()
		st := e.checkIdeal(e.published, e.streams)
		noStale(t, st)
		if len(st.Engines) != 2 || st.Engines[0].Source != "pod-a" {
			t.Errorf("engines %+v, want pod-a ranks 0 and 1 (from the kv@ topic)", st.Engines)
		}
		s := e.status()
		if s.Messages != 11 || s.ReplayRequests != 0 || s.LastSeq != 10 || !s.SeqSeen || s.Connects != 1 {
			t.Errorf("status %+v", s)
		}
	})
}

// TestTopicFilter: a message whose topic lacks the prefix never reaches the
// index, whichever side filters it.
func TestTopicFilter(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	p := startGoPublisher(t, pubConfig{Topic: "other"})
	defer p.close()
	e := newEnv(t, Source{Name: "a", Endpoint: p.pubEndpoint(), Topic: "kv@"}, testOptions(t))
	p.do(awaitSub)
	p.do(storeCmd(0))
	time.Sleep(100 * time.Millisecond)
	e.stop()
	if s := e.status(); s.Messages != 0 || len(e.ix.script()) != 0 {
		t.Errorf("status %+v, calls %s: want no message through", s, e.ix.ops())
	}
}

// TestReplayHeals: batches lost on the live socket are fetched from the
// replay buffer, in both reply layouts and with either sentinel.
func TestReplayHeals(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	forEachPublisher(t, func(t *testing.T, start func(testing.TB, pubConfig) publisher) {
		for _, c := range []pubConfig{
			{Topic: "kv@pod-b@m", Layout: 2},
			{Topic: "kv@pod-b@m", Layout: 3},
			{Topic: "kv@pod-b@m", Layout: 3, Sentinel: "topic"},
		} {
			t.Run(fmt.Sprintf("layout%d-%s", c.Layout, c.Sentinel), func(t *testing.T) {
				p := start(t, c)
				defer p.close()
				e := newEnv(t, sourceFor(p, ""), testOptions(t))
				p.do(awaitSub)
				e.publish(p, storeCmd(0))
				e.publish(p, storeCmd(1))
				e.publish(p, lose(storeCmd(2)))
				e.publish(p, lose(storeCmd(3)))
				e.publish(p, storeCmd(4))
				e.settle(5)
				e.publish(p, storeCmd(5))
				e.settle(6)
				e.stop()
				e.checkRecorded()
				noStale(t, e.checkIdeal(e.published, e.streams))
				if got, want := e.ix.ops(), "live:0h live:1h live:4h replay:2h replay:3h replay:4h replay:end live:5h "; got != want {
					t.Errorf("calls %q, want %q", got, want)
				}
				if s := e.status(); s.ReplaysOK != 1 || s.ReplayRequests != 1 || s.ReplaysFailed != 0 || s.ReplayReplies != 4 {
					t.Errorf("status %+v", s)
				}
			})
		}
	})
}

// TestNoReplayEndpointStale: a gap on a source without a replay endpoint
// marks its engines stale and the stream moves on.
func TestNoReplayEndpointStale(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	forEachPublisher(t, func(t *testing.T, start func(testing.TB, pubConfig) publisher) {
		p := start(t, pubConfig{NoReplay: true})
		defer p.close()
		e := newEnv(t, sourceFor(p, ""), testOptions(t))
		if e.streams[0].Replay {
			t.Fatal("stream has replay")
		}
		p.do(awaitSub)
		e.publish(p, storeCmd(0))
		e.publish(p, lose(storeCmd(1)))
		e.publish(p, storeCmd(2))
		e.settle(3)
		e.stop()
		e.checkRecorded()
		st := e.checkIdeal(e.without(1), e.streams)
		if s := staleEngines(st); !slices.Equal(s, []string{"src-a"}) {
			t.Errorf("stale %v, want [src-a]", s)
		}
		if s := e.status(); s.ReplayRequests != 0 || s.ReplaysFailed != 0 {
			t.Errorf("status %+v", s)
		}
	})
}

// freePort is a port nothing listens on (a listener's, closed).
func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestReplayEndpointAbsent: a configured replay endpoint nobody listens on
// answers the index with "unavailable" (stale), then the cooldown answers
// the next request without dialling.
func TestReplayEndpointAbsent(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	forEachPublisher(t, func(t *testing.T, start func(testing.TB, pubConfig) publisher) {
		p := start(t, pubConfig{NoReplay: true})
		defer p.close()
		src := sourceFor(p, "")
		src.Replay = fmt.Sprintf("tcp://127.0.0.1:%d", freePort(t))
		e := newEnv(t, src, testOptions(t))
		p.do(awaitSub)
		e.publish(p, storeCmd(0))
		e.publish(p, lose(storeCmd(1)))
		e.publish(p, storeCmd(2))
		e.settle(3)
		e.publish(p, lose(storeCmd(3)))
		e.publish(p, storeCmd(4))
		e.settle(5)
		e.stop()
		e.checkRecorded()
		ideal := e.without(1, 3)
		failed := spec.KVEvStep{Op: spec.KVStepReplayFailed, Stream: src.Name, Reason: spec.ReplayReasonUnavailable}
		ideal = slices.Insert(ideal, 3, failed)
		ideal = slices.Insert(ideal, 2, failed)
		st := e.checkIdeal(ideal, e.streams)
		if s := staleEngines(st); !slices.Equal(s, []string{"src-a"}) {
			t.Errorf("stale %v, want [src-a]", s)
		}
		if got, want := e.ix.ops(), "live:0h live:2h replay_failed(unavailable) live:4h replay_failed(unavailable) "; got != want {
			t.Errorf("calls %q, want %q", got, want)
		}
		if s := e.status(); s.ReplayUnavailable != 2 || s.ReplayRequests != 0 || s.ReplayCooldownTill.IsZero() || !strings.Contains(s.LastError, "replay connect") {
			t.Errorf("status %+v", s)
		}
	})
}

// TestPublisherRestart: the publisher restarts (seq back to 0, empty
// buffer, sockets rebound); the subscriber reconnects and the index sees the
// seq regression as a restart.
func TestPublisherRestart(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	forEachPublisher(t, func(t *testing.T, start func(testing.TB, pubConfig) publisher) {
		p := start(t, pubConfig{Topic: "kv@pod-c@m"})
		defer p.close()
		e := newEnv(t, sourceFor(p, "kv@"), testOptions(t))
		p.do(awaitSub)
		for k := range 3 {
			e.publish(p, storeCmd(k))
		}
		e.settle(3)
		p.do(pubCmd{Op: "restart"})
		p.do(awaitSub)
		e.publish(p, storeCmd(5))
		e.publish(p, storeCmd(6))
		e.settle(2)
		e.stop()
		e.checkRecorded()
		st := e.checkIdeal(e.published, e.streams)
		if st.Streams[0].Counters.Restarts != 1 {
			t.Errorf("restarts %d, want 1", st.Streams[0].Counters.Restarts)
		}
		if got, want := e.ix.ops(), "live:0h live:1h live:2h live:0h live:1h "; got != want {
			t.Errorf("calls %q, want %q", got, want)
		}
		if s := e.status(); s.Reconnects < 1 || s.Disconnects < 1 {
			t.Errorf("status %+v: want a reconnect", s)
		}
	})
}

// TestReconnect: the publisher goes away and comes back (same process
// state); the batch it numbered meanwhile is healed by replay.
func TestReconnect(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	forEachPublisher(t, func(t *testing.T, start func(testing.TB, pubConfig) publisher) {
		p := start(t, pubConfig{Topic: "t"})
		defer p.close()
		e := newEnv(t, sourceFor(p, "t"), testOptions(t))
		p.do(awaitSub)
		e.publish(p, storeCmd(0))
		e.publish(p, storeCmd(1))
		e.settle(2)
		p.do(pubCmd{Op: "down"})
		e.waitFor("the disconnect", func() bool { return !e.status().Connected })
		e.publish(p, storeCmd(2)) // numbered and buffered, not sent
		time.Sleep(50 * time.Millisecond)
		p.do(pubCmd{Op: "up"})
		p.do(awaitSub)
		e.publish(p, storeCmd(3))
		e.settle(4)
		e.stop()
		e.checkRecorded()
		noStale(t, e.checkIdeal(e.published, e.streams))
		if s := e.status(); s.Reconnects < 1 || s.ReplaysOK != 1 {
			t.Errorf("status %+v", s)
		}
	})
}

// TestReplayTimeoutAndCooldown: a publisher that never sends the sentinel
// makes the replay time out (its batches still count), and the next gap
// inside the cooldown is answered "unavailable" (stale).
func TestReplayTimeoutAndCooldown(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	forEachPublisher(t, func(t *testing.T, start func(testing.TB, pubConfig) publisher) {
		p := start(t, pubConfig{Sentinel: "none"})
		defer p.close()
		o := testOptions(t)
		o.ReplayTimeout = 300 * time.Millisecond
		e := newEnv(t, sourceFor(p, ""), o)
		p.do(awaitSub)
		e.publish(p, storeCmd(0))
		e.publish(p, lose(storeCmd(1)))
		began := time.Now()
		e.publish(p, storeCmd(2))
		e.settle(3)
		if d := time.Since(began); d < o.ReplayTimeout {
			t.Errorf("replay ended after %v, before the %v timeout", d, o.ReplayTimeout)
		}
		e.publish(p, lose(storeCmd(3)))
		e.publish(p, storeCmd(4))
		e.settle(5)
		e.stop()
		e.checkRecorded()
		if got, want := e.ix.ops(), "live:0h live:2h replay:1h replay:2h replay_failed(timeout) live:4h replay_failed(unavailable) "; got != want {
			t.Errorf("calls %q, want %q", got, want)
		}
		if s := staleEngines(e.ix.State()); !slices.Equal(s, []string{"src-a"}) {
			t.Errorf("stale %v, want [src-a]", s)
		}
		if s := e.status(); s.ReplayTimeouts != 1 || s.ReplayUnavailable != 1 || s.ReplayRequests != 1 || s.ReplaysOK != 0 {
			t.Errorf("status %+v", s)
		}
	})
}

// TestReplayCooldownEnds: after the cooldown a replay is attempted again,
// and its success ends the cooldown.
func TestReplayCooldownEnds(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	p := startGoPublisher(t, pubConfig{Sentinel: "none"})
	defer p.close()
	o := testOptions(t)
	o.ReplayTimeout = 200 * time.Millisecond
	o.ReplayCooldown = 300 * time.Millisecond
	e := newEnv(t, sourceFor(p, ""), o)
	p.do(awaitSub)
	e.publish(p, storeCmd(0))
	e.publish(p, lose(storeCmd(1)))
	e.publish(p, storeCmd(2))
	e.settle(3)
	if s := e.status(); s.ReplayCooldownTill.IsZero() {
		t.Errorf("status %+v: want a cooldown after the timeout", s)
	}
	p.setSentinel("empty")
	time.Sleep(o.ReplayCooldown)
	e.publish(p, lose(storeCmd(3)))
	e.publish(p, storeCmd(4))
	e.settle(5)
	e.stop()
	e.checkRecorded()
	noStale(t, e.checkIdeal(e.published, e.streams))
	if got, want := e.ix.ops(), "live:0h live:2h replay:1h replay:2h replay_failed(timeout) live:4h replay:3h replay:4h replay:end "; got != want {
		t.Errorf("calls %q, want %q", got, want)
	}
	if s := e.status(); s.ReplaysOK != 1 || s.ReplayTimeouts != 1 || !s.ReplayCooldownTill.IsZero() {
		t.Errorf("status %+v", s)
	}
}

// TestReplayProtocolError: a reply the index calls replay_protocol fails the
// replay with "protocol", recreates the DEALER (later replies of that
// replay are never read) and marks the engines stale.
func TestReplayProtocolError(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	p := startGoPublisher(t, pubConfig{Layout: 1})
	defer p.close()
	e := newEnv(t, sourceFor(p, ""), testOptions(t))
	p.do(awaitSub)
	e.publish(p, storeCmd(0))
	e.publish(p, lose(storeCmd(1)))
	e.publish(p, storeCmd(2))
	e.settle(3)
	e.stop()
	e.checkRecorded()
	if got, want := e.ix.ops(), "live:0h live:2h replay replay_failed(protocol) "; got != want {
		t.Errorf("calls %q, want %q", got, want)
	}
	if s := staleEngines(e.ix.State()); !slices.Equal(s, []string{"src-a"}) {
		t.Errorf("stale %v, want [src-a]", s)
	}
	if s := e.status(); s.ReplayProtocol != 1 || s.ReplaysFailed != 1 || s.ReplayCooldownTill.IsZero() {
		t.Errorf("status %+v", s)
	}
}

// TestRequestWithoutDelimiterIgnored: the publishers' ROUTER answers only
// [identity, empty, start], as vLLM's does; a DEALER that leaves out the
// empty frame waits forever (the AIBrix and Mooncake bug of §3.2).
func TestRequestWithoutDelimiterIgnored(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	forEachPublisher(t, func(t *testing.T, start func(testing.TB, pubConfig) publisher) {
		p := start(t, pubConfig{Layout: 3, Topic: "tp"})
		defer p.close()
		var want [][][]byte
		for k := range 2 {
			a := p.do(lose(storeCmd(k)))
			payload, _ := hex.DecodeString(a.Payload)
			want = append(want, [][]byte{{}, []byte("tp"), binary.BigEndian.AppendUint64(nil, a.Seq), payload})
		}
		want = append(want, [][]byte{{}, {}, endSeq, {}})
		o, _ := testOptions(t).withDefaults()
		scheme, _ := guardedScheme(o.MaxMessageBytes, o.MaxFrames)
		d, err := dialDealer(context.Background(), guardedEndpoint(scheme, p.replayEndpoint()), o, o.Logger, &account{b: newByteBudget(o.MaxBufferedBytes, o.BufferWait)})
		if err != nil {
			t.Fatal(err)
		}
		defer d.close()
		start0 := binary.BigEndian.AppendUint64(nil, 0)
		for _, bad := range [][][]byte{{start0}, {start0, {}, {}}} { // no delimiter; 4 frames at the ROUTER
			if err := d.send(bad); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case r := <-d.msgs:
			t.Fatalf("a request without the empty frame was answered: %v %v", r.msg.Frames, r.err)
		case <-time.After(500 * time.Millisecond):
		}
		if s := p.do(pubCmd{Op: "stats"}); s.ReplayIgnored != 2 || s.ReplayAnswered != 0 {
			t.Errorf("stats %+v, want 2 ignored", s)
		}
		if err := d.send([][]byte{{}, start0}); err != nil {
			t.Fatal(err)
		}
		for i, w := range want {
			select {
			case r := <-d.msgs:
				if r.err != nil {
					t.Fatal(r.err)
				}
				got := r.msg.Frames
				for j := range got {
					if got[j] == nil {
						got[j] = []byte{}
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(w) {
					t.Errorf("reply %d = %x, want %x", i, got, w)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("reply %d missing", i)
			}
		}
	})
}

// TestPythonPlainPubColdStart: against a plain PUB (no XPUB handshake to
// wait for) the batches sent before the subscription took effect are
// fetched by the cold-start replay from 0.
func TestPythonPlainPubColdStart(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	pypub.Require(t)
	p := startPyPublisher(t, pubConfig{PlainPub: true, Layout: 3, Topic: "kv@pod-d@m"})
	defer p.close()
	e := newEnv(t, sourceFor(p, "kv@"), testOptions(t))
	k := 0
	for ; k < 200 && !e.status().SeqSeen; k++ {
		e.publish(p, storeCmd(k))
		time.Sleep(10 * time.Millisecond)
	}
	e.publish(p, storeCmd(k))
	e.settle(uint64(k + 1))
	e.stop()
	e.checkRecorded()
	noStale(t, e.checkIdeal(e.published, e.streams))
	t.Logf("%d batches before the first arrived; calls: %s", k, e.ix.ops())
}

// TestPublishersEncodeAlike: the Go and the Python publisher encode every
// command to the same bytes, and those are §5's examples where one applies.
func TestPublishersEncodeAlike(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	pypub.Require(t)
	py := startPyPublisher(t, pubConfig{})
	defer py.close()
	unhex := func(s string) []byte {
		b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	bin32 := make([]byte, 32)
	for i := range bin32 {
		bin32[i] = byte(i)
	}
	p1 := hu(h1)
	e3 := stored([]pubHash{hu(h2)}, &p1, []uint32{128, 255, 256, 65536}, 4).
		with("extra_keys", []any{nil}).with("group_idx", int64(0)).
		with("kv_cache_spec_kind", "full_attention").with("kv_cache_spec_sliding_window", nil)
	e5 := pubEvent{Type: "BlockStored", Fields: []field{{"block_hashes", []pubHash{hneg(-1)}}, {"parent_block_hash", nil},
		{"token_ids", []uint32{7, 8}}, {"block_size", int64(2)}, {"lora_id", nil}, {"medium", "GPU"}}}
	cases := []struct {
		name string
		cmd  pubCmd
		spec string // §5's bytes, "" when the command is not an example
	}{
		{"E2", pubCmd{Op: "emit", Events: []pubEvent{removed(hu(h2))}},
			"93 cb41da3054981000 00 91 93 ac 426c6f636b52656d6f766564 91 cff0e1d2c3b4a59687 a3 475055 00"},
		{"E3", pubCmd{Op: "emit", Events: []pubEvent{e3}}, `93 cb41da3054981000 00 91 9c ab 426c6f636b53746f726564
			91 cff0e1d2c3b4a59687 cf1111111111111111 94 cc80 ccff cd0100 ce00010000 04
			c0 a3 475055 c0 91 c0 00 ae 66756c6c5f617474656e74696f6e c0 00`},
		{"E4", pubCmd{Op: "emit", Form: "map", Events: []pubEvent{
			stored([]pubHash{hu(h1)}, nil, []uint32{1, 2, 3, 4}, 4).with("group_idx", int64(0)),
			removed(hu(h1)), cleared()}}, `93 cb41da3054981000 00 93
			89 a4 74797065 ab 426c6f636b53746f726564 ac 626c6f636b5f686173686573 91 cf1111111111111111
			b1 706172656e745f626c6f636b5f68617368 c0 a9 746f6b656e5f696473 94 01020304
			aa 626c6f636b5f73697a65 04 a7 6c6f72615f6964 c0 a6 6d656469756d a3 475055
			a9 6c6f72615f6e616d65 c0 a9 67726f75705f696478 00
			83 a4 74797065 ac 426c6f636b52656d6f766564 ac 626c6f636b5f686173686573 91 cf1111111111111111 a6 6d656469756d a3 475055
			81 a4 74797065 b0 416c6c426c6f636b73436c6561726564 00`},
		{"E5", pubCmd{Op: "emit", Events: []pubEvent{e5}, NoRank: true},
			"93 cb41da3054981000 00 91 97 ab 426c6f636b53746f726564 91 ff c0 92 07 08 02 c0 a3 475055 c0"},
		{"E6", pubCmd{Op: "emit", Form: "map", Events: []pubEvent{removed(hbin(bin32))}},
			"93 cb41da3054981000 00 91 83 a4 74797065 ac 426c6f636b52656d6f766564 ac 626c6f636b5f686173686573 91 c4 20 " +
				hex.EncodeToString(bin32) + " a6 6d656469756d a3 475055 00"},
		{"map-batch-rank", pubCmd{Op: "emit", Batch: "map", Rank: new(int64(3)), Events: []pubEvent{storeCmd(2).Events[0]}}, ""},
		{"mixed-forms", pubCmd{Op: "emit", Events: []pubEvent{storeCmd(1).Events[0], {Type: "AllBlocksCleared", Form: "map"},
			{Type: "Future", Fields: []field{{"x", int64(-300)}, {"y", strings.Repeat("s", 40)}}}}}, ""},
		{"raw", pubCmd{Op: "emit", Payload: []byte{0x90}}, ""},
	}
	for _, c := range cases {
		got := py.do(c.cmd).Payload
		if want := hex.EncodeToString(encodeBatch(c.cmd, 0)); got != want {
			t.Errorf("%s: python %s, go %s", c.name, got, want)
		}
		if c.spec != "" && got != hex.EncodeToString(unhex(c.spec)) {
			t.Errorf("%s: python %s, spec %x", c.name, got, unhex(c.spec))
		}
	}
}

// TestConnectBeforePublisher: the subscriber starts first and backs off
// until the publisher binds.
func TestConnectBeforePublisher(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	port := freePort(t)
	e := newEnv(t, Source{Name: "a", Endpoint: fmt.Sprintf("tcp://127.0.0.1:%d", port)}, testOptions(t))
	e.waitFor("dial failures", func() bool { return e.status().DialFailures >= 3 })
	p := startGoPublisher(t, pubConfig{PubPort: port, NoReplay: true})
	defer p.close()
	p.do(awaitSub)
	e.publish(p, storeCmd(0))
	e.settle(1)
	e.stop()
	e.checkRecorded()
	noStale(t, e.checkIdeal(e.published, e.streams))
	if s := e.status(); s.Connects != 1 || s.Reconnects != 0 {
		t.Errorf("status %+v", s)
	}
}

// TestTwoSources: one subscriber, a Go and a Python publisher, each
// losing a batch; both streams heal independently.
func TestTwoSources(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	pypub.Require(t)
	pubs := []publisher{startGoPublisher(t, pubConfig{Topic: "kv@go@m"}), startPyPublisher(t, pubConfig{Topic: "kv@py@m", Layout: 3, Rank: 2})}
	for _, p := range pubs {
		defer p.close()
	}
	sources := []Source{sourceFor(pubs[0], "kv@"), sourceFor(pubs[1], "kv@")}
	sources[1].Name, sources[1].Rank = "src-b", 2
	streams := Streams(sources)
	inner, err := ref.NewKVEvIndex(spec.KVEvConfig{}, streams)
	if err != nil {
		t.Fatal(err)
	}
	ix := &recIndex{KVEvIndex: inner}
	sub, err := New(ix, sources, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- sub.Run(ctx) }()
	var ideal []spec.KVEvStep
	for _, p := range pubs {
		p.do(awaitSub)
	}
	for k := range 6 {
		for i, p := range pubs {
			c := storeCmd(k)
			if k == 3 {
				c = lose(c)
			}
			a := p.do(c)
			payload, _ := hex.DecodeString(a.Payload)
			ideal = append(ideal, spec.KVEvStep{Op: spec.KVStepLive, Stream: sources[i].Name,
				Frames: []spec.HexBytes{[]byte(p.topic()), binary.BigEndian.AppendUint64(nil, a.Seq), payload}})
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		st := ix.State()
		if st.Streams[0].Next == 6 && st.Streams[1].Next == 6 && !st.Streams[0].Replaying && !st.Streams[1].Replaying {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("streams did not settle: %+v; calls %s", st.Streams, ix.ops())
		}
		time.Sleep(2 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want, err := ref.KVEvApply(spec.DefaultLimits(), spec.KVEvApplyInput{Streams: streams, Steps: ideal})
	if err != nil {
		t.Fatal(err)
	}
	got := ix.State()
	if got.Digest != want.State.Digest {
		t.Errorf("digest %s, want %s", got.Digest, want.State.Digest)
	}
	rec, err := ref.KVEvApply(spec.DefaultLimits(), spec.KVEvApplyInput{Streams: streams, Steps: ix.script()})
	if err != nil {
		t.Fatal(err)
	}
	if rec.State.Digest != got.Digest {
		t.Errorf("digest %s, recorded script's %s", got.Digest, rec.State.Digest)
	}
	if len(got.Engines) != 2 || got.Engines[0].Source != "go" || got.Engines[1].Source != "py" || got.Engines[1].DPRank != 2 {
		t.Errorf("engines %+v", got.Engines)
	}
	for i, s := range sub.Status() {
		if s.ReplaysOK != 1 || s.Name != sources[i].Name {
			t.Errorf("status %+v", s)
		}
	}
}

// TestRestartSignal: an operator's restart drops the stream's engines and
// abandons an outstanding replay; replies of the abandoned replay are never
// passed to the index.
func TestRestartSignal(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	p := startGoPublisher(t, pubConfig{Sentinel: "none"})
	defer p.close()
	e := newEnv(t, sourceFor(p, ""), testOptions(t))
	if err := e.sub.Restart("nope"); err == nil {
		t.Error("Restart of an unknown source: want an error")
	}
	p.do(awaitSub)
	e.publish(p, storeCmd(0))
	e.publish(p, lose(storeCmd(1)))
	e.publish(p, storeCmd(2))
	e.waitFor("the replay's replies", func() bool { return e.status().ReplayReplies == 2 && e.status().Replaying })
	if err := e.sub.Restart("src-a"); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the restart", func() bool { return e.stream().Counters.Restarts == 1 })
	// After the restart the cursor is unknown: seq 3 is a first message
	// and the cold-start replay from 0 refills the engines.
	p.setSentinel("empty")
	e.publish(p, storeCmd(3))
	e.settle(4)
	e.stop()
	e.checkRecorded()
	noStale(t, e.checkIdeal(e.published, e.streams))
	if got, want := e.ix.ops(), "live:0h live:2h replay:1h replay:2h restart live:3h replay:0h replay:1h replay:2h replay:3h replay:end "; got != want {
		t.Errorf("calls %q, want %q", got, want)
	}
	if s := e.status(); s.Replaying || s.ReplaysFailed != 0 || s.ReplaysOK != 1 || s.ReplayRequests != 2 {
		t.Errorf("status %+v", s)
	}
}

// TestDroppedSeqUnrecoverable: a seq the publisher consumed without sending
// or buffering (vLLM's encode/send error) is not in the replay either: the
// first replayed seq is past the start, the loss is final and the engines
// go stale, while the later batches still apply.
func TestDroppedSeqUnrecoverable(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	forEachPublisher(t, func(t *testing.T, start func(testing.TB, pubConfig) publisher) {
		p := start(t, pubConfig{Layout: 3})
		defer p.close()
		e := newEnv(t, sourceFor(p, ""), testOptions(t))
		p.do(awaitSub)
		e.publish(p, storeCmd(0))
		if a := p.do(pubCmd{Op: "drop"}); a.Seq != 1 {
			t.Fatalf("drop took seq %d", a.Seq)
		}
		e.publish(p, storeCmd(2))
		e.settle(3)
		e.stop()
		e.checkRecorded()
		// The ideal subscriber without replay sees the same loss.
		noReplay := []spec.KVEvStream{{Name: e.src.Name}}
		st := e.checkIdeal(e.published, noReplay)
		if s := staleEngines(st); !slices.Equal(s, []string{"src-a"}) {
			t.Errorf("stale %v, want [src-a]", s)
		}
		if got, want := e.ix.ops(), "live:0h live:2h replay:2h replay:end "; got != want {
			t.Errorf("calls %q, want %q", got, want)
		}
		if c := st.Streams[0].Counters; c.Gaps != 1 || c.GapBatchesLost != 1 || c.ReplaysOK != 1 {
			t.Errorf("counters %+v", c)
		}
	})
}

// TestReplayBufferExpired: the publisher keeps only its last N batches; a
// replay that starts before them loses the rest (stale) and applies what
// the buffer still has.
func TestReplayBufferExpired(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	forEachPublisher(t, func(t *testing.T, start func(testing.TB, pubConfig) publisher) {
		p := start(t, pubConfig{Buffer: 2})
		defer p.close()
		e := newEnv(t, sourceFor(p, ""), testOptions(t))
		p.do(awaitSub)
		e.publish(p, storeCmd(0))
		for k := 1; k <= 3; k++ {
			e.publish(p, lose(storeCmd(k)))
		}
		e.publish(p, storeCmd(4))
		e.settle(5)
		e.stop()
		e.checkRecorded()
		if got, want := e.ix.ops(), "live:0h live:4h replay:3h replay:4h replay:end "; got != want {
			t.Errorf("calls %q, want %q", got, want)
		}
		st := e.ix.State()
		if s := staleEngines(st); !slices.Equal(s, []string{"src-a"}) {
			t.Errorf("stale %v, want [src-a]", s)
		}
		if c := st.Streams[0].Counters; c.GapBatchesLost != 2 {
			t.Errorf("counters %+v, want 2 batches lost", c)
		}
	})
}
