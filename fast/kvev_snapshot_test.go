package fast

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// kxChurn is a deterministic feed of live messages for 4 engines: chains
// of 16-token pages stored under two namespaces (shared prefixes, so
// pages have several children), some pages bound to a second hash,
// removals that prune and free slots (which later stores reuse), and an
// occasional AllBlocksCleared.
func kxChurn(n int) [][][]byte {
	rng := rand.New(rand.NewPCG(7, 11))
	var out [][][]byte
	var stored [4][]uint64
	ns := []string{"", "lora-a"}
	for i := range n {
		pod := i % 4
		topic := fmt.Sprintf("kv@pod-%d@m", pod)
		var ev kxMp
		switch r := rng.IntN(400); {
		case r < 300 || len(stored[pod]) == 0:
			k := 1 + rng.IntN(6)
			hs := make([]uint64, k)
			toks := make([]uint32, 16*k)
			for j := range hs {
				hs[j] = uint64(i)<<8 | uint64(j) | 1<<62
			}
			for j := range toks {
				toks[j] = uint32(rng.IntN(3)) // few distinct tokens: siblings share prefixes
			}
			o := kxEvOpt{}
			if rng.IntN(2) == 0 {
				o.loraName = &ns[1]
			}
			ev = kxEvStored(hs, nil, toks, 16, o)
			stored[pod] = append(stored[pod], hs...)
		case r < 399:
			k := min(len(stored[pod]), 1+rng.IntN(8))
			ev = kxEvRemoved(stored[pod][:k], kxEvOpt{})
			stored[pod] = stored[pod][k:]
		default:
			ev = kxEvCleared()
			stored[pod] = nil
		}
		out = append(out, kxLiveFrames(topic, uint64(i), kxBatch(nil, ev)))
	}
	return out
}

// TestFastFrozenSnapshotIsTheFreezePointUnderChurn: the fast index,
// frozen after 3,000 messages of kxChurn and fed 3,000 more on another
// goroutine while the frozen state is encoded three times at once (pages
// pruned, slots freed and reused, pools cleared and regrown under the
// encoders), encodes exactly an index stopped at the freeze, the size it
// computes for its buffer being the snapshot's; the bytes restore on both
// twins (§2.10 A12).
func TestFastFrozenSnapshotIsTheFreezePointUnderChurn(t *testing.T) {
	msgs := kxChurn(6000)
	cut := len(msgs) / 2
	stopped := kxNewTestIx(t, spec.KVEvConfig{}, fault.KVEv{}, spec.KVEvStream{Name: "s"})
	ix := kxNewTestIx(t, spec.KVEvConfig{}, fault.KVEv{}, spec.KVEvStream{Name: "s"})
	for i, m := range msgs[:cut] {
		if r := stopped.Live("s", m); r.Error != nil {
			t.Fatalf("message %d: %+v", i, r)
		}
		ix.Live("s", m)
	}
	want, err := stopped.Snapshot(9)
	if err != nil {
		t.Fatal(err)
	}
	fz, err := ix.Freeze(9)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, m := range msgs[cut:] {
			ix.Live("s", m)
		}
	}()
	// Three encodings at once, beside the feed (spec.KVEvFrozen: any
	// number, from any goroutines).
	got := make([][]byte, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { got[i], errs[i] = fz.Encode() })
	}
	wg.Wait()
	<-done
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for i, b := range got {
		if !bytes.Equal(b, want) {
			t.Fatalf("encoding %d during the feed: %d bytes differ from the stopped index's %d", i, len(b), len(want))
		}
	}
	if n := fz.(*kvFrozen).size(); n != len(want) {
		t.Errorf("size() = %d for a %d-byte snapshot: Encode's buffer is not sized exactly", n, len(want))
	}
	if after, _ := ix.Snapshot(9); bytes.Equal(after, want) {
		t.Fatal("the feed after the freeze changed nothing: the test proves nothing")
	}
	for _, restore := range []spec.RestoreKVEvIndexFunc{RestoreKVEvIndex, ref.RestoreKVEvIndex} {
		rx, _, err := restore(spec.KVEvConfig{}, want)
		if err != nil || rx.Digest() != stopped.Digest() {
			t.Fatalf("restore: %v, or the digest differs", err)
		}
	}
	if len(stopped.State().Engines) != 4 {
		t.Fatalf("%d engines, want 4", len(stopped.State().Engines))
	}
}

// kxFailWriter accepts limit bytes, then fails.
type kxFailWriter struct{ limit, n int }

func (w *kxFailWriter) Write(p []byte) (int, error) {
	if w.n+len(p) > w.limit {
		return 0, fmt.Errorf("disk full after %d bytes", w.n)
	}
	w.n += len(p)
	return len(p), nil
}

// TestFastFrozenWriteToStopsAtTheWritersError: WriteTo returns the
// writer's first error and the bytes written before it, and writes
// nothing after it.
func TestFastFrozenWriteToStopsAtTheWritersError(t *testing.T) {
	ix := kxNewTestIx(t, spec.KVEvConfig{}, fault.KVEv{}, spec.KVEvStream{Name: "s"})
	for _, m := range kxChurn(3000) {
		ix.Live("s", m)
	}
	fz, _ := ix.Freeze(1)
	full, _ := fz.Encode()
	if len(full) < 3*kvSnapChunk {
		t.Fatalf("a %d-byte snapshot is too small to fail mid-way", len(full))
	}
	w := &kxFailWriter{limit: kvSnapChunk + 100}
	n, err := fz.WriteTo(w)
	if err == nil || n != int64(w.n) || w.n == 0 || w.n > w.limit {
		t.Fatalf("WriteTo = %d, %v; the writer took %d of its %d", n, err, w.n, w.limit)
	}
}

// TestFastSnapshotOfALargeHeldMessageIsRefs: a held message whose
// payload is larger than WriteTo's chunk (written straight from the held
// frame) is encoded as the reference encodes it (§2.10 A12, held frames).
func TestFastSnapshotOfALargeHeldMessageIsRefs(t *testing.T) {
	streams := []spec.KVEvStream{{Name: "s", Replay: true}}
	big := bytes.Repeat([]byte{0xc1}, 3*kvSnapChunk+5) // never decoded: held, not applied
	msgs := [][][]byte{
		kxLiveFrames("kv@pod@m", 0, kxBatch(nil, kxEvStored([]uint64{1, 2}, nil, make([]uint32, 32), 16, kxEvOpt{}))),
		kxLiveFrames("kv@pod@m", 5, big), // a gap: replay requested, this message held (A7)
		kxLiveFrames("kv@pod@m", 6, big),
	}
	var snaps [][]byte
	for _, build := range []spec.NewKVEvIndexFunc{NewKVEvIndex, ref.NewKVEvIndex} {
		ix, err := build(spec.KVEvConfig{}, streams)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			ix.Live("s", m)
		}
		if st := ix.State().Streams[0]; !st.Replaying || st.Held != 2 {
			t.Fatalf("stream %+v: want a replay outstanding with 2 messages held", st)
		}
		b, err := ix.(spec.KVEvSnapshotter).Snapshot(4)
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, b)
	}
	if !bytes.Equal(snaps[0], snaps[1]) {
		t.Fatalf("fast's %d bytes differ from ref's %d", len(snaps[0]), len(snaps[1]))
	}
}

// TestFastSnapshotCarriesAPendingResync: a heartbeat loss on a snapshot
// stream (A13) leaves resync set until the next live message; a snapshot
// taken then writes the flag as ref does, and both twins restore it.
func TestFastSnapshotCarriesAPendingResync(t *testing.T) {
	streams := []spec.KVEvStream{{Name: "s", Snapshot: true}}
	live := kxLiveFrames("kv@pod@m", 0, kxBatch(nil, kxEvStored([]uint64{1}, nil, make([]uint32, 16), 16, kxEvOpt{})))
	var snaps [][]byte
	for _, build := range []spec.NewKVEvIndexFunc{NewKVEvIndex, ref.NewKVEvIndex} {
		ix, err := build(spec.KVEvConfig{}, streams)
		if err != nil {
			t.Fatal(err)
		}
		ix.Live("s", live)
		ix.(spec.KVEvBootstrapper).HeartbeatLost("s")
		if st := ix.State().Streams[0]; !st.Resync {
			t.Fatalf("stream %+v: want resync after the heartbeat loss", st)
		}
		b, err := ix.(spec.KVEvSnapshotter).Snapshot(1)
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, b)
	}
	if !bytes.Equal(snaps[0], snaps[1]) {
		t.Fatalf("fast's %d bytes differ from ref's %d", len(snaps[0]), len(snaps[1]))
	}
	for _, restore := range []spec.RestoreKVEvIndexFunc{RestoreKVEvIndex, ref.RestoreKVEvIndex} {
		ix, _, err := restore(spec.KVEvConfig{}, snaps[1])
		if err != nil {
			t.Fatal(err)
		}
		if st := ix.State().Streams[0]; !st.Resync {
			t.Errorf("restored stream %+v: want resync", st)
		}
	}
}
