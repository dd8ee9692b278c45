package scaleout

import (
	"context"
	"encoding/binary"
	"log/slog"
	"math/rand/v2"
	"testing"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/spec"
)

// TestRelayAndReplicasRefuseAMessagePastItsBoundsAlike: the relay's index
// decodes under RelayOptions.Index's bounds of one message (spec §2.10
// A10), so a batch past max_events is refused there (the source's engine
// goes stale), published all the same (§4.4: replicas decide for
// themselves), and a replica built with the same bounds refuses it alike.
func TestRelayAndReplicasRefuseAMessagePastItsBoundsAlike(t *testing.T) {
	streams := []spec.KVEvStream{{Name: "s"}}
	cfg := spec.KVEvConfig{MaxEvents: 2}
	inner, err := fast.NewKVEvIndex(cfg, streams)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := RelayOptions{URL: "nats://x:1"}.withDefaults()
	px := newPubIndex(inner, o, streams)
	c := &capture{}
	px.start(context.Background(), c.publish, 0)
	seqf := func(s uint64) []byte { return binary.BigEndian.AppendUint64(nil, s) }
	ts := []byte{0xcb, 0x41, 0xda, 0x30, 0x54, 0x98, 0x10, 0x00, 0x00}
	cleared := []byte{0x91, 0xb0, 'A', 'l', 'l', 'B', 'l', 'o', 'c', 'k', 's', 'C', 'l', 'e', 'a', 'r', 'e', 'd'}
	batch := func(n int) []byte {
		b := append(append([]byte{0x93}, ts...), 0x90+byte(n))
		for range n {
			b = append(b, cleared...)
		}
		return append(b, 0x00)
	}
	px.Live("s", [][]byte{[]byte("t"), seqf(0), batch(2)})
	r := px.Live("s", [][]byte{[]byte("t"), seqf(1), batch(3)})
	if len(r.Errors) != 1 || r.Errors[0].Error.Code != spec.ErrMessageBudget.Code() {
		t.Fatalf("the relay's index: %+v, want batch 1 refused with message_budget", r)
	}
	if len(c.msgs) != 2 {
		t.Fatalf("%d messages published, want both batches", len(c.msgs))
	}
	rs := []spec.KVEvStream{{Name: Token("s")}}
	rep, err := fast.NewKVEvIndex(cfg, rs)
	if err != nil {
		t.Fatal(err)
	}
	ap := newApplier(rep, slog.New(slog.DiscardHandler), rs)
	for i, m := range c.msgs {
		w, err := parseWire(m.Subject, m.Header, m.Data)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		ap.apply(w)
	}
	if got, want := rep.State(), inner.State(); got.Digest != want.Digest || got.Streams[0].Counters.DecodeErrors != 1 || !got.Engines[0].Stale {
		t.Fatalf("replica %+v\nrelay %+v: want the same refusal", got, want)
	}
}

// TestRelayHeldBytesOverflowIsMirrored: a live message dropped because the
// hold queue's bytes would pass max_held_bytes (A7) is handled by the relay
// like a count overflow: counted, and the first batch published after it
// carries Kvtwin-Gap.
func TestRelayHeldBytesOverflowIsMirrored(t *testing.T) {
	streams := []spec.KVEvStream{{Name: "s", Replay: true}}
	p := &simPublisher{topic: []byte("t"), keep: 100, gen: newGen(1, 4, new(int64), 50), rng: rand.New(rand.NewPCG(1, 1))}
	var hs []heldMsg
	for range 4 {
		hs = append(hs, p.emit())
	}
	size := func(h heldMsg) int64 { return int64(len(h.topic) + 8 + len(h.payload)) }
	inner, err := fast.NewKVEvIndex(spec.KVEvConfig{MaxHeldBytes: size(hs[1]) + size(hs[2])}, streams)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := RelayOptions{URL: "nats://x:1"}.withDefaults()
	px := newPubIndex(inner, o, streams)
	c := &capture{}
	px.start(context.Background(), c.publish, 0)
	r := px.Live("s", liveFrames(hs[1])) // gap [0,1): held, replay from 0
	px.Live("s", liveFrames(hs[2]))      // held: the queue's bytes are full
	if d := px.Live("s", liveFrames(hs[3])); d.Held != 2 {
		t.Fatalf("hold queue %d, want 2 (3 dropped)", d.Held)
	}
	for _, f := range p.replies(binary.BigEndian.Uint64(r.ReplayRequest[1]), false) {
		if s := binary.BigEndian.Uint64(f[1]); s == 0 || len(f[2]) == 0 {
			px.Replay("s", f)
		}
	}
	if st := px.streams["s"].st; st.HeldOverflow != 1 {
		t.Fatalf("held overflow %d, want 1", st.HeldOverflow)
	}
	if e := inner.State().Engines; len(e) != 1 || !e[0].Stale || e[0].StaleSince != 3 {
		t.Fatalf("relay index engines %+v: want one, stale since 3", e)
	}
}
