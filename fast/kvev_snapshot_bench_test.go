package fast

import (
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

// BenchmarkKVEvSnapshot writes and restores the snapshot of an index of
// 1M 16-token blocks (64K with -short) on both twins' restores: encode is
// fast's Snapshot, restore-fast and restore-ref build an index from the
// bytes (decoding and A12's checks included). bytes/block is the size.
func BenchmarkKVEvSnapshot(b *testing.B) {
	blocks := 1 << 20
	if testing.Short() {
		blocks = 1 << 16
	}
	ix, cfg := kxSnapshotIndex(b, blocks)
	snap, err := ix.(spec.KVEvSnapshotter).Snapshot(1)
	if err != nil {
		b.Fatal(err)
	}
	size := float64(len(snap)) / float64(blocks)
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			if _, err := ix.(spec.KVEvSnapshotter).Snapshot(1); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(size, "bytes/block")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(blocks), "ns/block")
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
			b.ReportMetric(size, "bytes/block")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(blocks), "ns/block")
		})
	}
}
