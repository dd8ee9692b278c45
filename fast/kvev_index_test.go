package fast

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// §5.1's payloads.
var (
	ixE1 = kxMustHexT(`92 cb41da3054981000 00 91 96 ab 426c6f636b53746f726564
		92 cf1111111111111111 cff0e1d2c3b4a59687 c0 98 01 02 03 04 cc80 ccff cd0100 ce00010000 04 c0`)
	ixE2 = kxMustHexT(`93 cb41da3054981000 00 91 93 ac 426c6f636b52656d6f766564 91 cff0e1d2c3b4a59687 a3 475055 00`)
	ixE3 = kxMustHexT(`93 cb41da3054981000 00 91 9c ab 426c6f636b53746f726564
		91 cff0e1d2c3b4a59687 cf1111111111111111 94 cc80 ccff cd0100 ce00010000 04
		c0 a3 475055 c0 91 c0 00 ae 66756c6c5f617474656e74696f6e c0 00`)
	ixE4 = kxMustHexT(`93 cb41da3054981000 00 93
		89 a4 74797065 ab 426c6f636b53746f726564
		ac 626c6f636b5f686173686573 91 cf1111111111111111
		b1 706172656e745f626c6f636b5f68617368 c0
		a9 746f6b656e5f696473 94 01020304
		aa 626c6f636b5f73697a65 04
		a7 6c6f72615f6964 c0 a6 6d656469756d a3 475055
		a9 6c6f72615f6e616d65 c0
		a9 67726f75705f696478 00
		83 a4 74797065 ac 426c6f636b52656d6f766564
		ac 626c6f636b5f686173686573 91 cf1111111111111111 a6 6d656469756d a3 475055
		81 a4 74797065 b0 416c6c426c6f636b73436c6561726564
		00`)
	ixE5 = kxMustHexT(`93 cb41da3054981000 00 91 97 ab 426c6f636b53746f726564 91 ff c0 92 07 08 02 c0 a3 475055 c0`)
)

var kxE1Prompt = []int64{1, 2, 3, 4, 128, 255, 256, 65536, 9}

func kxNewTestIx(t testing.TB, cfg spec.KVEvConfig, f fault.KVEv, streams ...spec.KVEvStream) *kvIndex {
	t.Helper()
	ix, err := newKVIndex(cfg, streams, f)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

func kxMustLive(t testing.TB, ix *kvIndex, stream string, frames [][]byte) spec.KVEvStepResult {
	t.Helper()
	r := ix.Live(stream, frames)
	if r.Error != nil || len(r.Errors) > 0 {
		t.Fatalf("live: %+v", r)
	}
	kxCheckKVInvariants(t, ix)
	return r
}

func kxScoreOf(t testing.TB, ix *kvIndex, q spec.KVEvScoreQuery) []spec.KVEvScore {
	t.Helper()
	s, err := ix.Score(q)
	if err != nil {
		t.Fatal(err)
	}
	qx := q
	qx.Exact = !q.Exact
	s2, err := ix.Score(qx)
	if err != nil {
		t.Fatal(err)
	}
	if kxFmtScores(s) != kxFmtScores(s2) {
		t.Fatalf("hashed and exact scores differ: %s vs %s", kxFmtScores(s), kxFmtScores(s2))
	}
	return s
}

func kxWantBlocks(t testing.TB, ix *kvIndex, q spec.KVEvScoreQuery, want string) {
	t.Helper()
	if got := kxFmtScores(kxScoreOf(t, ix, q)); got != want {
		t.Fatalf("score: got %q, want %q", got, want)
	}
}

func TestKVEvE1E2(t *testing.T) {
	ix := kxNewTestIx(t, spec.KVEvConfig{}, fault.KVEv{}, spec.KVEvStream{Name: "vllm-0"})
	const topic = "kv@10.0.0.7@llama"
	r := kxMustLive(t, ix, "vllm-0", kxLiveFrames(topic, 0, ixE1))
	if !slices.Equal(r.Applied, []uint64{0}) {
		t.Fatalf("applied %v", r.Applied)
	}
	q := spec.KVEvScoreQuery{Tokens: kxE1Prompt}
	kxWantBlocks(t, ix, q, "10.0.0.7/0:2(ps4,stale=false) ")
	kxMustLive(t, ix, "vllm-0", kxLiveFrames(topic, 1, ixE2))
	kxWantBlocks(t, ix, q, "10.0.0.7/0:1(ps4,stale=false) ")
	st := ix.State()
	e := st.Engines[0]
	if e.Model != "llama" || e.Stream != "vllm-0" || len(e.Pools) != 1 || len(e.Pools[0].Pages) != 1 || e.Tokens != 4 {
		t.Fatalf("state %+v", e)
	}
	if st.Streams[0].Next != 2 || st.Streams[0].Counters.Batches != 2 {
		t.Fatalf("stream %+v", st.Streams[0])
	}
	// E3 re-stores H2 under H1.
	kxMustLive(t, ix, "vllm-0", kxLiveFrames(topic, 2, ixE3))
	kxWantBlocks(t, ix, q, "10.0.0.7/0:2(ps4,stale=false) ")
	// Tier and group select pools; other tiers are scored separately.
	kxWantBlocks(t, ix, spec.KVEvScoreQuery{Tokens: kxE1Prompt, Tier: "cpu"}, "")
	kxWantBlocks(t, ix, spec.KVEvScoreQuery{Tokens: kxE1Prompt, Tier: "gpu"}, "10.0.0.7/0:2(ps4,stale=false) ")
	kxWantBlocks(t, ix, spec.KVEvScoreQuery{Tokens: kxE1Prompt, Namespace: "lora"}, "10.0.0.7/0:0(ps4,stale=false) ")
	if d := ix.Digest(); ix.State().Digest != kxHexDigest(d) {
		t.Fatal("Digest and State().Digest differ")
	}
}

func kxHexDigest(d [32]byte) string {
	const x = "0123456789abcdef"
	b := make([]byte, 64)
	for i, v := range d {
		b[2*i], b[2*i+1] = x[v>>4], x[v&15]
	}
	return string(b)
}

func TestKVEvE4MapFormNetEmpty(t *testing.T) {
	ix := kxNewTestIx(t, spec.KVEvConfig{}, fault.KVEv{}, spec.KVEvStream{Name: "s"})
	kxMustLive(t, ix, "s", kxLiveFrames("", 0, ixE4))
	st := ix.State()
	if len(st.Engines) != 1 {
		t.Fatalf("engines %+v", st.Engines)
	}
	e := st.Engines[0]
	if e.Source != "s" || e.Stale || len(e.Pools) != 0 || e.Tokens != 0 ||
		e.Counters.Stored != 1 || e.Counters.Removed != 1 || e.Counters.Cleared != 1 {
		t.Fatalf("engine %+v", e)
	}
}

func TestKVEvE5SGLangNegativeHash(t *testing.T) {
	ix := kxNewTestIx(t, spec.KVEvConfig{}, fault.KVEv{}, spec.KVEvStream{Name: "sgl", Rank: 3})
	kxMustLive(t, ix, "sgl", kxLiveFrames("x", 0, ixE5))
	st := ix.State()
	e := st.Engines[0]
	if e.Source != "sgl" || e.DPRank != 3 || e.Pools[0].PageSize != 2 ||
		e.Pools[0].Pages[0].Bindings[0].Hash != spec.EvHash(0xffffffffffffffff) {
		t.Fatalf("engine %+v", e)
	}
	kxWantBlocks(t, ix, spec.KVEvScoreQuery{Tokens: []int64{7, 8, 9}}, "sgl/3:1(ps2,stale=false) ")
}

func TestKVEvE6BytesHashUnknownRemoval(t *testing.T) {
	e6 := kxMustHexT(`93 cb41da3054981000 00 91 83 a4 74797065 ac 426c6f636b52656d6f766564
		ac 626c6f636b5f686173686573 91 c4 20 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
		a6 6d656469756d a3 475055 00`)
	ix := kxNewTestIx(t, spec.KVEvConfig{}, fault.KVEv{}, spec.KVEvStream{Name: "s"})
	kxMustLive(t, ix, "s", kxLiveFrames("", 0, ixE1))
	kxMustLive(t, ix, "s", kxLiveFrames("", 1, e6))
	if c := ix.State().Engines[0].Counters; c.UnknownRemovals != 1 || c.Removed != 1 {
		t.Fatalf("counters %+v", c)
	}
	// The same hash as int: last 8 bytes big-endian.
	ix2 := kxNewTestIx(t, spec.KVEvConfig{}, fault.KVEv{}, spec.KVEvStream{Name: "s"})
	kxMustLive(t, ix2, "s", kxLiveFrames("", 0, kxBatch(nil, kxEvStored([]uint64{0x18191a1b1c1d1e1f}, nil, []uint32{1, 2, 3, 4}, 4, kxEvOpt{}))))
	kxMustLive(t, ix2, "s", kxLiveFrames("", 1, e6))
	if st := ix2.State(); len(st.Engines[0].Pools) != 0 || st.Engines[0].Counters.UnknownRemovals != 0 {
		t.Fatalf("state %+v", st.Engines[0])
	}
}

// §5.4, with a replay endpoint and without.
func TestKVEvSequences(t *testing.T) {
	ix := kxNewTestIx(t, spec.KVEvConfig{}, fault.KVEv{}, spec.KVEvStream{Name: "s", Replay: true})
	pay := func(i int) []byte {
		return kxBatch(nil, kxEvStored([]uint64{uint64(100 + i)}, nil, []uint32{uint32(i)}, 1, kxEvOpt{}))
	}
	for s := range uint64(3) {
		kxMustLive(t, ix, "s", kxLiveFrames("t", s, pay(int(s))))
	}
	if st := ix.State().Streams[0]; st.Next != 3 || st.LastLive != 2 {
		t.Fatalf("after 0,1,2: %+v", st)
	}
	r := ix.Live("s", kxLiveFrames("t", 5, pay(5)))
	if len(r.ReplayRequest) != 2 || len(r.ReplayRequest[0]) != 0 || string(r.ReplayRequest[1]) != string(kxSeqFrame(3)) || r.Held != 1 {
		t.Fatalf("live 5: %+v", r)
	}
	// A live message during the replay is held.
	if r := ix.Live("s", kxLiveFrames("t", 6, pay(6))); r.Held != 2 || len(r.Applied) != 0 {
		t.Fatalf("live 6 during replay: %+v", r)
	}
	for s := uint64(3); s <= 5; s++ {
		r := ix.Replay("s", [][]byte{{}, []byte("t"), kxSeqFrame(s), pay(int(s))})
		if !slices.Equal(r.Applied, []uint64{s}) {
			t.Fatalf("replay %d: %+v", s, r)
		}
	}
	r = ix.Replay("s", [][]byte{{}, {}, kxSeqFrame(1<<64 - 1), {}})
	if !r.ReplayDone || !slices.Equal(r.Duplicates, []uint64{5}) || !slices.Equal(r.Applied, []uint64{6}) || r.Held != 0 {
		t.Fatalf("sentinel: %+v", r)
	}
	st := ix.State().Streams[0]
	if st.Next != 7 || st.LastLive != 6 || st.Replaying || st.Counters.ReplaysOK != 1 || st.StaleSince != nil {
		t.Fatalf("after replay: %+v", st)
	}
	kxCheckKVInvariants(t, ix)
	// Live 2: a restart; 2 is a first message with gap [0,2): replay from 0.
	r = ix.Live("s", kxLiveFrames("t", 2, pay(2)))
	if !r.Restart || len(r.ReplayRequest) != 2 || string(r.ReplayRequest[1]) != string(kxSeqFrame(0)) {
		t.Fatalf("restart: %+v", r)
	}
	if s := ix.State(); len(s.Engines) != 0 || s.Streams[0].Counters.Restarts != 1 {
		t.Fatalf("after restart: %+v", s)
	}
	// The replay fails: [0,2) is lost, 2 applied, the engine it creates starts stale.
	r = ix.ReplayFailed("s", spec.ReplayReasonTimeout)
	if r.ReplayDone || !slices.Equal(r.Lost, []spec.KVEvGap{{From: 0, To: 2}}) || !slices.Equal(r.Applied, []uint64{2}) {
		t.Fatalf("replay failed: %+v", r)
	}
	s := ix.State()
	if !s.Engines[0].Stale || s.Engines[0].StaleSince != 2 || *s.Streams[0].StaleSince != 2 {
		t.Fatalf("after failed replay: %+v", s)
	}

	// Without replay: live 5 after next=3 → stale since 5, next 6.
	ix = kxNewTestIx(t, spec.KVEvConfig{}, fault.KVEv{}, spec.KVEvStream{Name: "s"})
	for s := range uint64(3) {
		kxMustLive(t, ix, "s", kxLiveFrames("t", s, pay(int(s))))
	}
	r = ix.Live("s", kxLiveFrames("t", 5, pay(5)))
	if len(r.ReplayRequest) != 0 || !slices.Equal(r.Lost, []spec.KVEvGap{{From: 3, To: 5}}) || !slices.Equal(r.Applied, []uint64{5}) {
		t.Fatalf("no replay: %+v", r)
	}
	s = ix.State()
	if !s.Engines[0].Stale || s.Engines[0].StaleSince != 5 || s.Streams[0].Next != 6 ||
		s.Streams[0].Counters.Gaps != 1 || s.Streams[0].Counters.GapBatchesLost != 2 {
		t.Fatalf("no replay state: %+v", s)
	}
	kxWantBlocks(t, ix, spec.KVEvScoreQuery{Tokens: []int64{0}}, "s/0:1(ps1,stale=true) ")
	// AllBlocksCleared resynchronises the engine.
	kxMustLive(t, ix, "s", kxLiveFrames("t", 6, kxBatch(nil, kxEvCleared())))
	if e := ix.State().Engines[0]; e.Stale || len(e.Pools) != 0 {
		t.Fatalf("after clear: %+v", e)
	}
}

func TestKVEvReplayProtocol(t *testing.T) {
	ix := kxNewTestIx(t, spec.KVEvConfig{}, fault.KVEv{}, spec.KVEvStream{Name: "s", Replay: true})
	r := ix.Replay("s", [][]byte{{}, kxSeqFrame(0), kxBatch(nil)})
	if r.Error == nil || r.Error.Code != "replay_protocol" {
		t.Fatalf("reply without replay: %+v", r)
	}
	r = ix.Live("s", kxLiveFrames("t", 2, kxBatch(nil)))
	if len(r.ReplayRequest) != 2 {
		t.Fatalf("%+v", r)
	}
	for _, bad := range [][][]byte{
		{kxSeqFrame(0), kxBatch(nil)},
		{{1}, kxSeqFrame(0), kxBatch(nil)},
		{{}, []byte{1, 2}, kxBatch(nil)},
		{{}, {}, {}, {}, {}},
	} {
		if r := ix.Replay("s", bad); r.Error == nil || r.Error.Code != "replay_protocol" || r.Held != 1 {
			t.Fatalf("bad reply %x: %+v", bad, r)
		}
	}
	// 2-frame layout: the topic comes from the triggering message.
	r = ix.Replay("s", [][]byte{{}, kxSeqFrame(1), kxBatch(nil)})
	if !slices.Equal(r.Lost, []spec.KVEvGap{{From: 0, To: 1}}) || !slices.Equal(r.Applied, []uint64{1}) {
		t.Fatalf("replay 1: %+v", r)
	}
	r = ix.Replay("s", [][]byte{{}, kxSeqFrame(1<<64 - 1), {}})
	if !r.ReplayDone || !slices.Equal(r.Applied, []uint64{2}) {
		t.Fatalf("sentinel: %+v", r)
	}
	st := ix.State()
	if len(st.Engines) != 1 || st.Engines[0].Source != "s" || !st.Engines[0].Stale || st.Engines[0].StaleSince != 1 {
		t.Fatalf("engines %+v", st.Engines)
	}
	// Malformed live messages are counted, never touch the cursor.
	if r := ix.Live("s", [][]byte{{}, kxSeqFrame(3)}); r.Error == nil || r.Error.Code != "frame_count" {
		t.Fatalf("%+v", r)
	}
	if r := ix.Live("s", [][]byte{{}, {1}, {}}); r.Error == nil || r.Error.Code != "seq_width" {
		t.Fatalf("%+v", r)
	}
	if st := ix.State().Streams[0]; st.Counters.Malformed != 2 || st.Next != 3 {
		t.Fatalf("%+v", st)
	}
}

func TestKVEvHeldOverflow(t *testing.T) {
	ix := kxNewTestIx(t, spec.KVEvConfig{MaxHeld: 2}, fault.KVEv{}, spec.KVEvStream{Name: "s", Replay: true})
	kxMustLive(t, ix, "s", kxLiveFrames("t", 0, kxBatch(nil, kxEvStored([]uint64{1}, nil, []uint32{1}, 1, kxEvOpt{}))))
	ix.Live("s", kxLiveFrames("t", 3, kxBatch(nil)))
	ix.Live("s", kxLiveFrames("t", 4, kxBatch(nil)))
	r := ix.Live("s", kxLiveFrames("t", 5, kxBatch(nil)))
	if r.Held != 2 {
		t.Fatalf("%+v", r)
	}
	st := ix.State()
	if st.Streams[0].Counters.HeldOverflow != 1 || !st.Engines[0].Stale || st.Engines[0].StaleSince != 5 {
		t.Fatalf("%+v", st)
	}
	// A restart step abandons the replay and drops the held messages.
	r = ix.Restart("s")
	if !r.Restart || r.Held != 0 {
		t.Fatalf("%+v", r)
	}
	if st := ix.State(); st.Streams[0].Replaying || st.Streams[0].Known || len(st.Engines) != 0 {
		t.Fatalf("%+v", st)
	}
}

// Interior eviction leaves a hole that keeps its descendants and its hash;
// re-storing it reconnects them (§2.4). A leaf hole is pruned upwards.
func TestKVEvHolesAndPruning(t *testing.T) {
	ix := kxNewTestIx(t, spec.KVEvConfig{}, fault.KVEv{}, spec.KVEvStream{Name: "s"})
	toks := kxSeqTokens(1, 12)
	kxMustLive(t, ix, "s", kxLiveFrames("", 0, kxBatch(nil, kxEvStored([]uint64{1, 2, 3}, nil, toks, 4, kxEvOpt{}))))
	q := spec.KVEvScoreQuery{Tokens: []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}}
	kxWantBlocks(t, ix, q, "s/0:3(ps4,stale=false) ")
	kxMustLive(t, ix, "s", kxLiveFrames("", 1, kxBatch(nil, kxEvRemoved([]uint64{2}, kxEvOpt{}))))
	kxWantBlocks(t, ix, q, "s/0:1(ps4,stale=false) ")
	if p := ix.State().Engines[0].Pools[0]; len(p.Pages) != 3 || p.Pages[1].Resident != 0 || len(p.Pages[1].Bindings) != 1 {
		t.Fatalf("hole: %+v", p)
	}
	// Re-store block 2 under block 1: the path is whole again.
	kxMustLive(t, ix, "s", kxLiveFrames("", 2, kxBatch(nil, kxEvStored([]uint64{2}, kxU64p(1), toks[4:8], 4, kxEvOpt{}))))
	kxWantBlocks(t, ix, q, "s/0:3(ps4,stale=false) ")
	// A duplicate copy: two stores, one remove keeps it resident.
	kxMustLive(t, ix, "s", kxLiveFrames("", 3, kxBatch(nil, kxEvStored([]uint64{3}, kxU64p(2), toks[8:12], 4, kxEvOpt{}))))
	kxMustLive(t, ix, "s", kxLiveFrames("", 4, kxBatch(nil, kxEvRemoved([]uint64{3}, kxEvOpt{}))))
	kxWantBlocks(t, ix, q, "s/0:3(ps4,stale=false) ")
	// Remove 2 then 3 (and 3 again: at 0 it stays 0, not unknown): 3 is a
	// leaf hole, pruned, then 2 with it; 1 stays.
	kxMustLive(t, ix, "s", kxLiveFrames("", 5, kxBatch(nil, kxEvRemoved([]uint64{2, 3, 3}, kxEvOpt{}))))
	e := ix.State().Engines[0]
	if len(e.Pools[0].Pages) != 1 || e.Tokens != 4 || e.Counters.UnknownRemovals != 0 {
		t.Fatalf("after prune: %+v", e)
	}
	kxMustLive(t, ix, "s", kxLiveFrames("", 6, kxBatch(nil, kxEvRemoved([]uint64{1, 2}, kxEvOpt{}))))
	e = ix.State().Engines[0]
	if len(e.Pools) != 0 || e.Tokens != 0 || e.Counters.UnknownRemovals != 1 {
		t.Fatalf("after prune all: %+v", e)
	}
	// The pool's page size was forgotten with it.
	kxMustLive(t, ix, "s", kxLiveFrames("", 7, kxBatch(nil, kxEvStored([]uint64{9}, nil, []uint32{1, 2}, 2, kxEvOpt{}))))
}

// Two hashes on one page (A4): a new hash for an existing child binds to it.
func TestKVEvTwoBindings(t *testing.T) {
	ix := kxNewTestIx(t, spec.KVEvConfig{}, fault.KVEv{}, spec.KVEvStream{Name: "s"})
	kxMustLive(t, ix, "s", kxLiveFrames("", 0, kxBatch(nil,
		kxEvStored([]uint64{1}, nil, []uint32{5, 6}, 2, kxEvOpt{}),
		kxEvStored([]uint64{2}, nil, []uint32{5, 6}, 2, kxEvOpt{}),
		kxEvRemoved([]uint64{1}, kxEvOpt{}))))
	p := ix.State().Engines[0].Pools[0].Pages
	if len(p) != 1 || p[0].Resident != 1 || len(p[0].Bindings) != 2 || p[0].Bindings[0].Count != 0 || p[0].Bindings[1].Count != 1 {
		t.Fatalf("pages %+v", p)
	}
	kxMustLive(t, ix, "s", kxLiveFrames("", 1, kxBatch(nil, kxEvRemoved([]uint64{2}, kxEvOpt{}))))
	if st := ix.State(); len(st.Engines[0].Pools) != 0 {
		t.Fatalf("%+v", st.Engines[0])
	}
}

func kxErrCodes(r spec.KVEvStepResult) []string {
	var out []string
	for _, e := range r.Errors {
		out = append(out, e.Error.Code)
	}
	return out
}

func TestKVEvRefusals(t *testing.T) {
	ix := kxNewTestIx(t, spec.KVEvConfig{MaxTokensPerEngine: 10}, fault.KVEv{}, spec.KVEvStream{Name: "s"})
	lora := "A"
	r := ix.Live("s", kxLiveFrames("", 0, kxBatch(nil,
		kxEvStored([]uint64{1, 2}, nil, kxSeqTokens(1, 3), 2, kxEvOpt{}),                // token count
		kxEvStored([]uint64{1, 2}, nil, kxSeqTokens(1, 4), 2, kxEvOpt{}),                // ok: 4 tokens
		kxEvStored([]uint64{3}, kxU64p(1), kxSeqTokens(9, 3), 3, kxEvOpt{}),             // block size change
		kxEvStored([]uint64{1}, nil, []uint32{7, 7}, 2, kxEvOpt{}),                      // hash conflict
		kxEvStored([]uint64{5, 1}, nil, []uint32{1, 2, 3, 4}, 2, kxEvOpt{}),             // conflict at 1: 5 not bound either
		kxEvStored([]uint64{6}, nil, []uint32{3, 4}, 2, kxEvOpt{loraName: &lora}),       // ok: root page in A
		kxEvStored([]uint64{7}, kxU64p(1), []uint32{3, 4}, 2, kxEvOpt{loraName: &lora}), // ok: an A page under a base page
		kxEvStored([]uint64{8, 9, 10}, kxU64p(2), kxSeqTokens(20, 6), 2, kxEvOpt{}),     // budget: 4+2+2+6 > 10
	)))
	want := []string{"token_count", "block_size_change", "hash_conflict", "hash_conflict", "pool_budget"}
	if got := kxErrCodes(r); !slices.Equal(got, want) {
		t.Fatalf("errors %v, want %v (%+v)", got, want, r.Errors)
	}
	kxCheckKVInvariants(t, ix)
	e := ix.State().Engines[0]
	if e.Tokens != 8 || !e.Stale || e.StaleSince != 0 || e.Counters.Refused != 5 || e.Counters.Stored != 3 {
		t.Fatalf("engine %+v", e)
	}
	b, _ := json.Marshal(r.Errors)
	t.Logf("%s", b)
}

// A4's chain collision: a page whose ancestors are in another namespace
// has the prefix hash of the same tokens' path in its own namespace.
// TestKVEvChainsAcrossNamespacesStayApart is A14's example: [2] (LoRA A's
// 3 4 under the base model's [1]) and [4] (LoRA A's 1 2 | 3 4 from the
// root) have the same tokens along their paths; A4's first form gave them
// one prefix hash and refused [3 4] as a chain collision. A14 chains [2]
// from its parent's hash, so both stores hold, and each prompt reaches only
// its own path.
func TestKVEvChainsAcrossNamespacesStayApart(t *testing.T) {
	ix := kxNewTestIx(t, spec.KVEvConfig{}, fault.KVEv{}, spec.KVEvStream{Name: "s"})
	lora := "A"
	kxMustLive(t, ix, "s", kxLiveFrames("", 0, kxBatch(nil,
		kxEvStored([]uint64{1}, nil, []uint32{1, 2}, 2, kxEvOpt{}),
		kxEvStored([]uint64{2}, kxU64p(1), []uint32{3, 4}, 2, kxEvOpt{loraName: &lora}),
		kxEvStored([]uint64{3, 4}, nil, []uint32{1, 2, 3, 4}, 2, kxEvOpt{loraName: &lora}),
	)))
	kxCheckKVInvariants(t, ix)
	if p := ix.State().Engines[0].Pools[0].Pages; len(p) != 4 {
		t.Fatalf("pages %+v", p)
	}
	kxWantBlocks(t, ix, spec.KVEvScoreQuery{Tokens: []int64{1, 2, 3, 4}, Namespace: "A"}, "s/0:2(ps2,stale=false) ")
	kxWantBlocks(t, ix, spec.KVEvScoreQuery{Tokens: []int64{1, 2, 3, 4}}, "s/0:1(ps2,stale=false) ")
	// [2]'s prefix hash, from A14's text: A's seed chained over [1]'s
	// hash (the base model's seed over 1 2), then over 3 4.
	seedA := ref.PrefixHashSeed(spec.ExtraKey{Extra: "A", HasExtra: true}, false)
	h1 := ref.NextPrefixHash(ref.PrefixHashSeed(spec.ExtraKey{}, false), []spec.Unit{1, 2})
	want := ref.NextPrefixHash(ref.NextPrefixHash(seedA, []spec.Unit{spec.Unit(h1)}), []spec.Unit{3, 4})
	pl := ix.engines[spec.KVEvEngineKey{Source: "s"}].pools[kvPoolKey{tier: "GPU"}]
	if got := pl.byHash.get(2); got == kvNoSlot || pl.prefix[got] != uint64(want) {
		t.Fatalf("[2]'s prefix hash: slot %d, want %x", got, uint64(want))
	}
}

// TestKVEvChainCollisionsRefuseTheStoreAndUndoIt: since A14 a chain
// collision needs a 64-bit prefix-hash collision, so the test plants one in
// byPrefix (the hash a page will get, entered for another page), then
// removes it. A full store is refused at the colliding block with that
// hash, its first block (created before) undone; a tokenless copy whose
// walk meets the planted page is refused at its hash with the ancestor's
// prefix hash. Neither changes the pools; each counts one refusal.
func TestKVEvChainCollisionsRefuseTheStoreAndUndoIt(t *testing.T) {
	ix := kxNewTestIx(t, spec.KVEvConfig{}, fault.KVEv{}, spec.KVEvStream{Name: "s"})
	cpu := "CPU"
	kxMustLive(t, ix, "s", kxLiveFrames("", 0, kxBatch(nil,
		kxEvStored([]uint64{1, 2}, nil, []uint32{1, 2, 3, 4}, 2, kxEvOpt{}),
		kxEvStored([]uint64{9}, nil, []uint32{9, 9}, 2, kxEvOpt{medium: &cpu}))))
	e := ix.engines[spec.KVEvEngineKey{Source: "s"}]
	gpu, cpuPool := e.pools[kvPoolKey{tier: "GPU"}], e.pools[kvPoolKey{tier: "CPU"}]
	seed := ref.PrefixHashSeed(spec.ExtraKey{}, false)
	check := func(seq uint64, ev kxMp, pl *kvPool, planted spec.PrefixHash, on int32, want error) {
		t.Helper()
		before := ix.State()
		pl.byPrefix.set(uint64(planted), on)
		r := ix.Live("s", kxLiveFrames("", seq, kxBatch(nil, ev)))
		pl.byPrefix.deleteIf(uint64(planted), on)
		if len(r.Errors) != 1 || !reflect.DeepEqual(r.Errors[0].Error, spec.ErrorObjectOf(want)) {
			t.Fatalf("errors %+v, want %v", r.Errors, want)
		}
		kxCheckKVInvariants(t, ix)
		got := ix.State().Engines[0]
		if !reflect.DeepEqual(got.Pools, before.Engines[0].Pools) || got.Tokens != before.Engines[0].Tokens {
			t.Fatalf("a refused store changed the pools:\n%+v\nwant\n%+v", got.Pools, before.Engines[0].Pools)
		}
		if got.Counters.Refused != before.Engines[0].Counters.Refused+1 || got.Stale {
			t.Fatalf("counters %+v stale %v: want one more refusal, not stale", got.Counters, got.Stale)
		}
	}
	// [5 6][7 8] from the root: block 1's hash planted on page [1 2].
	ph := ref.NextPrefixHash(ref.NextPrefixHash(seed, []spec.Unit{5, 6}), []spec.Unit{7, 8})
	check(1, kxEvStored([]uint64{5, 6}, nil, []uint32{5, 6, 7, 8}, 2, kxEvOpt{}), gpu, ph, gpu.byHash.get(1),
		ref.KVChainCollisionError(0, 1, ph))
	// A CPU copy of hash 2: its walk finds [1 2]'s hash planted on CPU's [9 9].
	ph = ref.NextPrefixHash(seed, []spec.Unit{1, 2})
	check(2, kxEvStored([]uint64{2}, nil, nil, 2, kxEvOpt{medium: &cpu}), cpuPool, ph, cpuPool.byHash.get(9),
		ref.KVChainCollisionError(0, 0, ph))
}

func TestKVEvOrphan(t *testing.T) {
	for _, atRoot := range []bool{false, true} {
		ix := kxNewTestIx(t, spec.KVEvConfig{}, fault.KVEv{OrphanAtRoot: atRoot}, spec.KVEvStream{Name: "s"})
		kxMustLive(t, ix, "s", kxLiveFrames("", 0, kxBatch(nil, kxEvStored([]uint64{2}, kxU64p(1), []uint32{5, 6}, 2, kxEvOpt{}))))
		e := ix.State().Engines[0]
		q := spec.KVEvScoreQuery{Tokens: []int64{5, 6}}
		if !atRoot {
			if !e.Stale || e.StaleSince != 0 || e.Counters.OrphanStores != 1 || len(e.Pools) != 0 {
				t.Fatalf("orphan: %+v", e)
			}
			if st := ix.State().Streams[0]; st.StaleSince != nil {
				t.Fatal("an orphan marks only its engine")
			}
			kxWantBlocks(t, ix, q, "")
		} else {
			if e.Stale || e.Counters.OrphanStores != 0 || len(e.Pools) != 1 {
				t.Fatalf("orphan at root: %+v", e)
			}
			kxWantBlocks(t, ix, q, "s/0:1(ps2,stale=false) ")
		}
	}
}

func TestKVEvTokenless(t *testing.T) {
	ix := kxNewTestIx(t, spec.KVEvConfig{}, fault.KVEv{}, spec.KVEvStream{Name: "s"})
	cpu, ssd := "cpu", "SSD"
	kxMustLive(t, ix, "s", kxLiveFrames("", 0, kxBatch(nil,
		kxEvStored([]uint64{1, 2, 3}, nil, kxSeqTokens(1, 6), 2, kxEvOpt{}),
		kxEvStored([]uint64{3, 99}, kxU64p(2), nil, 2, kxEvOpt{medium: &cpu}),
	)))
	e := ix.State().Engines[0]
	if len(e.Pools) != 2 || e.Pools[0].Tier != "CPU" || len(e.Pools[0].Pages) != 3 ||
		e.Pools[0].Pages[0].Resident != 0 || e.Pools[0].Pages[2].Resident != 1 || e.Counters.OrphanStores != 1 || e.Stale {
		t.Fatalf("tokenless: %+v", e)
	}
	q := spec.KVEvScoreQuery{Tokens: []int64{1, 2, 3, 4, 5, 6}, Tier: "CPU"}
	kxWantBlocks(t, ix, q, "s/0:0(ps2,stale=false) ")
	// Copy block 1 from CPU... block 1 is only on GPU; the SSD copy of 2
	// finds it on GPU first.
	kxMustLive(t, ix, "s", kxLiveFrames("", 1, kxBatch(nil,
		kxEvStored([]uint64{1}, nil, nil, 2, kxEvOpt{medium: &cpu}),
		kxEvStored([]uint64{2}, nil, nil, 2, kxEvOpt{medium: &ssd}),
		kxEvRemoved([]uint64{1, 2, 3}, kxEvOpt{}),
	)))
	kxWantBlocks(t, ix, q, "s/0:1(ps2,stale=false) ")
	// GPU pool is gone; a tokenless CPU store of 2 finds it on SSD.
	kxMustLive(t, ix, "s", kxLiveFrames("", 2, kxBatch(nil, kxEvStored([]uint64{2}, nil, nil, 2, kxEvOpt{medium: &cpu}))))
	kxWantBlocks(t, ix, q, "s/0:3(ps2,stale=false) ")
	e = ix.State().Engines[0]
	if len(e.Pools) != 2 || e.Tokens != 6+4 {
		t.Fatalf("%+v", e)
	}
}

func TestKVEvEngineOwnerAndBudget(t *testing.T) {
	// max_engines 2 over 2 streams: one engine each (A5).
	ix := kxNewTestIx(t, spec.KVEvConfig{MaxEngines: 2}, fault.KVEv{}, spec.KVEvStream{Name: "a"}, spec.KVEvStream{Name: "b"})
	kxMustLive(t, ix, "a", kxLiveFrames("kv@pod@m", 0, kxBatch(nil)))
	r := ix.Live("b", kxLiveFrames("kv@pod@m", 0, kxBatch(nil)))
	if got := kxErrCodes(r); !slices.Equal(got, []string{"engine_owner"}) || !slices.Equal(r.Applied, []uint64{0}) {
		t.Fatalf("%+v", r)
	}
	kxMustLive(t, ix, "b", kxLiveFrames("kv@pod@m", 1, kxBatch(new(int64(1)))))
	r = ix.Live("b", kxLiveFrames("", 2, kxBatch(nil)))
	if got := kxErrCodes(r); !slices.Equal(got, []string{"engine_budget"}) {
		t.Fatalf("%+v", r)
	}
	if e := r.Errors[0].Engine; e == nil || *e != (spec.KVEvEngineKey{Source: "b", DPRank: 0}) {
		t.Fatalf("the refusal does not name its engine: %+v", r.Errors[0])
	}
	// Both refusals are engine refusals, not decode errors (A2).
	st := ix.State()
	if c := st.Streams[1].Counters; c.EnginesRefused != 2 || c.DecodeErrors != 0 || *st.Streams[1].StaleSince != 0 || !st.Engines[1].Stale {
		t.Fatalf("%+v", st)
	}
	// A decode error marks the stream's engines stale.
	r = ix.Live("a", kxLiveFrames("kv@pod@m", 1, []byte{0x91}))
	if len(r.Errors) != 1 || r.Errors[0].Event != -1 {
		t.Fatalf("%+v", r)
	}
	if e := ix.State().Engines[0]; !e.Stale || e.StaleSince != 1 {
		t.Fatalf("%+v", e)
	}
}

func TestKVEvFaults(t *testing.T) {
	t.Run("ReplayNoDelimiter", func(t *testing.T) {
		ix := kxNewTestIx(t, spec.KVEvConfig{}, fault.KVEv{ReplayNoDelimiter: true}, spec.KVEvStream{Name: "s", Replay: true})
		r := ix.Live("s", kxLiveFrames("", 4, kxBatch(nil)))
		if len(r.ReplayRequest) != 1 || string(r.ReplayRequest[0]) != string(kxSeqFrame(0)) {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("GapsOnlyLogged", func(t *testing.T) {
		ix := kxNewTestIx(t, spec.KVEvConfig{}, fault.KVEv{GapsOnlyLogged: true}, spec.KVEvStream{Name: "s", Replay: true})
		kxMustLive(t, ix, "s", kxLiveFrames("", 0, kxBatch(nil)))
		r := ix.Live("s", kxLiveFrames("", 4, kxBatch(nil)))
		st := ix.State()
		if len(r.ReplayRequest) != 0 || !slices.Equal(r.Applied, []uint64{4}) || st.Engines[0].Stale || st.Streams[0].StaleSince != nil ||
			st.Streams[0].Counters.Gaps != 1 || st.Streams[0].Counters.GapBatchesLost != 3 || st.Streams[0].Next != 5 {
			t.Fatalf("%+v %+v", r, st)
		}
	})
	t.Run("ClearIgnored", func(t *testing.T) {
		ix := kxNewTestIx(t, spec.KVEvConfig{}, fault.KVEv{ClearIgnored: true}, spec.KVEvStream{Name: "s"})
		kxMustLive(t, ix, "s", kxLiveFrames("", 1, ixE1))
		kxMustLive(t, ix, "s", kxLiveFrames("", 2, kxBatch(nil, kxEvCleared())))
		e := ix.State().Engines[0]
		if !e.Stale || e.Counters.Cleared != 1 || len(e.Pools) != 1 {
			t.Fatalf("%+v", e)
		}
	})
	t.Run("CountsAsSet", func(t *testing.T) {
		for _, set := range []bool{false, true} {
			ix := kxNewTestIx(t, spec.KVEvConfig{}, fault.KVEv{CountsAsSet: set}, spec.KVEvStream{Name: "s"})
			kxMustLive(t, ix, "s", kxLiveFrames("", 0, ixE1))
			kxMustLive(t, ix, "s", kxLiveFrames("", 1, ixE1))
			kxMustLive(t, ix, "s", kxLiveFrames("", 2, ixE2))
			want := "s/0:2(ps4,stale=false) "
			if set {
				want = "s/0:1(ps4,stale=false) "
			}
			kxWantBlocks(t, ix, spec.KVEvScoreQuery{Tokens: kxE1Prompt}, want)
		}
	})
}

func TestKVEvScoreBadToken(t *testing.T) {
	ix := kxNewTestIx(t, spec.KVEvConfig{}, fault.KVEv{}, spec.KVEvStream{Name: "s"})
	if _, err := ix.Score(spec.KVEvScoreQuery{Tokens: []int64{1, -1}}); !errors.Is(err, spec.ErrTokenRange) {
		t.Fatal(err)
	}
	kxMustLive(t, ix, "s", kxLiveFrames("", 0, ixE1))
	if _, err := ix.Score(spec.KVEvScoreQuery{Tokens: []int64{1, 2, 3, 4, 1 << 32}}); !errors.Is(err, spec.ErrTokenRange) {
		t.Fatal(err)
	}
	if _, err := ix.Score(spec.KVEvScoreQuery{Tokens: []int64{1, 2, 3, 4, 5, 1 << 32}}); !errors.Is(err, spec.ErrTokenRange) {
		t.Fatal(err)
	}
}

// §4.3's convergence criterion: the same per-engine logs in different
// interleavings give the same digest.
func TestKVEvDigestInterleavings(t *testing.T) {
	logs := map[string][][]byte{}
	for _, s := range []string{"a", "b"} {
		for i := range 20 {
			toks := kxSeqTokens(uint32(i%5), 8)
			var ev kxMp
			if i%4 == 3 {
				ev = kxEvRemoved([]uint64{uint64(i - 1)}, kxEvOpt{})
			} else {
				ev = kxEvStored([]uint64{uint64(i), uint64(i + 1000)}, nil, toks, 4, kxEvOpt{})
			}
			logs[s] = append(logs[s], kxBatch(nil, ev))
		}
	}
	run := func(order string) [32]byte {
		ix := kxNewTestIx(t, spec.KVEvConfig{}, fault.KVEv{}, spec.KVEvStream{Name: "a"}, spec.KVEvStream{Name: "b"})
		next := map[string]int{}
		for _, c := range order {
			s := string(c)
			ix.Live(s, kxLiveFrames("", uint64(next[s]), logs[s][next[s]]))
			next[s]++
		}
		kxCheckKVInvariants(t, ix)
		return ix.Digest()
	}
	var o1, o2 []byte
	for range 20 {
		o1 = append(o1, 'a', 'b')
	}
	for range 20 {
		o2 = append(o2, 'b')
	}
	for range 20 {
		o2 = append(o2, 'a')
	}
	if run(string(o1)) != run(string(o2)) {
		t.Fatal("digests differ across interleavings")
	}
}

// A long prompt against several engines takes the parallel walk; each
// engine's score is its own (holes at different depths), in order.
func TestKVEvScoreParallelWalks(t *testing.T) {
	defer goleak.VerifyNone(t)
	const engines, blocks = 6, 4000
	ix, prompt := kxScoreIndex(t, engines, blocks*16, 16)
	var want string
	for e := range engines {
		hole := uint64(1 + 700*e) // the hash of block 700e
		if e == engines-1 {
			want += fmt.Sprintf("pod/%d:%d(ps16,stale=true) ", e, blocks) // the jump to seq 1000 was a gap
			continue
		}
		r := ix.Live("vllm", kxLiveFrames("kv@pod@m", uint64(1000+e), kxBatch(new(int64(e)), kxEvRemoved([]uint64{hole}, kxEvOpt{}))))
		if len(r.Errors) > 0 {
			t.Fatalf("%+v", r)
		}
		want += fmt.Sprintf("pod/%d:%d(ps16,stale=true) ", e, 700*e)
	}
	if blocks*engines < kvParallelScoreSteps {
		t.Fatal("the prompt is too short to take the parallel path")
	}
	kxWantBlocks(t, ix, spec.KVEvScoreQuery{Tokens: prompt}, want)
	kxCheckKVInvariants(t, ix)
	// A bad token anywhere is ref.CheckTokens's error, from the pipelined
	// chain as from the serial one.
	for _, at := range []int{0, 17, len(prompt) - 1} {
		bad := slices.Clone(prompt)
		bad[at] = -1
		_, err := ix.Score(spec.KVEvScoreQuery{Tokens: append(bad, 5)})
		want := ref.CheckTokens("tokens", append(bad, 5))
		if err == nil || err.Error() != want.Error() {
			t.Fatalf("bad token at %d: %v, want %v", at, err, want)
		}
	}
}

// A score extends each page size's chain only as far as a walk needs, yet
// still range-checks every token: a bad token past the last matched page,
// and one past a first-page miss, are ref.CheckTokens's error.
func TestKVEvLazyScoreStillChecksEveryToken(t *testing.T) {
	ix, prompt := kxScoreIndex(t, 2, 1600, 16)
	for _, tc := range []struct {
		name   string
		tokens []int64
	}{
		{"hit then a bad last token", append(slices.Clone(prompt), 1<<32)},
		{"first-page miss then a bad token", append([]int64{7, 7, 7}, append(slices.Clone(prompt[3:]), -1)...)},
	} {
		_, err := ix.Score(spec.KVEvScoreQuery{Tokens: tc.tokens})
		want := ref.CheckTokens("tokens", tc.tokens)
		if err == nil || err.Error() != want.Error() {
			t.Errorf("%s: got %v, want %v", tc.name, err, want)
		}
	}
	miss := append([]int64{7}, prompt[1:]...)
	s, err := ix.Score(spec.KVEvScoreQuery{Tokens: miss})
	if err != nil || len(s) != 2 || s[0].Blocks != 0 || s[1].Blocks != 0 {
		t.Fatalf("a first-page miss: %s %v, want 0 blocks on both engines", kxFmtScores(s), err)
	}
}

// A kv@<a>@<b> topic whose bytes are not UTF-8 names the same engine in
// both twins: split on the raw bytes, then made valid UTF-8 (§2.10 A6), so
// the canonical output is the same bytes under every JSON encoder.
func TestKVEvNonUTF8TopicNamesTheSameEngineAsRef(t *testing.T) {
	p := kxBatch(nil, kxEvStored([]uint64{1}, nil, []uint32{1, 2}, 2, kxEvOpt{}))
	var frames []spec.HexBytes
	for _, f := range kxLiveFrames("kv@\xffpod@\xfemodel", 0, p) {
		frames = append(frames, f)
	}
	in := spec.KVEvApplyInput{Streams: []spec.KVEvStream{{Name: "s"}}, Steps: []spec.KVEvStep{{Op: spec.KVStepLive, Stream: "s", Frames: frames}}}
	want, err1 := ref.KVEvApply(spec.DefaultLimits(), in)
	got, err2 := KVEvApply(spec.DefaultLimits(), in)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	wb, _ := json.Marshal(want)
	gb, _ := json.Marshal(got)
	if !bytes.Equal(wb, gb) {
		t.Fatalf("fast %s\nref  %s", gb, wb)
	}
	if e := got.State.Engines[0]; e.Source != "\uFFFDpod" || e.Model != "\uFFFDmodel" {
		t.Fatalf("engine %q model %q, want U+FFFD in place of the invalid bytes", e.Source, e.Model)
	}
}

// Summary is State with each pool's pages replaced by their count: the
// same streams, engines, counters and digest, no token copied.
func TestKVEvSummaryIsStateWithoutPages(t *testing.T) {
	ix, _ := kxScoreIndex(t, 3, 1600, 16)
	full, sum := ix.State(), ix.Summary()
	for i := range full.Engines {
		for j := range full.Engines[i].Pools {
			p, q := &full.Engines[i].Pools[j], &sum.Engines[i].Pools[j]
			if q.Pages != nil || q.PageCount != len(p.Pages) || q.PageCount == 0 {
				t.Fatalf("engine %d pool %d: summary has %d pages listed, count %d; state has %d", i, j, len(q.Pages), q.PageCount, len(p.Pages))
			}
			p.Pages, q.PageCount = nil, 0
		}
	}
	wb, _ := json.Marshal(full)
	gb, _ := json.Marshal(sum)
	if !bytes.Equal(wb, gb) {
		t.Fatalf("summary %s\nstate   %s", gb, wb)
	}
}

// TestKVEvBlockWalkMatchesTheReferenceOnInterleavedChains builds chains
// whose pages do not sit in consecutive slots: three branches of one
// prompt stored a few pages at a time in turn, holes removed from the
// middle, leaves pruned, and pages re-stored into freed slots in another
// order. Every walk then meets blocks that break (a sibling's slot next,
// a hole, a chain's end) mid-block, and its scores, hashed and exact,
// must be the reference's.
func TestKVEvBlockWalkMatchesTheReferenceOnInterleavedChains(t *testing.T) {
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 99))
		ps := 1 + rng.IntN(2)
		streams := []spec.KVEvStream{{Name: "vllm"}}
		rx, err := ref.NewKVEvIndex(spec.KVEvConfig{}, streams)
		if err != nil {
			t.Fatal(err)
		}
		fx := kxNewTestIx(t, spec.KVEvConfig{}, fault.KVEv{}, streams...)
		var seq uint64
		live := func(p []byte) {
			fr := kxLiveFrames("kv@pod@m", seq, p)
			seq++
			if r := rx.Live("vllm", fr); r.Error != nil || len(r.Errors) > 0 {
				t.Fatalf("seed %d: ref live: %+v", seed, r)
			}
			kxMustLive(t, fx, "vllm", fr)
		}
		// Three branches: branch b shares branch 0's first fork[b] pages.
		const pages = 300
		prompts := make([][]uint32, 3)
		fork := []int{pages, 40 + rng.IntN(100), 150 + rng.IntN(100)}
		hashOf := func(b, i int) uint64 {
			if i < fork[b] {
				b = 0
			}
			return uint64(b+1)<<32 | uint64(i+1)
		}
		for b := range prompts {
			prompts[b] = make([]uint32, pages*ps)
			for i := range prompts[b] {
				if i < fork[b]*ps {
					prompts[b][i] = prompts[0][i]
				} else {
					prompts[b][i] = rng.Uint32N(1000)
				}
			}
		}
		store := func(b, from, to int) {
			hs := make([]uint64, to-from)
			for i := range hs {
				hs[i] = hashOf(b, from+i)
			}
			var parent *uint64
			if from > 0 {
				parent = new(hashOf(b, from-1))
			}
			live(kxBatch(new(int64(0)), kxEvStored(hs, parent, prompts[b][from*ps:to*ps], int64(ps), kxEvOpt{})))
		}
		next := make([]int, 3)
		for next[0] < pages || next[1] < pages || next[2] < pages {
			b := rng.IntN(3)
			if next[b] == pages {
				continue
			}
			to := min(next[b]+1+rng.IntN(20), pages)
			store(b, next[b], to)
			next[b] = to
		}
		score := func(stage string) {
			for b := range prompts {
				for _, cut := range []int{len(prompts[b]), rng.IntN(len(prompts[b]) + 1)} {
					q := spec.KVEvScoreQuery{Tokens: make([]int64, cut)}
					for i := range cut {
						q.Tokens[i] = int64(prompts[b][i])
					}
					for _, exact := range []bool{false, true} {
						q.Exact = exact
						rs, rerr := rx.Score(q)
						fs, ferr := fx.Score(q)
						rb, _ := json.Marshal(rs)
						fb, _ := json.Marshal(fs)
						if !bytes.Equal(rb, fb) || rerr != nil || ferr != nil {
							t.Fatalf("seed %d, %s, branch %d, %d tokens, exact %t: ref %s (%v), fast %s (%v)", seed, stage, b, cut, exact, rb, rerr, fb, ferr)
						}
					}
				}
			}
		}
		score("interleaved")
		// Holes in the middle, and leaves pruned back.
		var removed []uint64
		for range 30 {
			b, i := rng.IntN(3), rng.IntN(pages)
			removed = append(removed, hashOf(b, i))
		}
		for b := range 3 {
			for i := pages - 1 - rng.IntN(30); i < pages; i++ {
				removed = append(removed, hashOf(b, i))
			}
		}
		live(kxBatch(new(int64(0)), kxEvRemoved(removed, kxEvOpt{})))
		score("holed")
		// The pruned tails come back a page per event, last branch first,
		// into the slots the free list hands out.
		for b := 2; b >= 0; b-- {
			for i := pages - 30; i < pages; i++ {
				store(b, i, i+1)
			}
		}
		score("restored")
	}
}

// TestKVEvBlockWalkIsTakenOnAChainInConsecutiveSlots checks that the fast
// path exists where it should: a chain stored in order occupies slots
// 1, 2, … and walkBlock accepts its blocks whole (the page-by-page loop
// would give the same score, only slower).
func TestKVEvBlockWalkIsTakenOnAChainInConsecutiveSlots(t *testing.T) {
	ix, prompt := kxScoreIndex(t, 1, 4096, 16)
	e := (*ix.sorted.Load())[0]
	pl := e.pools[kvPoolKey{0, kvTierGPU}]
	chain, err := kvPromptChain(nil, prompt, kvSeedBase, 16, "tokens", true)
	if err != nil {
		t.Fatal(err)
	}
	qid := pl.nsIDs[""]
	for d := 0; d+kvWalkBlock <= len(chain); d += kvWalkBlock {
		if !pl.walkBlock(chain[d:d+kvWalkBlock], int32(d), qid) {
			t.Fatalf("block at page %d not taken whole", d)
		}
	}
	// A block that runs into a different hash is refused whole.
	bad := slices.Clone(chain[:kvWalkBlock])
	bad[kvWalkBlock-1]++
	if pl.walkBlock(bad, 0, qid) {
		t.Fatal("a block with a wrong last hash was accepted")
	}
}

// TestAChainSwitchingNamespacesHashesAsTheReferenceDoes: pages whose
// namespace differs from their parent's take their prefix hash from the
// nearest ancestor in their own namespace (A4), which must give the chain
// over the whole path: a chain cycling through three LoRA namespaces and
// the base model, with a page returning to a namespace last seen several
// pages up, leaves the same state and digest as the reference, and the
// whole prompt scores alike in each namespace, by hashes and exactly.
func TestAChainSwitchingNamespacesHashesAsTheReferenceDoes(t *testing.T) {
	f, err := newKVIndex(spec.KVEvConfig{}, []spec.KVEvStream{{Name: "v"}}, fault.KVEv{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := ref.NewKVEvIndex(spec.KVEvConfig{}, []spec.KVEvStream{{Name: "v"}})
	if err != nil {
		t.Fatal(err)
	}
	lora := []*int64{nil, new(int64(1)), new(int64(2)), new(int64(3))}
	pattern := []int{0, 1, 1, 2, 0, 3, 3, 1, 2, 2, 0, 1}
	var evs []kxMp
	var prev *uint64
	for i, k := range pattern {
		h := uint64(0x100 + i)
		evs = append(evs, kxEvStored([]uint64{h}, prev, []uint32{uint32(10 + i), uint32(20 + i)}, 2, kxEvOpt{loraID: lora[k]}))
		prev = new(h)
	}
	// A second chain in the base model over pages 1-4's tokens: its 4th
	// page's chain is seed("") over those four pages, which a hash of
	// page 4 started from the seed instead of page 0's hash would equal
	// (a false chain collision, A4).
	prev = nil
	for i := 1; i <= 4; i++ {
		h := uint64(0x200 + i)
		evs = append(evs, kxEvStored([]uint64{h}, prev, []uint32{uint32(10 + i), uint32(20 + i)}, 2, kxEvOpt{}))
		prev = new(h)
	}
	frames := [][]byte{[]byte("kv@p@m"), make([]byte, 8), kxBatch(new(int64(0)), evs...)}
	for name, ix := range map[string]spec.KVEvIndex{"fast": f, "ref": r} {
		if res := ix.Live("v", frames); res.Error != nil || len(res.Errors) > 0 {
			t.Fatalf("%s: %+v", name, res)
		}
	}
	fs, rs := f.State(), r.State()
	fb, _ := json.Marshal(fs)
	rb, _ := json.Marshal(rs)
	if !bytes.Equal(fb, rb) {
		t.Fatalf("states differ:\nfast %s\nref  %s", fb, rb)
	}
	if len(fs.Engines) != 1 || len(fs.Engines[0].Pools) != 1 || len(fs.Engines[0].Pools[0].Pages) != len(pattern)+4 {
		t.Fatalf("want chains of %d and 4 pages: %s", len(pattern), fb)
	}
	var prompt []int64
	for i := range pattern {
		prompt = append(prompt, int64(10+i), int64(20+i))
	}
	for _, ns := range []string{"", "#1", "#2", "#3"} {
		for _, exact := range []bool{false, true} {
			q := spec.KVEvScoreQuery{Tokens: prompt, Namespace: ns, Exact: exact}
			fsc, ferr := f.Score(q)
			rsc, rerr := r.Score(q)
			if ferr != nil || rerr != nil || !slices.Equal(fsc, rsc) {
				t.Errorf("namespace %q exact %v: fast %v %v, ref %v %v", ns, exact, fsc, ferr, rsc, rerr)
			}
		}
	}
}
