package fastcore

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
)

// kxStoredRing is a cycle of live payloads that returns the pool to empty:
// requests of 64 chained 16-token blocks stored 8 blocks per BlockStored
// batch, each request removed (one BlockRemoved of its 64 hashes) four
// requests later. blocks[i] is the blocks payload i stores.
func kxStoredRing(requests int) (payloads [][]byte, blocks []int) {
	const perReq, perMsg, bs, lag = 64, 8, 16, 4
	rng := rand.New(rand.NewPCG(1, 2))
	hashOf := func(req, blk int) uint64 { return uint64(req)<<32 | uint64(blk) | 1<<63 }
	remove := func(req int) {
		hs := make([]uint64, perReq)
		for i := range hs {
			hs[i] = hashOf(req, perReq-1-i)
		}
		payloads = append(payloads, kxBatch(new(int64(0)), kxEvRemoved(hs, kxEvOpt{})))
		blocks = append(blocks, 0)
	}
	for req := range requests {
		toks := make([]uint32, perReq*bs)
		for i := range toks {
			toks[i] = rng.Uint32N(150000)
		}
		for m := 0; m < perReq; m += perMsg {
			hs := make([]uint64, perMsg)
			for i := range hs {
				hs[i] = hashOf(req, m+i)
			}
			var parent *uint64
			if m > 0 {
				parent = new(hashOf(req, m-1))
			}
			payloads = append(payloads, kxBatch(new(int64(0)),
				kxEvStored(hs, parent, toks[m*bs:(m+perMsg)*bs], bs, kxEvOpt{medium: new("GPU")})))
			blocks = append(blocks, perMsg)
		}
		if req >= lag {
			remove(req - lag)
		}
	}
	for req := max(requests-lag, 0); req < requests; req++ {
		remove(req)
	}
	return payloads, blocks
}

// BenchmarkKVEvApplyStored is ingest through Live, decoding included, of
// chained BlockStored batches of 16-token blocks with removals: one op is
// one live message; blocks/s counts stored blocks.
func BenchmarkKVEvApplyStored(b *testing.B) {
	payloads, blocks := kxStoredRing(64)
	ix, err := newKVIndex(ref.KVEvConfig{}, []ref.KVEvStream{{Name: "vllm"}}, fault.KVEv{})
	if err != nil {
		b.Fatal(err)
	}
	topic := []byte("kv@10.0.0.7@llama")
	seq := make([]byte, 8)
	frames := [][]byte{topic, seq, nil}
	var s uint64
	stored := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := i % len(payloads)
		binary.BigEndian.PutUint64(seq, s)
		s++
		frames[2] = payloads[k]
		r := ix.Live("vllm", frames)
		if len(r.Errors) > 0 || r.Error != nil {
			b.Fatalf("%+v", r)
		}
		stored += blocks[k]
	}
	b.ReportMetric(float64(stored)/b.Elapsed().Seconds(), "blocks/s")
}

// kxScoreIndex builds engines engines each holding the same prompt of
// blocks 16-token blocks.
func kxScoreIndex(tb testing.TB, engines, nBlocks int) (*kvIndex, []int64) {
	const bs = 16
	rng := rand.New(rand.NewPCG(3, 4))
	prompt := make([]int64, nBlocks*bs)
	toks := make([]uint32, len(prompt))
	for i := range prompt {
		toks[i] = rng.Uint32N(150000)
		prompt[i] = int64(toks[i])
	}
	ix, err := newKVIndex(ref.KVEvConfig{}, []ref.KVEvStream{{Name: "vllm"}}, fault.KVEv{})
	if err != nil {
		tb.Fatal(err)
	}
	var seq uint64
	for e := range engines {
		const perMsg = 500
		for m := 0; m < nBlocks; m += perMsg {
			n := min(perMsg, nBlocks-m)
			hs := make([]uint64, n)
			for i := range hs {
				hs[i] = uint64(m + i + 1)
			}
			var parent *uint64
			if m > 0 {
				parent = new(uint64(m))
			}
			p := kxBatch(new(int64(e)), kxEvStored(hs, parent, toks[m*bs:(m+n)*bs], bs, kxEvOpt{}))
			if r := ix.Live("vllm", kxLiveFrames("kv@pod@m", seq, p)); len(r.Errors) > 0 || r.Error != nil {
				tb.Fatalf("%+v", r)
			}
			seq++
		}
	}
	return ix, prompt
}

// BenchmarkKVEvScore240KTokens8Engines is the hashed score of a 240K-token
// prompt against 8 engines that all hold it.
func BenchmarkKVEvScore240KTokens8Engines(b *testing.B) {
	ix, prompt := kxScoreIndex(b, 8, 240*1024/16)
	q := ref.KVEvScoreQuery{Tokens: prompt}
	s, err := ix.Score(q)
	if err != nil || len(s) != 8 || s[0].Blocks != len(prompt)/16 {
		b.Fatalf("%s %v", kxFmtScores(s), err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ix.Score(q)
	}
}

func TestKVEvBenchFixtures(t *testing.T) {
	payloads, _ := kxStoredRing(8)
	ix, _ := newKVIndex(ref.KVEvConfig{}, []ref.KVEvStream{{Name: "vllm"}}, fault.KVEv{})
	for cycle := range 2 {
		for i, p := range payloads {
			r := ix.Live("vllm", kxLiveFrames("", uint64(cycle*len(payloads)+i), p))
			if len(r.Errors) > 0 || r.Error != nil {
				t.Fatalf("%+v", r)
			}
		}
		kxCheckKVInvariants(t, ix)
		if st := ix.State(); len(st.Engines[0].Pools) != 0 {
			t.Fatalf("ring does not return to empty: %d pools", len(st.Engines[0].Pools))
		}
	}
	ix2, prompt := kxScoreIndex(t, 2, 100)
	kxWantBlocks(t, ix2, ref.KVEvScoreQuery{Tokens: prompt}, fmt.Sprintf("pod/0:100(ps16,stale=false) pod/1:100(ps16,stale=false) "))
}
