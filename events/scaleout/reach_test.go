package scaleout

import (
	"log/slog"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestReachBatchRedeliveredAtTheSameSeqThroughTheApplier is the JetStream
// applier's side of a reach class of issue 30 item 7 (the event-fed
// index's side is equiv/mutants' TestReachBatchRedeliveredAtTheSameSeq):
// a relayed batch that comes again at the (epoch, seq) it was applied at
// (a publish retried past JetStream's duplicate window, so it has a new
// stream sequence) is a duplicate, dropped before the index sees it
// (docs/spec/kv-events.md §4.4: "a batch at or below the last seq of its
// epoch is a duplicate"); handed to the index it would be a live seq
// repeat, a publisher restart that drops every pool (§3.1 step 2). So is a
// reset at the epoch already entered ("one with the same epoch is a
// duplicate"). Every batch here is redelivered, the last one of its epoch
// included, through both twins' indexes.
func TestReachBatchRedeliveredAtTheSameSeqThroughTheApplier(t *testing.T) {
	g := newGen(7, 4, new(int64), 50)
	var b [4][]byte
	for i := range b {
		if i == 2 {
			g.reset() // the restarted publisher starts with an empty cache
		}
		b[i] = g.batch(3)
	}
	// Epoch 0 carries batches 0 and 1 at seqs 0 and 1; the publisher
	// restarts (epoch 1) and its batches 2 and 3 come at seqs 0 and 1.
	batch := func(i int) *nats.Msg {
		return batchMsg("src", 0, uint64(i/2), uint64(i%2), false, []byte("kv@pod@m"), b[i])
	}
	once := []*nats.Msg{batch(0), batch(1), resetMsg("src", 0, 1), batch(2), batch(3)}
	// The reset comes again at once and again after epoch 1's first batch.
	twice := []*nats.Msg{batch(0), batch(0), batch(1), batch(1), resetMsg("src", 0, 1), resetMsg("src", 0, 1),
		batch(2), batch(2), resetMsg("src", 0, 1), batch(3), batch(3)}
	for twin, newIx := range map[string]spec.NewKVEvIndexFunc{"ref": ref.NewKVEvIndex, "fast": fast.NewKVEvIndex} {
		want, _ := applyRelayed(t, newIx, once)
		got, st := applyRelayed(t, newIx, twice)
		if got.Digest() != want.Digest() {
			t.Errorf("%s: the index after every message twice differs from the index after each once:\n%+v\nwant\n%+v", twin, engines(got, nil), engines(want, nil))
		}
		if c := st.Counters; c.Duplicates != 6 || c.Batches != 4 || c.Resets != 1 {
			t.Errorf("%s: counters %+v, want 6 duplicates, 4 batches and 1 reset applied", twin, c)
		}
		for _, e := range got.State().Engines {
			if e.Stale {
				t.Errorf("%s: engine %s/%d stale after redeliveries, which lose nothing", twin, e.Source, e.DPRank)
			}
		}
	}
}

// applyRelayed applies msgs as a replica does, to a fresh index of one
// source "src", and returns the index and the source's state.
func applyRelayed(t *testing.T, newIx spec.NewKVEvIndexFunc, msgs []*nats.Msg) (spec.KVEvIndex, SourceState) {
	t.Helper()
	rs := []spec.KVEvStream{{Name: "src"}}
	ix, err := newIx(spec.KVEvConfig{}, rs)
	if err != nil {
		t.Fatal(err)
	}
	ap := newApplier(ix, slog.New(slog.DiscardHandler), rs)
	for i, m := range msgs {
		w, err := parseWire(m.Subject, m.Header, m.Data)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if !ap.apply(w) {
			t.Fatalf("message %d was for no source", i)
		}
	}
	return ix, ap.states([]string{"src"})[0]
}
