package fast

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// kxSnapshotIndex is an index of one engine holding blocks 16-token
// blocks: requests of 64 chained blocks, one BlockStored each.
func kxSnapshotIndex(tb testing.TB, blocks int) (spec.KVEvIndex, spec.KVEvConfig) {
	const perReq, bs = 64, 16
	cfg := spec.KVEvConfig{MaxTokensPerEngine: spec.MaxKVEvTokensPerEngine}
	ix, err := NewKVEvIndex(cfg, []spec.KVEvStream{{Name: "vllm-0"}})
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	toks := make([]uint32, perReq*bs)
	hs := make([]uint64, perReq)
	for req := range blocks / perReq {
		for i := range toks {
			toks[i] = rng.Uint32N(150000)
		}
		for i := range hs {
			hs[i] = uint64(req)<<32 | uint64(i) | 1<<63
		}
		seq := binary.BigEndian.AppendUint64(nil, uint64(req))
		p := kxBatch(new(int64(0)), kxEvStored(hs, nil, toks, bs, kxEvOpt{}))
		if r := ix.Live("vllm-0", [][]byte{[]byte("kv@pod@m"), seq, p}); r.Error != nil || len(r.Errors) > 0 {
			tb.Fatalf("request %d: %+v", req, r)
		}
	}
	return ix, cfg
}

// BenchmarkKVEvSnapshot takes, writes and restores the snapshot of an
// index of 1M 16-token blocks (64K with -short):
//
//   - freeze is Freeze, the ingest pause of a warm replica (§2.10 A12):
//     B/op is the frozen copy;
//   - encode is Encode of one frozen state, beside ingest: B/op is the
//     snapshot's bytes;
//   - snapshot is Snapshot, both together;
//   - snapshot-before is the Snapshot fast had before Freeze, kept here as
//     the baseline: under every lock, each engine's pages materialized as
//     spec structs (State's walk) and written by ref's encoder;
//   - restore-fast and restore-ref build an index from the bytes
//     (decoding and A12's checks included).
//
// bytes/block is the snapshot's size, ns/block each step's time.
func BenchmarkKVEvSnapshot(b *testing.B) {
	blocks := 1 << 20
	if testing.Short() {
		blocks = 1 << 16
	}
	ix, cfg := kxSnapshotIndex(b, blocks)
	fx := ix.(*kvIndex)
	snap, err := fx.Snapshot(1)
	if err != nil {
		b.Fatal(err)
	}
	size := float64(len(snap)) / float64(blocks)
	report := func(b *testing.B) {
		b.ReportAllocs()
		b.ReportMetric(size, "bytes/block")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(blocks), "ns/block")
	}
	b.Run("freeze", func(b *testing.B) {
		for b.Loop() {
			if _, err := fx.Freeze(1); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	fz, err := fx.Freeze(1)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			if _, err := fz.Encode(); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	fz = nil
	b.Run("snapshot", func(b *testing.B) {
		for b.Loop() {
			if _, err := fx.Snapshot(1); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	b.Run("snapshot-before", func(b *testing.B) {
		for b.Loop() {
			if old := kxSnapshotBefore(fx, 1); !bytes.Equal(old, snap) {
				b.Fatal("the old Snapshot's bytes differ from Freeze+Encode's")
			}
		}
		report(b)
	})
	for _, tw := range []struct {
		name    string
		restore spec.RestoreKVEvIndexFunc
	}{{"restore-fast", RestoreKVEvIndex}, {"restore-ref", ref.RestoreKVEvIndex}} {
		b.Run(tw.name, func(b *testing.B) {
			for b.Loop() {
				if _, _, err := tw.restore(cfg, snap); err != nil {
					b.Fatal(err)
				}
			}
			report(b)
		})
	}
}

// kxSnapshotBefore is fast's Snapshot as it was before Freeze (the
// baseline of BenchmarkKVEvSnapshot): every lock held for the whole
// encoding, the pages materialized as spec structs and written by ref's
// encoder.
func kxSnapshotBefore(ix *kvIndex, covers uint64) []byte {
	streams, release := ix.holdAll()
	defer release()
	c := spec.KVEvSnapshotContent{Covers: covers, Config: ix.cfg}
	for _, st := range streams {
		s := spec.KVEvSnapshotStream{
			Config:  spec.KVEvStream{Name: st.name, Rank: st.rank, Replay: st.replay},
			State:   st.state(),
			PastEnd: st.pastEnd,
		}
		for _, m := range st.held {
			s.Held = append(s.Held, m.frames)
		}
		c.Streams = append(c.Streams, s)
	}
	var d kvDigest
	for _, e := range *ix.sorted.Load() {
		e.mu.RLock()
		c.Engines = append(c.Engines, e.state(&d, kvStatePages))
		e.mu.RUnlock()
	}
	return ref.EncodeKVEvSnapshot(c)
}
