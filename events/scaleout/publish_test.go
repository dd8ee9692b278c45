package scaleout

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// simPublisher is a publisher stream as the relay's index sees it through
// the subscriber: live messages (some lost on the way, as past a PUB
// high-water mark), a replay buffer, restarts.
type simPublisher struct {
	topic []byte
	seq   uint64
	buf   []heldMsg
	keep  int
	gen   *gen
	rng   *rand.Rand
}

func (p *simPublisher) emit() heldMsg {
	h := heldMsg{seq: p.seq, topic: p.topic, payload: p.gen.batch(1 + p.rng.IntN(4))}
	p.seq++
	p.buf = append(p.buf, h)
	if len(p.buf) > p.keep {
		p.buf = p.buf[len(p.buf)-p.keep:]
	}
	return h
}

func (p *simPublisher) restart() {
	p.seq, p.buf = 0, nil
	p.gen.reset()
}

// replies answers a replay request from start, as vLLM's ROUTER does, in
// the 2- or 3-frame layout, then the sentinel.
func (p *simPublisher) replies(start uint64, layout3 bool) [][][]byte {
	var out [][][]byte
	end := binary.BigEndian.AppendUint64(nil, math.MaxUint64)
	for _, h := range p.buf {
		if h.seq >= start {
			seq := binary.BigEndian.AppendUint64(nil, h.seq)
			if layout3 {
				out = append(out, [][]byte{{}, h.topic, seq, h.payload})
			} else {
				out = append(out, [][]byte{{}, seq, h.payload})
			}
		}
	}
	if layout3 {
		return append(out, [][]byte{{}, {}, end, {}})
	}
	return append(out, [][]byte{{}, end, {}})
}

func liveFrames(h heldMsg) [][]byte {
	return [][]byte{h.topic, binary.BigEndian.AppendUint64(nil, h.seq), h.payload}
}

// capture is a publishFunc that keeps what it is given.
type capture struct{ msgs []*nats.Msg }

func (c *capture) publish(_ context.Context, m *nats.Msg) (*jetstream.PubAck, error) {
	c.msgs = append(c.msgs, m)
	return &jetstream.PubAck{Sequence: uint64(len(c.msgs))}, nil
}

// relaySim drives a relay index (pubIndex over the fast twin) the way
// events/zmq does, from simulated publishers with lost messages, replays that
// succeed, come back short or fail, publisher and operator restarts, and
// returns the relay's index and what it published.
func relaySim(t *testing.T, seed uint64, steps, maxHeld int) (spec.KVEvIndex, []spec.KVEvStream, *capture, *pubIndex) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	streams := []spec.KVEvStream{
		{Name: "pod-a", Replay: true},
		{Name: "b.1", Rank: 2, Replay: true},
		{Name: "c", Replay: false},
	}
	two := int64(2)
	pubs := map[string]*simPublisher{
		"pod-a": {topic: []byte("kv@pod-a@llama"), keep: 5 + rng.IntN(40), gen: newGen(seed*3+1, 4, new(int64), 60), rng: rng},
		"b.1":   {topic: nil, keep: 5 + rng.IntN(40), gen: newGen(seed*3+2, 4, nil, 60), rng: rng},
		"c":     {topic: []byte("x"), keep: 10, gen: newGen(seed*3+3, 4, &two, 60), rng: rng},
	}
	for _, p := range pubs {
		p.gen.clearOdds = 400
	}
	inner, err := fast.NewKVEvIndex(spec.KVEvConfig{MaxHeld: maxHeld}, streams)
	if err != nil {
		t.Fatal(err)
	}
	o, err := RelayOptions{URL: "nats://unused:4222"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	o.Logger = testLogger(t)
	px := newPubIndex(inner, o, streams)
	c := &capture{}
	px.start(context.Background(), c.publish, 0)

	pending := map[string][][][]byte{} // replies still to deliver, by stream
	onResult := func(name string, r spec.KVEvStepResult) {
		for len(r.ReplayRequest) > 0 {
			start := binary.BigEndian.Uint64(r.ReplayRequest[1])
			if rng.IntN(10) == 0 {
				// unavailable (cooldown, connect failure)
				delete(pending, name)
				r = px.ReplayFailed(name, spec.ReplayReasonUnavailable)
				continue
			}
			pending[name] = pubs[name].replies(start, rng.IntN(2) == 0)
			return
		}
	}
	names := []string{"pod-a", "b.1", "c"}
	for range steps {
		name := names[rng.IntN(len(names))]
		p := pubs[name]
		switch x := rng.IntN(1000); {
		case len(pending[name]) > 0 && x < 450:
			q := pending[name]
			if rng.IntN(40) == 0 {
				delete(pending, name)
				onResult(name, px.ReplayFailed(name, spec.ReplayReasonTimeout))
				continue
			}
			pending[name] = q[1:]
			r := px.Replay(name, q[0])
			if r.ReplayDone || len(pending[name]) == 0 {
				delete(pending, name)
			}
			onResult(name, r)
		case x < 930:
			h := p.emit()
			if rng.IntN(12) == 0 {
				continue // lost on the way
			}
			onResult(name, px.Live(name, liveFrames(h)))
		case x < 945:
			onResult(name, px.Live(name, [][]byte{[]byte("bad")})) // malformed
		case x < 985:
			p.restart()
		default:
			delete(pending, name)
			onResult(name, px.Restart(name))
		}
	}
	for _, name := range names {
		if _, ok := pending[name]; ok {
			onResult(name, px.ReplayFailed(name, spec.ReplayReasonTimeout))
		}
		for i := 0; i < 10 && inner.State().Streams[slices.IndexFunc(names, func(s string) bool { return s == name })].Replaying; i++ {
			onResult(name, px.ReplayFailed(name, spec.ReplayReasonTimeout))
		}
	}
	return inner, streams, c, px
}

// replicaOf applies published messages the way a replica does, to a fresh
// index of the given twin.
func replicaOf(t *testing.T, newIx spec.NewKVEvIndexFunc, streams []spec.KVEvStream, msgs []*nats.Msg) spec.KVEvIndex {
	t.Helper()
	rs := make([]spec.KVEvStream, len(streams))
	for i, s := range streams {
		rs[i] = spec.KVEvStream{Name: Token(s.Name), Rank: s.Rank}
	}
	ix, err := newIx(spec.KVEvConfig{}, rs)
	if err != nil {
		t.Fatal(err)
	}
	ap := newApplier(ix, slog.New(slog.DiscardHandler), rs)
	for i, m := range msgs {
		w, err := parseWire(m.Subject, m.Header, m.Data)
		if err != nil {
			t.Fatalf("published message %d: %v", i, err)
		}
		ap.apply(w)
	}
	return ix
}

type engineFlags struct {
	Source     string
	DPRank     int64
	Stale      bool
	StaleSince uint64
	Pools      []spec.KVEvPoolState
}

func engines(ix spec.KVEvIndex, rename map[string]string) []engineFlags {
	var out []engineFlags
	for _, e := range ix.State().Engines {
		src := e.Source
		if n, ok := rename[src]; ok {
			src = n
		}
		out = append(out, engineFlags{src, e.DPRank, e.Stale, e.StaleSince, e.Pools})
	}
	return out
}

// TestRelayPublishesWhatItApplies: whatever the relay's index does with
// lost messages, replays (complete, short, failed), publisher restarts seen
// in a drain and operator restarts, a replica applying what the relay
// published reaches the relay's index exactly: same engines, pools, stale
// flags and stale seqs (and the same digest where engine names agree).
func TestRelayPublishesWhatItApplies(t *testing.T) {
	seeds := 60
	if testing.Short() || raceEnabled {
		seeds = 12
	}
	var resets, published, gaps int
	for seed := range uint64(seeds) {
		inner, streams, c, _ := relaySim(t, seed, 1500, 10000)
		checkWire(t, c.msgs)
		rename := map[string]string{"b_1": "b.1"} // a replica's stream is the token
		for _, twin := range []struct {
			name string
			f    spec.NewKVEvIndexFunc
		}{{"fast", fast.NewKVEvIndex}, {"ref", ref.NewKVEvIndex}} {
			rep := replicaOf(t, twin.f, streams, c.msgs)
			if d := cmp.Diff(engines(inner, nil), engines(rep, rename)); d != "" {
				t.Fatalf("seed %d: %s replica differs from the relay's index (-relay +replica):\n%s", seed, twin.name, d)
			}
		}
		for _, m := range c.msgs {
			switch {
			case m.Header.Get(HeaderReset) != "":
				resets++
			case m.Header.Get(HeaderGap) != "":
				gaps++
				published++
			default:
				published++
			}
		}
	}
	t.Logf("%d seeds: %d batches published (%d flagged Kvtwin-Gap), %d resets", seeds, published, gaps, resets)
	if resets == 0 || gaps == 0 {
		t.Fatal("the simulation never restarted or never lost history")
	}
}

// checkWire: per source, batches of one epoch have increasing seqs, every
// epoch after the first opens with its reset, Msg-Ids are unique.
func checkWire(t *testing.T, msgs []*nats.Msg) {
	t.Helper()
	ids := map[string]bool{}
	type cur struct {
		epoch    uint64
		seq      uint64
		seqValid bool
	}
	by := map[string]*cur{}
	for i, m := range msgs {
		id := m.Header.Get(nats.MsgIdHdr)
		if ids[id] {
			for j := max(0, i-12); j <= i; j++ {
				t.Logf("%d: %s %v", j, msgs[j].Subject, msgs[j].Header)
			}
			t.Fatalf("message %d: Msg-Id %s twice", i, id)
		}
		ids[id] = true
		w, err := parseWire(m.Subject, m.Header, m.Data)
		if err != nil {
			t.Fatal(err)
		}
		c := by[w.token]
		if c == nil {
			c = &cur{epoch: w.epoch}
			by[w.token] = c
			if w.reset {
				continue
			}
		}
		switch {
		case w.reset:
			if w.epoch != c.epoch+1 {
				t.Fatalf("message %d: reset to epoch %d after epoch %d", i, w.epoch, c.epoch)
			}
			*c = cur{epoch: w.epoch}
		case w.epoch != c.epoch:
			t.Fatalf("message %d: batch of epoch %d without its reset (epoch %d)", i, w.epoch, c.epoch)
		case c.seqValid && w.seq <= c.seq:
			t.Fatalf("message %d: seq %d after %d in epoch %d", i, w.seq, c.seq, w.epoch)
		default:
			c.seq, c.seqValid = w.seq, true
		}
		if want := fmt.Sprintf("%s.%d.", w.token, w.epoch); id[:len(want)] != want {
			t.Fatalf("message %d: Msg-Id %s: want prefix %s", i, id, want)
		}
	}
}

// TestRelayHeldOverflow: a live message the index drops while replaying
// (its hold queue full, A7) makes the relay's own index stale; the relay
// flags the first batch published after it with Kvtwin-Gap. When a later
// replay brings the dropped batches back, the replicas have every batch and
// stay fresh: the relay's index is only its cursor, no one scores it.
func TestRelayHeldOverflow(t *testing.T) {
	streams := []spec.KVEvStream{{Name: "s", Replay: true}}
	inner, err := fast.NewKVEvIndex(spec.KVEvConfig{MaxHeld: 2}, streams)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := RelayOptions{URL: "nats://x:1"}.withDefaults()
	px := newPubIndex(inner, o, streams)
	c := &capture{}
	px.start(context.Background(), c.publish, 0)
	p := &simPublisher{topic: []byte("t"), keep: 100, gen: newGen(1, 4, new(int64), 50), rng: rand.New(rand.NewPCG(1, 1))}
	var hs []heldMsg
	for range 6 {
		hs = append(hs, p.emit())
	}
	replay := func(r spec.KVEvStepResult, upTo uint64) {
		t.Helper()
		if len(r.ReplayRequest) == 0 {
			t.Fatalf("no replay request: %+v", r)
		}
		for _, f := range p.replies(binary.BigEndian.Uint64(r.ReplayRequest[1]), false) {
			if s := binary.BigEndian.Uint64(f[1]); s != math.MaxUint64 && s > upTo {
				continue
			}
			px.Replay("s", f)
		}
	}
	r := px.Live("s", liveFrames(hs[1]))       // gap [0,1): held, replay from 0
	px.Live("s", liveFrames(hs[2]))            // held: 2 of 2
	px.Live("s", liveFrames(hs[3]))            // dropped: queue full
	px.Live("s", liveFrames(hs[4]))            // dropped
	replay(r, 0)                               // 0 replayed; 1, 2 drained
	replay(px.Live("s", liveFrames(hs[5])), 4) // gap [3,5): 3, 4 replayed, 5 drained
	var got []string
	for _, m := range c.msgs {
		got = append(got, m.Header.Get(HeaderSeq)+":"+m.Header.Get(HeaderGap))
	}
	if want := []string{"0:", "1:", "2:", "3:", "4:", "5:1"}; !slices.Equal(got, want) {
		t.Fatalf("published seq:gap %v, want %v", got, want)
	}
	if st := px.streams["s"].st; st.HeldOverflow != 2 {
		t.Fatalf("held overflow %d, want 2", st.HeldOverflow)
	}
	if e := inner.State().Engines; len(e) != 1 || !e[0].Stale || e[0].StaleSince != 3 {
		t.Fatalf("relay index engines %+v: want one, stale since 3 (the first seq dropped)", e)
	}
	rep := replicaOf(t, fast.NewKVEvIndex, streams, c.msgs)
	if e := rep.State().Engines; len(e) != 1 || e[0].Stale {
		t.Fatalf("replica engines %+v: want one, fresh", e)
	}
}
