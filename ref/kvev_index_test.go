package ref

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kvtwin/kvtwin/spec"
	"github.com/vmihailenco/msgpack/v5"
)

// Test helpers shared by the index and cursor tests: msgpack payloads
// built with vmihailenco's Encoder from a small value tree, frames, and a
// compact rendering of pools.

// mpMap is an ordered msgpack map; mpBin a msgpack bin.
type (
	mpMap []mpKV
	mpKV  struct {
		k string
		v any
	}
	mpBin []byte
)

func mpEncode(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	var w func(v any)
	w = func(v any) {
		var err error
		switch x := v.(type) {
		case nil:
			err = enc.EncodeNil()
		case string:
			err = enc.EncodeString(x)
		case int:
			err = enc.EncodeInt(int64(x))
		case int64:
			err = enc.EncodeInt(x)
		case uint64:
			err = enc.EncodeUint(x)
		case uint32:
			err = enc.EncodeUint(uint64(x))
		case float64:
			err = enc.EncodeFloat64(x)
		case mpBin:
			err = enc.EncodeBytes(x)
		case []any:
			err = enc.EncodeArrayLen(len(x))
			for _, e := range x {
				w(e)
			}
		case mpMap:
			err = enc.EncodeMapLen(len(x))
			for _, kv := range x {
				w(kv.k)
				w(kv.v)
			}
		default:
			t.Fatalf("mpEncode: %T", v)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	w(v)
	return buf.Bytes()
}

func hexBytes(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hashList(hs []uint64) []any {
	out := make([]any, len(hs))
	for i, h := range hs {
		out[i] = h
	}
	return out
}

func tokenList(ts []uint32) []any {
	out := make([]any, len(ts))
	for i, t := range ts {
		out[i] = t
	}
	return out
}

// evStored is a form-A BlockStored on GPU: tag, block_hashes,
// parent_block_hash, token_ids, block_size, lora_id, medium, lora_name,
// extra_keys, group_idx. parent is nil or a uint64.
func evStored(hashes []uint64, parent any, tokens []uint32, bs int) []any {
	return []any{spec.EventStored, hashList(hashes), parent, tokenList(tokens), bs, nil, "GPU", nil, nil, nil}
}

func withMedium(ev []any, medium any) []any { ev[6] = medium; return ev }
func withGroup(ev []any, g int) []any       { ev[len(ev)-1] = g; return ev }
func withLoraName(ev []any, n string) []any { ev[7] = n; return ev }
func withLoraID(ev []any, id int) []any     { ev[5] = id; return ev }

func evRemoved(hashes []uint64, medium any) []any {
	return []any{spec.EventRemoved, hashList(hashes), medium, nil}
}

func evRemovedGroup(hashes []uint64, medium any, g int) []any {
	return []any{spec.EventRemoved, hashList(hashes), medium, g}
}

func evCleared() []any { return []any{spec.EventCleared} }

// batchBytes is [ts, events, rank]; rank is nil or an int.
func batchBytes(t testing.TB, rank any, events ...[]any) []byte {
	t.Helper()
	evs := make([]any, len(events))
	for i, e := range events {
		evs[i] = e
	}
	return mpEncode(t, []any{1757500000.25, evs, rank})
}

func seqFrame(s uint64) []byte { return binary.BigEndian.AppendUint64(nil, s) }

func liveFrames(topic string, seq uint64, payload []byte) [][]byte {
	return [][]byte{[]byte(topic), seqFrame(seq), payload}
}

func newTestIndex(t testing.TB, cfg spec.KVEvConfig, streams ...spec.KVEvStream) *refKVEvIndex {
	t.Helper()
	ix, err := NewKVEvIndex(cfg, streams)
	if err != nil {
		t.Fatal(err)
	}
	return ix.(*refKVEvIndex)
}

// feed sends payload live on stream at seq and checks the index's
// invariants afterwards.
func feed(t testing.TB, ix *refKVEvIndex, stream, topic string, seq uint64, payload []byte) spec.KVEvStepResult {
	t.Helper()
	r := ix.Live(stream, liveFrames(topic, seq, payload))
	checkKVEvInvariants(t, ix)
	return r
}

// feedOK is feed expecting the batch applied without errors.
func feedOK(t testing.TB, ix *refKVEvIndex, stream, topic string, seq uint64, payload []byte) spec.KVEvStepResult {
	t.Helper()
	r := feed(t, ix, stream, topic, seq, payload)
	if r.Error != nil || len(r.Errors) > 0 || !slices.Contains(r.Applied, seq) {
		t.Fatalf("live %d: %+v", seq, r)
	}
	return r
}

// checkKVEvInvariants checks what every pool must satisfy after every
// event: byHash is exactly the pages' bindings, no hole without a resident
// descendant, no empty pool, pages of the pool's size, unique prefix
// hashes, and the stream/engine ownership links.
func checkKVEvInvariants(t testing.TB, ix *refKVEvIndex) {
	t.Helper()
	for _, st := range ix.streams {
		var n int64
		for _, m := range st.held {
			n += KVMessageBytes(m.frames)
		}
		if n != st.heldBytes || (len(st.held) > 1 && n > ix.cfg.MaxHeldBytes) {
			t.Fatalf("stream %s holds %d messages of %d bytes, counted %d (max_held_bytes %d)", st.cfg.Name, len(st.held), n, st.heldBytes, ix.cfg.MaxHeldBytes)
		}
	}
	for key, e := range ix.engines {
		if e.key != key {
			t.Fatalf("engine %v stored under %v", e.key, key)
		}
		if ix.byName[e.stream] == nil {
			t.Fatalf("engine %v of unknown stream %q", key, e.stream)
		}
		for pk, pool := range e.pools {
			pages := pool.pages()
			if len(pages) == 0 {
				t.Fatalf("engine %v pool %v is empty", key, pk)
			}
			bound := 0
			for _, p := range pages {
				if int64(len(p.tokens)) != pool.pageSize {
					t.Fatalf("page of %d tokens in a pool of page size %d", len(p.tokens), pool.pageSize)
				}
				for h, c := range p.bindings {
					bound++
					if pool.byHash[h] != p || c < 0 {
						t.Fatalf("binding %016x:%d not indexed", uint64(h), c)
					}
				}
				if p.resident() == 0 && !hasResidentDescendant(p) {
					t.Fatalf("hole %v without resident descendant survived pruning", p.tokens)
				}
				if p.parent.children[childKeyOf(kvevPageKey{p.ns, p.tokens})] != p {
					t.Fatalf("page %v not under its parent", p.tokens)
				}
			}
			if bound != len(pool.byHash) {
				t.Fatalf("byHash has %d entries for %d bindings", len(pool.byHash), bound)
			}
			if len(pool.byPrefix) != len(pages) {
				t.Fatalf("%d prefix hashes for %d pages", len(pool.byPrefix), len(pages))
			}
			for _, p := range pages {
				if ph := ix.pagePrefixHash(p); p.prefix != ph || pool.byPrefix[ph] != p {
					t.Fatalf("page %v: prefix hash %x, by definition %x", p.tokens, p.prefix, ph)
				}
			}
		}
	}
}

func hasResidentDescendant(p *kvevPage) bool {
	for _, c := range p.children {
		if c.resident() > 0 || hasResidentDescendant(c) {
			return true
		}
	}
	return false
}

// renderPool renders a pool as "depth:ns[tokens]=resident{hash:count …}"
// per page, pre-order, joined by " | ".
func renderPool(ps spec.KVEvPoolState) string {
	var parts []string
	for _, p := range ps.Pages {
		var bs []string
		for _, b := range p.Bindings {
			bs = append(bs, fmt.Sprintf("%x:%d", uint64(b.Hash), b.Count))
		}
		parts = append(parts, fmt.Sprintf("%d:%s%v=%d{%s}", p.Depth, p.Namespace, p.Tokens, p.Resident, strings.Join(bs, " ")))
	}
	return strings.Join(parts, " | ")
}

func engineState(t testing.TB, ix *refKVEvIndex, source string, rank int64) spec.KVEvEngineState {
	t.Helper()
	for _, e := range ix.State().Engines {
		if e.Source == source && e.DPRank == rank {
			return e
		}
	}
	t.Fatalf("no engine %s/%d", source, rank)
	return spec.KVEvEngineState{}
}

// poolString renders engine (source, rank)'s pool (group, tier), "" when absent.
func poolString(t testing.TB, ix *refKVEvIndex, source string, rank, group int64, tier string) string {
	t.Helper()
	for _, p := range engineState(t, ix, source, rank).Pools {
		if p.Group == group && p.Tier == tier {
			return renderPool(p)
		}
	}
	return ""
}

func scoreOf(t testing.TB, ix *refKVEvIndex, q spec.KVEvScoreQuery) []spec.KVEvScore {
	t.Helper()
	got, err := ix.Score(q)
	if err != nil {
		t.Fatal(err)
	}
	hq := q
	hq.Exact = !q.Exact
	other, err := ix.Score(hq)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(got, other); d != "" {
		t.Fatalf("hashed and exact scores differ (-exact=%v +exact=%v):\n%s", q.Exact, hq.Exact, d)
	}
	return got
}

// blocksOf is the score's blocks for engine source/rank, -1 when unlisted.
func blocksOf(t testing.TB, ix *refKVEvIndex, source string, rank int64, q spec.KVEvScoreQuery) int {
	t.Helper()
	for _, s := range scoreOf(t, ix, q) {
		if s.Source == source && s.DPRank == rank {
			return s.Blocks
		}
	}
	return -1
}

func tokensQ(ts ...int64) spec.KVEvScoreQuery { return spec.KVEvScoreQuery{Tokens: ts} }

func errCodes(es []spec.KVEvEventError) []string {
	var out []string
	for _, e := range es {
		out = append(out, fmt.Sprintf("%d/%d:%s", e.Seq, e.Event, e.Error.Code))
	}
	return out
}

const (
	h1 = 0x1111111111111111
	h2 = 0xF0E1D2C3B4A59687
)

// §5.1's payloads, as printed there.
const (
	hexE1 = `92 cb41da3054981000 00 91 96 ab 426c6f636b53746f726564
		92 cf1111111111111111 cff0e1d2c3b4a59687 c0
		98 01 02 03 04 cc80 ccff cd0100 ce00010000 04 c0`
	hexE2 = `93 cb41da3054981000 00 91 93 ac 426c6f636b52656d6f766564 91 cff0e1d2c3b4a59687 a3 475055 00`
	hexE3 = `93 cb41da3054981000 00 91 9c ab 426c6f636b53746f726564
		91 cff0e1d2c3b4a59687 cf1111111111111111
		94 cc80 ccff cd0100 ce00010000 04
		c0 a3 475055 c0
		91 c0 00 ae 66756c6c5f617474656e74696f6e c0
		00`
	hexE4 = `93 cb41da3054981000 00 93
		89 a4 74797065 ab 426c6f636b53746f726564
		   ac 626c6f636b5f686173686573 91 cf1111111111111111
		   b1 706172656e745f626c6f636b5f68617368 c0
		   a9 746f6b656e5f696473 94 01020304
		   aa 626c6f636b5f73697a65 04
		   a7 6c6f72615f6964 c0  a6 6d656469756d a3 475055
		   a9 6c6f72615f6e616d65 c0
		   a9 67726f75705f696478 00
		83 a4 74797065 ac 426c6f636b52656d6f766564
		   ac 626c6f636b5f686173686573 91 cf1111111111111111 a6 6d656469756d a3 475055
		81 a4 74797065 b0 416c6c426c6f636b73436c6561726564
		00`
	hexE5 = `93 cb41da3054981000 00 91 97 ab 426c6f636b53746f726564 91 ff c0 92 07 08 02 c0 a3 475055 c0`
	hexE6 = `93 cb41da3054981000 00 91 83 a4 74797065 ac 426c6f636b52656d6f766564
		ac 626c6f636b5f686173686573 91 c4 20 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
		a6 6d656469756d a3 475055 00`
	topicE = "kv@10.0.0.7@llama"
)

var promptE1 = tokensQ(1, 2, 3, 4, 128, 255, 256, 65536, 9)

func TestKVEvIndexSection51PayloadsHaveTheirStatedLengths(t *testing.T) {
	for _, c := range []struct {
		hex  string
		want int
	}{{hexE1, 63}, {hexE2, 40}, {hexE3, 83}, {hexE4, 217}, {hexE5, 37}, {hexE6, 90}} {
		if n := len(hexBytes(t, c.hex)); n != c.want {
			t.Errorf("payload of %d bytes, want %d", n, c.want)
		}
	}
}

func TestKVEvIndexE1StoresTwoChainedPagesThatScoreTwo(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "vllm-0"})
	feedOK(t, ix, "vllm-0", topicE, 0, hexBytes(t, hexE1))
	e := engineState(t, ix, "10.0.0.7", 0)
	if e.Model != "llama" || e.Stream != "vllm-0" || e.Stale || e.Tokens != 8 || e.Counters.Stored != 1 {
		t.Fatalf("engine %+v", e)
	}
	want := "0:[1 2 3 4]=1{1111111111111111:1} | 1:[128 255 256 65536]=1{f0e1d2c3b4a59687:1}"
	if got := poolString(t, ix, "10.0.0.7", 0, 0, "GPU"); got != want {
		t.Fatalf("pool %s\nwant %s", got, want)
	}
	got := scoreOf(t, ix, promptE1)
	wantScores := []spec.KVEvScore{{Source: "10.0.0.7", DPRank: 0, Blocks: 2, Tokens: 8, PageSize: 4}}
	if d := cmp.Diff(wantScores, got); d != "" {
		t.Fatal(d)
	}
}

func TestKVEvIndexE2RemovesTheLeafWhichIsPrunedAndTheScoreDropsToOne(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "vllm-0"})
	feedOK(t, ix, "vllm-0", topicE, 0, hexBytes(t, hexE1))
	feedOK(t, ix, "vllm-0", topicE, 1, hexBytes(t, hexE2))
	if got, want := poolString(t, ix, "10.0.0.7", 0, 0, "GPU"), "0:[1 2 3 4]=1{1111111111111111:1}"; got != want {
		t.Fatalf("pool %s, want %s", got, want)
	}
	if b := blocksOf(t, ix, "10.0.0.7", 0, promptE1); b != 1 {
		t.Fatalf("score %d, want 1", b)
	}
	if _, bound := ix.engines[spec.KVEvEngineKey{Source: "10.0.0.7", DPRank: 0}].pools[kvevPoolKey{0, "GPU"}].byHash[h2]; bound {
		t.Fatal("H2 still bound after its page was pruned")
	}
}

func TestKVEvIndexE3ReStoresH2UnderH1(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "vllm-0"})
	feedOK(t, ix, "vllm-0", topicE, 0, hexBytes(t, hexE1))
	feedOK(t, ix, "vllm-0", topicE, 1, hexBytes(t, hexE2))
	feedOK(t, ix, "vllm-0", topicE, 2, hexBytes(t, hexE3))
	want := "0:[1 2 3 4]=1{1111111111111111:1} | 1:[128 255 256 65536]=1{f0e1d2c3b4a59687:1}"
	if got := poolString(t, ix, "10.0.0.7", 0, 0, "GPU"); got != want {
		t.Fatalf("pool %s\nwant %s", got, want)
	}
	if b := blocksOf(t, ix, "10.0.0.7", 0, promptE1); b != 2 {
		t.Fatalf("score %d, want 2", b)
	}
}

func TestKVEvIndexE4StoreRemoveClearLeavesAnEmptyEngineThatIsNotStale(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "vllm-0"})
	feedOK(t, ix, "vllm-0", topicE, 0, hexBytes(t, hexE4))
	e := engineState(t, ix, "10.0.0.7", 0)
	want := spec.KVEvEngineCounters{Stored: 1, Removed: 1, Cleared: 1}
	if len(e.Pools) != 0 || e.Stale || e.Tokens != 0 || e.Counters != want {
		t.Fatalf("engine %+v", e)
	}
	if got := scoreOf(t, ix, promptE1); got != nil {
		t.Fatalf("an engine without a GPU pool is scored: %+v", got)
	}
}

func TestKVEvIndexE5NegativeHashNormalisesAndTheNilRankIsTheStreams(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "sglang", Rank: 3})
	feedOK(t, ix, "sglang", "", 0, hexBytes(t, hexE5))
	if got, want := poolString(t, ix, "sglang", 3, 0, "GPU"), "0:[7 8]=1{ffffffffffffffff:1}"; got != want {
		t.Fatalf("pool %s, want %s", got, want)
	}
	got := scoreOf(t, ix, tokensQ(7, 8, 9))
	if d := cmp.Diff([]spec.KVEvScore{{Source: "sglang", DPRank: 3, Blocks: 1, Tokens: 2, PageSize: 2}}, got); d != "" {
		t.Fatal(d)
	}
}

func TestKVEvIndexE6BinHashRemovesTheBlockItsIntFormStored(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "vllm-0"})
	feedOK(t, ix, "vllm-0", topicE, 0, hexBytes(t, hexE6))
	if c := engineState(t, ix, "10.0.0.7", 0).Counters; c.UnknownRemovals != 1 || c.Removed != 1 {
		t.Fatalf("removal of a hash never stored: %+v", c)
	}
	feedOK(t, ix, "vllm-0", topicE, 1, batchBytes(t, 0, evStored([]uint64{0x18191a1b1c1d1e1f}, nil, []uint32{5, 6, 7, 8}, 4)))
	feedOK(t, ix, "vllm-0", topicE, 2, hexBytes(t, hexE6))
	e := engineState(t, ix, "10.0.0.7", 0)
	if len(e.Pools) != 0 || e.Counters.UnknownRemovals != 1 {
		t.Fatalf("the bin hash did not name the int-stored block: %+v", e)
	}
}

func TestKVEvIndexRemovingAnInteriorBlockLeavesAHoleThatStopsTheScore(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "s"})
	feedOK(t, ix, "s", "", 0, batchBytes(t, nil, evStored([]uint64{1, 2, 3}, nil, []uint32{1, 2, 3, 4, 5, 6}, 2)))
	feedOK(t, ix, "s", "", 1, batchBytes(t, nil, evRemoved([]uint64{2}, "GPU")))
	want := "0:[1 2]=1{1:1} | 1:[3 4]=0{2:0} | 2:[5 6]=1{3:1}"
	if got := poolString(t, ix, "s", 0, 0, "GPU"); got != want {
		t.Fatalf("pool %s\nwant %s", got, want)
	}
	if b := blocksOf(t, ix, "s", 0, tokensQ(1, 2, 3, 4, 5, 6)); b != 1 {
		t.Fatalf("score %d, want 1 (the hole stops the walk)", b)
	}
	// A later store of the same interior block reconnects its descendants.
	feedOK(t, ix, "s", "", 2, batchBytes(t, nil, evStored([]uint64{2}, uint64(1), []uint32{3, 4}, 2)))
	if b := blocksOf(t, ix, "s", 0, tokensQ(1, 2, 3, 4, 5, 6)); b != 3 {
		t.Fatalf("score %d after re-store, want 3", b)
	}
	// Removing the leaf and then the interior block prunes both holes.
	feedOK(t, ix, "s", "", 3, batchBytes(t, nil, evRemoved([]uint64{3, 2}, "GPU")))
	if got, want := poolString(t, ix, "s", 0, 0, "GPU"), "0:[1 2]=1{1:1}"; got != want {
		t.Fatalf("pool %s, want %s", got, want)
	}
}

func TestKVEvIndexStoringUnderAHoleParentIsAllowed(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "s"})
	feedOK(t, ix, "s", "", 0, batchBytes(t, nil, evStored([]uint64{1, 2}, nil, []uint32{1, 2, 3, 4}, 2)))
	feedOK(t, ix, "s", "", 1, batchBytes(t, nil, evRemoved([]uint64{1}, "GPU")))
	feedOK(t, ix, "s", "", 2, batchBytes(t, nil, evStored([]uint64{3}, uint64(1), []uint32{9, 9}, 2)))
	want := "0:[1 2]=0{1:0} | 1:[3 4]=1{2:1} | 1:[9 9]=1{3:1}"
	if got := poolString(t, ix, "s", 0, 0, "GPU"); got != want {
		t.Fatalf("pool %s\nwant %s", got, want)
	}
	if e := engineState(t, ix, "s", 0); e.Stale || e.Counters.OrphanStores != 0 {
		t.Fatalf("a store under a hole is not an orphan: %+v", e)
	}
}

func TestKVEvIndexOrphanStoreMarksTheEngineStaleAndChangesNothing(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "s"})
	feedOK(t, ix, "s", "", 0, batchBytes(t, nil, evStored([]uint64{1}, nil, []uint32{1, 2}, 2)))
	before := ix.State()
	feedOK(t, ix, "s", "", 1, batchBytes(t, nil, evStored([]uint64{5, 6}, uint64(99), []uint32{3, 4, 5, 6}, 2)))
	e := engineState(t, ix, "s", 0)
	if !e.Stale || e.StaleSince != 1 || e.Counters.OrphanStores != 1 || e.Counters.Stored != 2 || e.Counters.Refused != 0 {
		t.Fatalf("engine %+v", e)
	}
	if d := cmp.Diff(before.Engines[0].Pools, e.Pools); d != "" {
		t.Fatalf("an orphan changed the pools:\n%s", d)
	}
	// An orphan in a pool that does not exist yet (another tier) too.
	feedOK(t, ix, "s", "", 2, batchBytes(t, nil, withMedium(evStored([]uint64{5}, uint64(1), []uint32{3, 4}, 2), "cpu")))
	if e := engineState(t, ix, "s", 0); len(e.Pools) != 1 || e.Counters.OrphanStores != 2 || e.StaleSince != 1 {
		t.Fatalf("engine %+v", e)
	}
}

func TestKVEvIndexDuplicateCopiesAreCountedTwoStoresOneRemoveStaysResident(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "s"})
	st := batchBytes(t, nil, evStored([]uint64{1}, nil, []uint32{1, 2}, 2))
	feedOK(t, ix, "s", "", 0, st)
	feedOK(t, ix, "s", "", 1, st)
	feedOK(t, ix, "s", "", 2, batchBytes(t, nil, evRemoved([]uint64{1}, "GPU")))
	if got, want := poolString(t, ix, "s", 0, 0, "GPU"), "0:[1 2]=1{1:1}"; got != want {
		t.Fatalf("pool %s, want %s", got, want)
	}
	if b := blocksOf(t, ix, "s", 0, tokensQ(1, 2)); b != 1 {
		t.Fatalf("score %d, want 1", b)
	}
	// Within one event the hole keeps its binding until the event's
	// pruning: the second removal finds it at 0, not unknown.
	feedOK(t, ix, "s", "", 3, batchBytes(t, nil, evRemoved([]uint64{1, 1}, "GPU")))
	if e := engineState(t, ix, "s", 0); len(e.Pools) != 0 || e.Counters.UnknownRemovals != 0 {
		t.Fatalf("second copy removed: %+v", e)
	}
	feedOK(t, ix, "s", "", 4, batchBytes(t, nil, evRemoved([]uint64{1}, "GPU")))
	if e := engineState(t, ix, "s", 0); e.Counters.UnknownRemovals != 1 {
		t.Fatalf("after pruning the hash is unknown: %+v", e)
	}
}

func TestKVEvIndexARemovalNeverTakesABindingBelowZero(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "s"})
	feedOK(t, ix, "s", "", 0, batchBytes(t, nil, evStored([]uint64{1, 2}, nil, []uint32{1, 2, 3, 4}, 2)))
	feedOK(t, ix, "s", "", 1, batchBytes(t, nil, evRemoved([]uint64{1, 1, 1}, "GPU")))
	want := "0:[1 2]=0{1:0} | 1:[3 4]=1{2:1}"
	if got := poolString(t, ix, "s", 0, 0, "GPU"); got != want {
		t.Fatalf("pool %s\nwant %s", got, want)
	}
	feedOK(t, ix, "s", "", 2, batchBytes(t, nil, evStored([]uint64{1}, nil, []uint32{1, 2}, 2)))
	if got, want := poolString(t, ix, "s", 0, 0, "GPU"), "0:[1 2]=1{1:1} | 1:[3 4]=1{2:1}"; got != want {
		t.Fatalf("pool %s\nwant %s", got, want)
	}
}

func TestKVEvIndexTwoHashesCanNameOnePage(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "s"})
	feedOK(t, ix, "s", "", 0, batchBytes(t, nil, evStored([]uint64{1}, nil, []uint32{1, 2}, 2)))
	feedOK(t, ix, "s", "", 1, batchBytes(t, nil, evStored([]uint64{7}, nil, []uint32{1, 2}, 2)))
	if got, want := poolString(t, ix, "s", 0, 0, "GPU"), "0:[1 2]=2{1:1 7:1}"; got != want {
		t.Fatalf("pool %s, want %s", got, want)
	}
	// A child stored under either hash lands under the same page.
	feedOK(t, ix, "s", "", 2, batchBytes(t, nil, evStored([]uint64{8}, uint64(7), []uint32{3, 4}, 2)))
	feedOK(t, ix, "s", "", 3, batchBytes(t, nil, evRemoved([]uint64{1}, "GPU")))
	if got, want := poolString(t, ix, "s", 0, 0, "GPU"), "0:[1 2]=1{1:0 7:1} | 1:[3 4]=1{8:1}"; got != want {
		t.Fatalf("pool %s, want %s", got, want)
	}
	feedOK(t, ix, "s", "", 4, batchBytes(t, nil, evRemoved([]uint64{7, 8}, "GPU")))
	e := engineState(t, ix, "s", 0)
	if len(e.Pools) != 0 {
		t.Fatalf("pruned page kept: %+v", e.Pools)
	}
}

func TestKVEvIndexHashConflictRefusalLeavesThePoolUnchanged(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "s"})
	feedOK(t, ix, "s", "", 0, batchBytes(t, nil, evStored([]uint64{1, 2}, nil, []uint32{1, 2, 3, 4}, 2)))
	before := ix.State().Engines[0].Pools
	// Block 0 is new, block 1's hash names [1 2]: the whole event is
	// refused, block 0 included; the batch's next event still applies.
	r := feed(t, ix, "s", "", 1, batchBytes(t, nil,
		evStored([]uint64{5, 1}, nil, []uint32{9, 9, 8, 8}, 2),
		evStored([]uint64{3}, uint64(2), []uint32{5, 6}, 2)))
	if d := cmp.Diff([]string{"1/0:hash_conflict"}, errCodes(r.Errors)); d != "" {
		t.Fatal(d)
	}
	if f := r.Errors[0].Error.Field; f != "payload.events[0].block_hashes[1]" {
		t.Fatalf("field %s", f)
	}
	want := renderPool(before[0]) + " | 2:[5 6]=1{3:1}"
	if got := poolString(t, ix, "s", 0, 0, "GPU"); got != want {
		t.Fatalf("pool %s\nwant %s", got, want)
	}
	e := engineState(t, ix, "s", 0)
	if e.Counters.Refused != 1 || e.Counters.Stored != 2 || e.Stale {
		t.Fatalf("counters %+v", e)
	}
	// The same hash twice in one store for two different pages conflicts too.
	r = feed(t, ix, "s", "", 2, batchBytes(t, nil, evStored([]uint64{9, 9}, nil, []uint32{7, 7, 6, 6}, 2)))
	if d := cmp.Diff([]string{"2/0:hash_conflict"}, errCodes(r.Errors)); d != "" {
		t.Fatal(d)
	}
	// The same tokens in another namespace are another page: hash 1 conflicts.
	r = feed(t, ix, "s", "", 3, batchBytes(t, nil, withLoraName(evStored([]uint64{1}, nil, []uint32{1, 2}, 2), "lora-a")))
	if d := cmp.Diff([]string{"3/0:hash_conflict"}, errCodes(r.Errors)); d != "" {
		t.Fatal(d)
	}
}

func TestKVEvIndexTokenCountAndBlockSizeChangeAreRefused(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "s"})
	feedOK(t, ix, "s", "", 0, batchBytes(t, nil, evStored([]uint64{1}, nil, []uint32{1, 2}, 2)))
	r := feed(t, ix, "s", "", 1, batchBytes(t, nil,
		evStored([]uint64{2, 3}, nil, []uint32{1, 2, 3}, 2),
		evStored([]uint64{2}, nil, []uint32{1, 2, 3}, 3),
		evStored([]uint64{2}, nil, []uint32{1}, math.MaxInt64)))
	if d := cmp.Diff([]string{"1/0:token_count", "1/1:block_size_change", "1/2:token_count"}, errCodes(r.Errors)); d != "" {
		t.Fatal(d)
	}
	want := spec.ErrorObjectOf(KVTokenCountError(0, 2, 2, 3))
	if d := cmp.Diff(want, r.Errors[0].Error); d != "" {
		t.Fatal(d)
	}
	want = spec.ErrorObjectOf(KVBlockSizeChangeError(1, 3, 2, 0, "GPU"))
	if d := cmp.Diff(want, r.Errors[1].Error); d != "" {
		t.Fatal(d)
	}
	// Another tier or group is another pool with its own page size.
	feedOK(t, ix, "s", "", 2, batchBytes(t, nil,
		withMedium(evStored([]uint64{2}, nil, []uint32{1, 2, 3}, 3), "cpu"),
		withGroup(evStored([]uint64{3}, nil, []uint32{1, 2, 3, 4}, 4), 1)))
	if e := engineState(t, ix, "s", 0); len(e.Pools) != 3 || e.Tokens != 2+3+4 || e.Stale {
		t.Fatalf("engine %+v", e)
	}
	// A pool emptied by pruning forgets its page size.
	feedOK(t, ix, "s", "", 3, batchBytes(t, nil, evRemoved([]uint64{1}, nil),
		evStored([]uint64{4}, nil, []uint32{1, 2, 3, 4, 5}, 5)))
	if got, want := poolString(t, ix, "s", 0, 0, "GPU"), "0:[1 2 3 4 5]=1{4:1}"; got != want {
		t.Fatalf("pool %s, want %s", got, want)
	}
}

func TestKVEvIndexChainCollisionIsRefusedBeforeAnyMutation(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "s"})
	// A weak chain: the sum of the tokens (and the previous value), so
	// [1 2] and [2 1], or [3 0], collide.
	ix.next = func(prev spec.PrefixHash, tokens []uint32) spec.PrefixHash {
		for _, t := range tokens {
			prev += spec.PrefixHash(t)
		}
		return prev
	}
	ix.seed = func(string) spec.PrefixHash { return 0 }
	feedOK(t, ix, "s", "", 0, batchBytes(t, nil, evStored([]uint64{1}, nil, []uint32{1, 2}, 2)))
	r := feed(t, ix, "s", "", 1, batchBytes(t, nil, evStored([]uint64{5, 6}, nil, []uint32{7, 7, 2, 1}, 2)))
	// Block 0 ([7 7], chain 14) is fine; block 1's chain is 17, no clash.
	if len(r.Errors) != 0 {
		t.Fatalf("errors %+v", r.Errors)
	}
	r = feed(t, ix, "s", "", 2, batchBytes(t, nil, evStored([]uint64{8, 9}, nil, []uint32{5, 5, 2, 1}, 2)))
	// Block 0 ([5 5], chain 10) and block 1 ([5 5][2 1], chain 13): no clash either.
	if len(r.Errors) != 0 {
		t.Fatalf("errors %+v", r.Errors)
	}
	before := poolString(t, ix, "s", 0, 0, "GPU")
	r = feed(t, ix, "s", "", 3, batchBytes(t, nil, evStored([]uint64{10, 11}, uint64(1), []uint32{0, 0, 4, 6}, 2)))
	// Block 0 under [1 2] is [1 2][0 0], chain 3 = [1 2]'s own chain.
	if d := cmp.Diff([]string{"3/0:chain_collision"}, errCodes(r.Errors)); d != "" {
		t.Fatal(d)
	}
	if d := cmp.Diff(spec.ErrorObjectOf(KVChainCollisionError(0, 0, 3)), r.Errors[0].Error); d != "" {
		t.Fatal(d)
	}
	if got := poolString(t, ix, "s", 0, 0, "GPU"); got != before {
		t.Fatalf("refused store changed the pool:\n%s\nwant\n%s", got, before)
	}
	// Two pages new in the same store collide with each other: [2 2] then
	// [2 2][0 0] have chains 4 and 4.
	r = feed(t, ix, "s", "", 4, batchBytes(t, nil, evStored([]uint64{12, 13}, nil, []uint32{2, 2, 0, 0}, 2)))
	if d := cmp.Diff([]string{"4/0:chain_collision"}, errCodes(r.Errors)); d != "" {
		t.Fatal(d)
	}
	if d := cmp.Diff(spec.ErrorObjectOf(KVChainCollisionError(0, 1, 4)), r.Errors[0].Error); d != "" {
		t.Fatal(d)
	}
	if got := poolString(t, ix, "s", 0, 0, "GPU"); got != before {
		t.Fatalf("refused store changed the pool:\n%s\nwant\n%s", got, before)
	}
}

// TestKVEvIndexTokenlessCopyMeetingACollisionIsRefused: a tokenless copy
// (§2.3 step 6, A14) walks up to the nearest ancestor whose prefix hash the
// tier has; a page there with other tokens is a chain collision, refused
// with the ancestor's hash before any mutation. A weak chain (the sum of
// the tokens) makes CPU's [3 0] collide with GPU's [1 2].
func TestKVEvIndexTokenlessCopyMeetingACollisionIsRefused(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "s"})
	ix.next = func(prev spec.PrefixHash, tokens []uint32) spec.PrefixHash {
		for _, t := range tokens {
			prev += spec.PrefixHash(t)
		}
		return prev
	}
	ix.seed = func(string) spec.PrefixHash { return 0 }
	feedOK(t, ix, "s", "", 0, batchBytes(t, nil, evStored([]uint64{1, 2}, nil, []uint32{1, 2, 3, 4}, 2),
		withMedium(evStored([]uint64{9}, nil, []uint32{3, 0}, 2), "CPU")))
	before := poolString(t, ix, "s", 0, 0, "CPU")
	r := feed(t, ix, "s", "", 1, batchBytes(t, nil, withMedium(evStored([]uint64{2}, nil, nil, 2), "CPU")))
	if d := cmp.Diff([]string{"1/0:chain_collision"}, errCodes(r.Errors)); d != "" {
		t.Fatal(d)
	}
	if d := cmp.Diff(spec.ErrorObjectOf(KVChainCollisionError(0, 0, 3)), r.Errors[0].Error); d != "" {
		t.Fatal(d)
	}
	if got := poolString(t, ix, "s", 0, 0, "CPU"); got != before {
		t.Fatalf("refused copy changed the pool:\n%s\nwant\n%s", got, before)
	}
}

// TestKVEvIndexPrefixHashesRestartAtANamespaceSwitch is A4 as amended by
// A14, derived from the text with the §1.14 primitives: a page under the
// root chains its namespace's seed over its tokens, a page under a parent
// of its namespace the parent's hash, and a page under a parent of another
// namespace its namespace's seed chained over the parent's hash (one unit)
// and then its tokens.
func TestKVEvIndexPrefixHashesRestartAtANamespaceSwitch(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "s"})
	feedOK(t, ix, "s", "", 0, batchBytes(t, nil,
		evStored([]uint64{1}, nil, []uint32{1, 2}, 2),
		withLoraName(evStored([]uint64{2}, uint64(1), []uint32{3, 4}, 2), "a"),
		evStored([]uint64{3}, uint64(2), []uint32{5, 6}, 2),
		evStored([]uint64{4}, uint64(3), []uint32{7, 8}, 2)))
	seed := func(ns string) spec.PrefixHash {
		return PrefixHashSeed(spec.ExtraKey{Extra: ns, HasExtra: ns != ""}, false)
	}
	h1 := NextPrefixHash(seed(""), []spec.Unit{1, 2})
	h2 := NextPrefixHash(NextPrefixHash(seed("a"), []spec.Unit{spec.Unit(h1)}), []spec.Unit{3, 4})
	h3 := NextPrefixHash(NextPrefixHash(seed(""), []spec.Unit{spec.Unit(h2)}), []spec.Unit{5, 6})
	h4 := NextPrefixHash(h3, []spec.Unit{7, 8})
	pool := ix.engines[spec.KVEvEngineKey{Source: "s", DPRank: 0}].pools[kvevPoolKey{0, "GPU"}]
	want := map[spec.EvHash]spec.PrefixHash{1: h1, 2: h2, 3: h3, 4: h4}
	for h, ph := range want {
		if got := ix.pagePrefixHash(pool.byHash[h]); got != ph {
			t.Errorf("hash %d: prefix hash %x, want %x", h, got, ph)
		}
	}
	for h, ph := range want {
		if pool.byPrefix[ph] != pool.byHash[h] {
			t.Errorf("byPrefix misses hash %d's page", h)
		}
	}
	// The hashed score walks the query's namespace only.
	if b := blocksOf(t, ix, "s", 0, tokensQ(1, 2, 3, 4, 5, 6)); b != 1 {
		t.Fatalf("score %d, want 1", b)
	}
}

func TestKVEvIndexPoolBudgetRefusesTheStoreAndMarksTheEngineStale(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{MaxTokensPerEngine: 6}, spec.KVEvStream{Name: "s"})
	feedOK(t, ix, "s", "", 0, batchBytes(t, nil, evStored([]uint64{1, 2}, nil, []uint32{1, 2, 3, 4}, 2)))
	// Holes count: remove the interior block, its page still holds tokens.
	feedOK(t, ix, "s", "", 1, batchBytes(t, nil, evRemoved([]uint64{1}, nil)))
	// 4 + 2 = 6 fits, re-storing an existing page costs nothing.
	feedOK(t, ix, "s", "", 2, batchBytes(t, nil,
		withMedium(evStored([]uint64{3}, nil, []uint32{5, 6}, 2), "CPU"),
		evStored([]uint64{1}, nil, []uint32{1, 2}, 2)))
	before := ix.State().Engines[0].Pools
	r := feed(t, ix, "s", "", 3, batchBytes(t, nil, evStored([]uint64{4}, uint64(2), []uint32{7, 8}, 2)))
	if d := cmp.Diff([]string{"3/0:pool_budget"}, errCodes(r.Errors)); d != "" {
		t.Fatal(d)
	}
	if d := cmp.Diff(spec.ErrorObjectOf(KVPoolBudgetError(0, 8, 6)), r.Errors[0].Error); d != "" {
		t.Fatal(d)
	}
	e := engineState(t, ix, "s", 0)
	if !e.Stale || e.StaleSince != 3 || e.Tokens != 6 || e.Counters.Refused != 1 {
		t.Fatalf("engine %+v", e)
	}
	if d := cmp.Diff(before, e.Pools); d != "" {
		t.Fatal(d)
	}
	// The stream did not lose a batch: a new engine of it starts fresh.
	feedOK(t, ix, "s", "", 4, batchBytes(t, 1))
	if e := engineState(t, ix, "s", 1); e.Stale {
		t.Fatalf("budget refusal marked the stream: %+v", e)
	}
}

func TestKVEvIndexEngineBudgetRefusesTheBatchAndMarksTheStreamsEngines(t *testing.T) {
	// max_engines 2 over 2 streams: a share of floor(2/2) = 1 engine each (A5).
	ix := newTestIndex(t, spec.KVEvConfig{MaxEngines: 2}, spec.KVEvStream{Name: "a"}, spec.KVEvStream{Name: "b"})
	feedOK(t, ix, "a", "", 0, batchBytes(t, 0))
	feedOK(t, ix, "b", "", 0, batchBytes(t, 0))
	r := feed(t, ix, "a", "", 1, batchBytes(t, 1, evStored([]uint64{1}, nil, []uint32{1}, 1)))
	if d := cmp.Diff([]string{"1/-1:engine_budget"}, errCodes(r.Errors)); d != "" {
		t.Fatal(d)
	}
	want := spec.ErrorObject{Code: "engine_budget", Field: "engine", Value: "a/1", Bound: "at most 1 engines fed by stream a (max_engines_per_stream)",
		Message: "engine = a/1: want at most 1 engines fed by stream a (max_engines_per_stream) (a stream feeds at most max_engines_per_stream engines)"}
	if d := cmp.Diff(want, r.Errors[0].Error); d != "" {
		t.Fatal(d)
	}
	if e := r.Errors[0].Engine; e == nil || *e != (spec.KVEvEngineKey{Source: "a", DPRank: 1}) {
		t.Fatalf("the refusal does not name its engine: %+v", r.Errors[0])
	}
	if !slices.Equal(r.Applied, []uint64{1}) {
		t.Fatalf("a refused batch still counts as received: %+v", r)
	}
	s := ix.State()
	if len(s.Engines) != 2 || !s.Engines[0].Stale || s.Engines[0].StaleSince != 1 || s.Engines[1].Stale {
		t.Fatalf("engines %+v", s.Engines)
	}
	// The batch decoded: it is an engine refusal, not a decode error (A2).
	if c := s.Streams[0].Counters; c.EnginesRefused != 1 || c.DecodeErrors != 0 || c.Batches != 2 || *s.Streams[0].StaleSince != 1 {
		t.Fatalf("stream %+v", s.Streams[0])
	}
}

// TestKVEvConfigEngineShareIsTheFairShareOrAValidatedValue pins A5's
// share with examples worked by hand from the spec: floor(max_engines /
// streams) by default, an explicit value at most that, and a refusal
// naming the field, the value and the bound otherwise.
func TestKVEvConfigEngineShareIsTheFairShareOrAValidatedValue(t *testing.T) {
	for _, c := range []struct {
		cfg     spec.KVEvConfig
		streams int
		share   int
		field   string
		value   any
		bound   string
	}{
		{spec.KVEvConfig{}, 0, 256, "", nil, ""},
		{spec.KVEvConfig{}, 1, 256, "", nil, ""},
		{spec.KVEvConfig{}, 2, 128, "", nil, ""},
		{spec.KVEvConfig{}, 3, 85, "", nil, ""},
		{spec.KVEvConfig{}, 256, 1, "", nil, ""},
		{spec.KVEvConfig{MaxEngines: 10}, 4, 2, "", nil, ""},
		{spec.KVEvConfig{MaxEngines: 8, MaxEnginesPerStream: 2}, 3, 2, "", nil, ""},
		{spec.KVEvConfig{MaxEngines: 8, MaxEnginesPerStream: 1}, 3, 1, "", nil, ""},
		{spec.KVEvConfig{MaxEnginesPerStream: 256}, 1, 256, "", nil, ""},
		{spec.KVEvConfig{MaxEnginesPerStream: 7}, 0, 7, "", nil, ""},
		{spec.KVEvConfig{MaxEngines: 8, MaxEnginesPerStream: 3}, 3, 0, "config.max_engines_per_stream", 3,
			"<= 2 = max_engines 8 / 3 streams, so that every stream keeps its share"},
		{spec.KVEvConfig{MaxEnginesPerStream: 129}, 2, 0, "config.max_engines_per_stream", 129,
			"<= 128 = max_engines 256 / 2 streams, so that every stream keeps its share"},
		{spec.KVEvConfig{MaxEngines: 1}, 2, 0, "config.max_engines", 1,
			">= 2, the number of streams: every stream's share is at least one engine"},
		{spec.KVEvConfig{}, 257, 0, "config.max_engines", 256,
			">= 257, the number of streams: every stream's share is at least one engine"},
	} {
		share, err := c.cfg.EngineShare(c.streams)
		if c.field == "" {
			if err != nil || share != c.share {
				t.Errorf("%+v over %d streams: share %d, %v; want %d", c.cfg, c.streams, share, err, c.share)
			}
			continue
		}
		ie, ok := spec.AsInputError(err)
		if !ok || !errors.Is(err, spec.ErrTooLarge) || ie.Field != c.field || ie.Value != c.value || ie.Bound != c.bound {
			t.Errorf("%+v over %d streams: %v; want %s = %v: %s", c.cfg, c.streams, err, c.field, c.value, c.bound)
		}
	}
	for _, v := range []int{-1, spec.MaxKVEvEngines + 1} {
		err := spec.KVEvConfig{MaxEnginesPerStream: v}.Validate()
		if ie, ok := spec.AsInputError(err); !ok || ie.Field != "config.max_engines_per_stream" || ie.Bound != "in [0, 65536]" {
			t.Errorf("max_engines_per_stream %d: %v", v, err)
		}
	}
}

// TestKVEvIndexAStreamCyclingRanksLeavesTheOtherStreamsShare is finding 2
// of issue 27 at the index: stream a sends batches for 300 DP ranks; under
// the default 256 engines over two streams it gets its share of 128 and
// the other 172 batches are engine refusals, not decode errors; stream b
// still creates its own 128 engines, and its stores are scored.
func TestKVEvIndexAStreamCyclingRanksLeavesTheOtherStreamsShare(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "a"}, spec.KVEvStream{Name: "b"})
	for r := range uint64(300) {
		feed(t, ix, "a", "", r, batchBytes(t, int64(r)))
	}
	for r := range uint64(128) {
		feedOK(t, ix, "b", "", r, batchBytes(t, int64(r), evStored([]uint64{r + 1}, nil, []uint32{1, 2}, 2)))
	}
	s := ix.State()
	a, b := s.Streams[0], s.Streams[1]
	if len(a.Engines) != 128 || a.Counters.EnginesRefused != 300-128 || a.Counters.DecodeErrors != 0 || a.Counters.Batches != 300 {
		t.Fatalf("stream a: %d engines, counters %+v", len(a.Engines), a.Counters)
	}
	if len(b.Engines) != 128 || b.Counters.EnginesRefused != 0 || b.Counters.DecodeErrors != 0 || b.StaleSince != nil {
		t.Fatalf("stream b: %d engines, counters %+v", len(b.Engines), b.Counters)
	}
	scores, err := ix.Score(spec.KVEvScoreQuery{Tokens: []int64{1, 2}})
	if err != nil || len(scores) != 128 {
		t.Fatalf("%d scores, %v", len(scores), err)
	}
	for _, sc := range scores {
		if sc.Source != "b" || sc.Blocks != 1 || sc.Stale {
			t.Fatalf("score %+v", sc)
		}
	}
	// b's 129th rank is past its own share, whatever a does.
	r := feed(t, ix, "b", "", 128, batchBytes(t, 128))
	if d := cmp.Diff([]string{"128/-1:engine_budget"}, errCodes(r.Errors)); d != "" {
		t.Fatal(d)
	}
}

// TestKVEvIndexARestartGivesTheStreamItsWholeShareBack: a restart (§3.4)
// drops the stream's engines, so its share is whole again; an
// AllBlocksCleared drops pools, not engines, and frees nothing (A2, A9).
func TestKVEvIndexARestartGivesTheStreamItsWholeShareBack(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{MaxEnginesPerStream: 1}, spec.KVEvStream{Name: "a"})
	feedOK(t, ix, "a", "", 0, batchBytes(t, 0, evCleared()))
	if r := feed(t, ix, "a", "", 1, batchBytes(t, 1)); len(r.Errors) != 1 || r.Errors[0].Error.Code != "engine_budget" {
		t.Fatalf("a cleared engine still fills the share: %+v", r)
	}
	ix.Restart("a")
	feedOK(t, ix, "a", "", 0, batchBytes(t, 1))
	s := ix.State()
	if len(s.Engines) != 1 || s.Engines[0].DPRank != 1 || s.Streams[0].Counters.EnginesRefused != 1 {
		t.Fatalf("state %+v", s)
	}
}

func TestKVEvIndexEngineOwnershipRefusesABatchForAnotherStreamsEngine(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "a"}, spec.KVEvStream{Name: "b"})
	feedOK(t, ix, "a", "kv@pod@m", 0, batchBytes(t, 0, evStored([]uint64{1}, nil, []uint32{1}, 1)))
	r := feed(t, ix, "b", "kv@pod@m", 0, batchBytes(t, 0, evRemoved([]uint64{1}, nil)))
	if d := cmp.Diff([]string{"0/-1:engine_owner"}, errCodes(r.Errors)); d != "" {
		t.Fatal(d)
	}
	if d := cmp.Diff(spec.ErrorObjectOf(KVEngineOwnerError(spec.KVEvEngineKey{Source: "pod", DPRank: 0}, "a")), r.Errors[0].Error); d != "" {
		t.Fatal(d)
	}
	if e := r.Errors[0].Engine; e == nil || *e != (spec.KVEvEngineKey{Source: "pod", DPRank: 0}) {
		t.Fatalf("the refusal does not name its engine: %+v", r.Errors[0])
	}
	s := ix.State()
	if len(s.Engines) != 1 || s.Engines[0].Stream != "a" || s.Engines[0].Stale || s.Engines[0].Tokens != 1 {
		t.Fatalf("the owner's engine changed: %+v", s.Engines)
	}
	if s.Streams[1].StaleSince == nil || *s.Streams[1].StaleSince != 0 || len(s.Streams[1].Engines) != 0 {
		t.Fatalf("stream b %+v", s.Streams[1])
	}
	if c := s.Streams[1].Counters; c.EnginesRefused != 1 || c.DecodeErrors != 0 {
		t.Fatalf("an owner refusal is an engine refusal, not a decode error: %+v", c)
	}
	// Stream b's own rank 1 is its engine, created stale (A3).
	feedOK(t, ix, "b", "kv@pod@m", 1, batchBytes(t, 1))
	if e := engineState(t, ix, "pod", 1); e.Stream != "b" || !e.Stale || e.StaleSince != 0 {
		t.Fatalf("engine %+v", e)
	}
	// After a's restart its engines are gone and b may feed pod/0.
	ix.Restart("a")
	feedOK(t, ix, "b", "kv@pod@m", 2, batchBytes(t, 0))
	if e := engineState(t, ix, "pod", 0); e.Stream != "b" {
		t.Fatalf("engine %+v", e)
	}
}

func TestKVEvIndexANewEngineOfAStaleStreamStartsStale(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "s"})
	feedOK(t, ix, "s", "", 0, batchBytes(t, 0))
	r := feed(t, ix, "s", "", 4, batchBytes(t, 0))
	if d := cmp.Diff([]spec.KVEvGap{{From: 1, To: 4}}, r.Lost); d != "" {
		t.Fatal(d)
	}
	feedOK(t, ix, "s", "", 5, batchBytes(t, 1))
	feedOK(t, ix, "s", "", 6, batchBytes(t, 0, evCleared()))
	s := ix.State()
	if e := s.Engines[0]; e.Stale || e.StaleSince != 0 {
		t.Fatalf("AllBlocksCleared keeps rank 0 stale: %+v", e)
	}
	if e := s.Engines[1]; !e.Stale || e.StaleSince != 4 {
		t.Fatalf("rank 1 did not start stale since 4: %+v", e)
	}
	// The stream still remembers the loss for engines it creates later.
	feedOK(t, ix, "s", "", 7, batchBytes(t, 2))
	if e := engineState(t, ix, "s", 2); !e.Stale || e.StaleSince != 4 {
		t.Fatalf("rank 2 %+v", e)
	}
}

func TestKVEvIndexDecodeErrorLosesTheBatchButTheSeqCountsAsReceived(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "s"})
	feedOK(t, ix, "s", "", 0, batchBytes(t, 0, evStored([]uint64{1}, nil, []uint32{1}, 1)))
	bad := batchBytes(t, 0, evStored([]uint64{2}, nil, []uint32{1}, 1), []any{"BlockStored"})
	r := feed(t, ix, "s", "", 1, bad)
	if d := cmp.Diff([]string{"1/-1:missing_field"}, errCodes(r.Errors)); d != "" {
		t.Fatal(d)
	}
	_, derr := decodeKVBatch(bad)
	if d := cmp.Diff(spec.ErrorObjectOf(derr), r.Errors[0].Error); d != "" {
		t.Fatal(d)
	}
	s := ix.State()
	if s.Streams[0].Next != 2 || s.Streams[0].Counters.DecodeErrors != 1 || !s.Engines[0].Stale || s.Engines[0].StaleSince != 1 {
		t.Fatalf("state %+v", s)
	}
	if s.Engines[0].Tokens != 1 {
		t.Fatal("a batch with a decoding error applied an event")
	}
}

func TestKVEvIndexTokenlessTierUpdateCopiesThePathWithAncestorHoles(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "s"})
	feedOK(t, ix, "s", "", 0, batchBytes(t, nil, withLoraName(evStored([]uint64{1, 2, 3}, nil, []uint32{1, 2, 3, 4, 5, 6}, 2), "lo")))
	feedOK(t, ix, "s", "", 1, batchBytes(t, nil, withMedium(evStored([]uint64{3, 77}, nil, nil, 2), "cpu")))
	want := "0:lo[1 2]=0{} | 1:lo[3 4]=0{} | 2:lo[5 6]=1{3:1}"
	if got := poolString(t, ix, "s", 0, 0, "CPU"); got != want {
		t.Fatalf("CPU pool %s\nwant %s", got, want)
	}
	e := engineState(t, ix, "s", 0)
	if e.Counters.OrphanStores != 1 || e.Stale || e.Tokens != 12 {
		t.Fatalf("a tokenless hash found in no tier is an orphan but not stale: %+v", e)
	}
	// Scores in CPU stop at the ancestor holes; a later tokenless store of
	// the ancestors fills them.
	q := spec.KVEvScoreQuery{Tokens: []int64{1, 2, 3, 4, 5, 6}, Namespace: "lo", Tier: "cpu"}
	if b := blocksOf(t, ix, "s", 0, q); b != 0 {
		t.Fatalf("CPU score %d, want 0", b)
	}
	feedOK(t, ix, "s", "", 2, batchBytes(t, nil, withMedium(evStored([]uint64{1, 2}, nil, nil, 2), "CPU")))
	want = "0:lo[1 2]=1{1:1} | 1:lo[3 4]=1{2:1} | 2:lo[5 6]=1{3:1}"
	if got := poolString(t, ix, "s", 0, 0, "CPU"); got != want {
		t.Fatalf("CPU pool %s\nwant %s", got, want)
	}
	if b := blocksOf(t, ix, "s", 0, q); b != 3 {
		t.Fatalf("CPU score %d, want 3", b)
	}
	// Removing the GPU copies leaves the CPU pool alone.
	feedOK(t, ix, "s", "", 3, batchBytes(t, nil, evRemoved([]uint64{3, 2, 1}, "GPU")))
	if got := poolString(t, ix, "s", 0, 0, "GPU"); got != "" {
		t.Fatalf("GPU pool %s", got)
	}
	if b := blocksOf(t, ix, "s", 0, q); b != 3 {
		t.Fatalf("CPU score %d, want 3", b)
	}
}

func TestKVEvIndexTokenlessTierUpdateSearchesGPUFirstThenLexicographically(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "s"})
	// Hash 5 names [1 1] in DISK, [2 2] in CPU and [3 3] in GPU.
	feedOK(t, ix, "s", "", 0, batchBytes(t, nil,
		withMedium(evStored([]uint64{5}, nil, []uint32{1, 1}, 2), "disk"),
		withMedium(evStored([]uint64{5}, nil, []uint32{2, 2}, 2), "cpu"),
		evStored([]uint64{5}, nil, []uint32{3, 3}, 2)))
	feedOK(t, ix, "s", "", 1, batchBytes(t, nil, withMedium(evStored([]uint64{5}, nil, nil, 2), "NVME")))
	if got, want := poolString(t, ix, "s", 0, 0, "NVME"), "0:[3 3]=1{5:1}"; got != want {
		t.Fatalf("GPU first: %s, want %s", got, want)
	}
	feedOK(t, ix, "s", "", 2, batchBytes(t, nil, evRemoved([]uint64{5}, nil)))
	feedOK(t, ix, "s", "", 3, batchBytes(t, nil, withMedium(evStored([]uint64{5}, nil, nil, 2), "TAPE")))
	if got, want := poolString(t, ix, "s", 0, 0, "TAPE"), "0:[2 2]=1{5:1}"; got != want {
		t.Fatalf("then CPU < DISK < NVME: %s, want %s", got, want)
	}
	// Another group is not searched; a found page of another page size is refused.
	r := feed(t, ix, "s", "", 4, batchBytes(t, nil,
		withGroup(withMedium(evStored([]uint64{5}, nil, nil, 2), "X"), 1),
		withMedium(evStored([]uint64{5}, nil, nil, 3), "Y")))
	if d := cmp.Diff([]string{"4/1:block_size_change"}, errCodes(r.Errors)); d != "" {
		t.Fatal(d)
	}
	if d := cmp.Diff(spec.ErrorObjectOf(KVBlockSizeChangeError(1, 3, 2, 0, "CPU")), r.Errors[0].Error); d != "" {
		t.Fatal(d)
	}
	e := engineState(t, ix, "s", 0)
	if e.Counters.OrphanStores != 1 || len(e.Pools) != 4 {
		t.Fatalf("engine %+v", e)
	}
	// A tokenless store conflicting with the target's own binding is refused.
	feedOK(t, ix, "s", "", 5, batchBytes(t, nil, withMedium(evStored([]uint64{6}, nil, []uint32{2, 2}, 2), "TAPE")))
	r = feed(t, ix, "s", "", 6, batchBytes(t, nil, withMedium(evStored([]uint64{6}, nil, []uint32{4, 4}, 2), "DISK"),
		withMedium(evStored([]uint64{6}, nil, nil, 2), "TAPE")))
	if d := cmp.Diff([]string{"6/1:hash_conflict"}, errCodes(r.Errors)); d != "" {
		t.Fatal(d)
	}
}

func TestKVEvIndexEventsPickTheirPoolByGroupAndTier(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "s"})
	feedOK(t, ix, "s", "", 0, batchBytes(t, nil,
		evStored([]uint64{1}, nil, []uint32{1, 2}, 2),
		withGroup(evStored([]uint64{1}, nil, []uint32{1, 2}, 2), 1),
		withMedium(evStored([]uint64{1}, nil, []uint32{1, 2}, 2), "cpu"),
		withMedium(evStored([]uint64{1}, nil, []uint32{1, 2}, 2), "")))
	if got := poolString(t, ix, "s", 0, 0, "GPU"); got != "0:[1 2]=2{1:2}" {
		t.Fatalf("an empty medium is GPU: %s", got)
	}
	feedOK(t, ix, "s", "", 1, batchBytes(t, nil,
		evRemovedGroup([]uint64{1}, "gpu", 1),
		evRemoved([]uint64{1}, "Cpu"),
		evRemovedGroup([]uint64{1}, nil, 2)))
	e := engineState(t, ix, "s", 0)
	if len(e.Pools) != 1 || e.Pools[0].Group != 0 || e.Pools[0].Tier != "GPU" || e.Counters.UnknownRemovals != 1 {
		t.Fatalf("engine %+v", e)
	}
}

// TestKVEvIndexANilMediumAndGroupAreTheGPUPoolOfGroup0 pins the defaults
// of two optional event fields, derived by hand from
// docs/spec/kv-events.md §2.1: GroupIdx is group_idx "or 0 when nil" and
// Tier the upper-cased medium, "GPU" when nil. A BlockStored whose medium
// and group_idx are both nil (msgpack nil at positions 6 and 9, §1.4
// form A) lands in pool (0, "GPU") with its one page, and a removal naming
// "gpu" and group 0 explicitly finds it there (removed, not unknown).
func TestKVEvIndexANilMediumAndGroupAreTheGPUPoolOfGroup0(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "s"})
	feedOK(t, ix, "s", "", 0, batchBytes(t, nil, withMedium(evStored([]uint64{7}, nil, []uint32{1, 2}, 2), nil)))
	if got := poolString(t, ix, "s", 0, 0, "GPU"); got != "0:[1 2]=1{7:1}" {
		t.Fatalf("pool (0, GPU) = %s, want the stored page", got)
	}
	feedOK(t, ix, "s", "", 1, batchBytes(t, nil, evRemovedGroup([]uint64{7}, "gpu", 0)))
	if e := engineState(t, ix, "s", 0); e.Counters.Removed != 1 || e.Counters.UnknownRemovals != 0 {
		t.Fatalf("after removing it from (0, gpu): %+v, want it removed, not unknown", e)
	}
}

func TestKVEvIndexUnknownEventsAreCountedAndSkipped(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "s"})
	feedOK(t, ix, "s", "", 0, batchBytes(t, nil,
		[]any{"BlockPinned", 1, 2},
		evStored([]uint64{1}, nil, []uint32{1}, 1),
		[]any{"BlockStoredV2"}))
	e := engineState(t, ix, "s", 0)
	if e.Counters.UnknownEvents != 2 || e.Counters.Stored != 1 || e.Tokens != 1 {
		t.Fatalf("engine %+v", e)
	}
}

func TestKVEvIndexEveryCallNamesAConfiguredStream(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "s"})
	want := new(spec.ErrorObjectOf(KVUnknownStreamError("x")))
	for _, r := range []spec.KVEvStepResult{
		ix.Live("x", liveFrames("", 0, batchBytes(t, nil))),
		ix.Replay("x", rep2(0, batchBytes(t, nil))),
		ix.ReplayFailed("x", spec.ReplayReasonTimeout),
		ix.Restart("x"),
	} {
		if d := cmp.Diff(want, r.Error); d != "" || r.Restart || r.Applied != nil {
			t.Fatalf("%+v\n%s", r, d)
		}
	}
	r := ix.ReplayFailed("s", "lost")
	if r.Error == nil || r.Error.Code != spec.ErrBadEnum.Code() {
		t.Fatalf("reason lost: %+v", r)
	}
	if s := ix.State(); len(s.Engines) != 0 || s.Streams[0].Counters != (spec.KVEvStreamCounters{}) {
		t.Fatalf("state %+v", s)
	}
}

func TestKVEvIndexNamespacesNeverShareNodes(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "s"})
	feedOK(t, ix, "s", "", 0, batchBytes(t, nil,
		evStored([]uint64{1}, nil, []uint32{1, 2}, 2),
		withLoraName(evStored([]uint64{2}, nil, []uint32{1, 2}, 2), "a"),
		withLoraID(evStored([]uint64{3}, nil, []uint32{1, 2}, 2), 7),
		withLoraName(withLoraID(evStored([]uint64{4}, nil, []uint32{1, 2}, 2), 7), "")))
	want := "0:[1 2]=1{1:1} | 0:#7[1 2]=2{3:1 4:1} | 0:a[1 2]=1{2:1}"
	if got := poolString(t, ix, "s", 0, 0, "GPU"); got != want {
		t.Fatalf("pool %s\nwant %s", got, want)
	}
	for ns, want := range map[string]int{"": 1, "a": 1, "#7": 1, "b": 0} {
		q := spec.KVEvScoreQuery{Tokens: []int64{1, 2}, Namespace: ns}
		if b := blocksOf(t, ix, "s", 0, q); b != want {
			t.Errorf("namespace %q: %d, want %d", ns, b, want)
		}
	}
}

func TestKVEvIndexScoreTruncatesToWholePagesPerEngineAndReportsTokens(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "b"}, spec.KVEvStream{Name: "a"})
	feedOK(t, ix, "b", "", 0, batchBytes(t, 1, evStored([]uint64{1, 2}, nil, []uint32{1, 2, 3, 4, 5, 6}, 3)))
	feedOK(t, ix, "a", "", 0, batchBytes(t, 2, evStored([]uint64{1, 2}, nil, []uint32{1, 2, 3, 4}, 2)))
	feedOK(t, ix, "a", "", 1, batchBytes(t, 0, withMedium(evStored([]uint64{1}, nil, []uint32{1}, 1), "cpu")))
	got := scoreOf(t, ix, tokensQ(1, 2, 3, 4, 5))
	want := []spec.KVEvScore{
		{Source: "a", DPRank: 2, Blocks: 2, Tokens: 4, PageSize: 2},
		{Source: "b", DPRank: 1, Blocks: 1, Tokens: 3, PageSize: 3},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatal(d)
	}
	got = scoreOf(t, ix, spec.KVEvScoreQuery{Tokens: []int64{1, 9}, Tier: "Cpu"})
	if d := cmp.Diff([]spec.KVEvScore{{Source: "a", DPRank: 0, Blocks: 1, Tokens: 1, PageSize: 1}}, got); d != "" {
		t.Fatal(d)
	}
	if got := scoreOf(t, ix, spec.KVEvScoreQuery{Tokens: []int64{1, 2}, Group: 1}); got != nil {
		t.Fatalf("no engine has group 1: %+v", got)
	}
	if _, err := ix.Score(tokensQ(1, -1)); !errors.Is(err, spec.ErrTokenRange) {
		t.Fatalf("token -1: %v", err)
	}
}

func TestKVEvIndexEngineNamesComeFromKvTopicsOrTheStreamName(t *testing.T) {
	s := spec.KVEvStream{Name: "cfg", Rank: 4}
	two := int64(2)
	for _, c := range []struct {
		topic  string
		rank   *int64
		source string
		dp     int64
		model  string
	}{
		{"kv@10.0.0.7@llama", nil, "10.0.0.7", 4, "llama"},
		{"kv@pod@org/model@v2", &two, "pod", 2, "org/model@v2"},
		{"kv@pod@", nil, "pod", 4, ""},
		{"kv@@m", nil, "cfg", 4, ""},
		{"kv@pod", nil, "cfg", 4, ""},
		{"KV@pod@m", nil, "cfg", 4, ""},
		{"", nil, "cfg", 4, ""},
		{"other", nil, "cfg", 4, ""},
	} {
		k, m := kvEvEngineOf(s, c.topic, c.rank)
		if k != (spec.KVEvEngineKey{Source: c.source, DPRank: c.dp}) || m != c.model {
			t.Errorf("%q: %v %q, want %s/%d %q", c.topic, k, m, c.source, c.dp, c.model)
		}
	}
}

func TestKVEvIndexStateListsPagesPreOrderWithChildrenSortedByNamespaceThenTokens(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "s"})
	feedOK(t, ix, "s", "", 0, batchBytes(t, nil,
		evStored([]uint64{1, 2}, nil, []uint32{5, 1, 9, 9}, 2),
		evStored([]uint64{3}, nil, []uint32{5, 0}, 2),
		evStored([]uint64{4}, uint64(1), []uint32{300, 0}, 2),
		evStored([]uint64{5}, uint64(1), []uint32{10, 0}, 2),
		withLoraName(evStored([]uint64{6}, uint64(1), []uint32{0, 0}, 2), "z"),
		withLoraName(evStored([]uint64{7}, nil, []uint32{0, 0}, 2), "a"),
		withMedium(evStored([]uint64{8}, nil, []uint32{1}, 1), "cpu"),
		withGroup(evStored([]uint64{9}, nil, []uint32{1}, 1), -1)))
	e := engineState(t, ix, "s", 0)
	var pools []string
	for _, p := range e.Pools {
		pools = append(pools, fmt.Sprintf("%d/%s", p.Group, p.Tier))
	}
	if d := cmp.Diff([]string{"-1/GPU", "0/CPU", "0/GPU"}, pools); d != "" {
		t.Fatal(d)
	}
	want := "0:[5 0]=1{3:1} | 0:[5 1]=1{1:1} | 1:[9 9]=1{2:1} | 1:[10 0]=1{5:1} | 1:[300 0]=1{4:1} | 1:z[0 0]=1{6:1} | 0:a[0 0]=1{7:1}"
	if got := renderPool(e.Pools[2]); got != want {
		t.Fatalf("pages %s\nwant %s", got, want)
	}
}

// TestDigestFollowsA8 writes A8's encoding by hand for a small state.
func TestKVEvIndexDigestFollowsA8(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "s", Rank: 1})
	feedOK(t, ix, "s", "", 0, batchBytes(t, nil,
		evStored([]uint64{9, 7}, nil, []uint32{1, 2, 3, 4}, 2),
		evStored([]uint64{5}, nil, []uint32{1, 2}, 2),
		evRemoved([]uint64{5, 9}, nil)))
	feedOK(t, ix, "s", "", 5, batchBytes(t, 0)) // rank 0, stale since 5
	var b []byte
	u64 := func(v uint64) { b = binary.LittleEndian.AppendUint64(b, v) }
	str := func(s string) { u64(uint64(len(s))); b = append(b, s...) }
	u64(2)
	str("s")
	u64(0)
	b = append(b, 1)
	u64(0)
	str("s")
	u64(1)
	b = append(b, 1) // stale since 5 too: the gap marks every engine of the stream
	u64(1)
	u64(0)
	str("GPU")
	u64(2)
	u64(2)
	// page [1 2]: bindings 5:0, 9:0
	u64(0)
	str("")
	u64(2)
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = binary.LittleEndian.AppendUint32(b, 2)
	u64(2)
	u64(5)
	u64(0)
	u64(9)
	u64(0)
	// page [3 4]: binding 7:1
	u64(1)
	str("")
	u64(2)
	b = binary.LittleEndian.AppendUint32(b, 3)
	b = binary.LittleEndian.AppendUint32(b, 4)
	u64(1)
	u64(7)
	u64(1)
	want := sha256.Sum256(b)
	if got := ix.Digest(); got != want {
		t.Fatalf("digest %x\nwant   %x\nstate %+v", got, want, ix.State())
	}
	if s := ix.State(); s.Digest != hex.EncodeToString(want[:]) {
		t.Fatalf("State().Digest %s", s.Digest)
	}
}

func TestKVEvIndexDigestIsIndependentOfTheOrderEnginesWereFed(t *testing.T) {
	streams := []spec.KVEvStream{{Name: "a"}, {Name: "b", Rank: 1}, {Name: "c"}}
	type msg struct {
		stream, topic string
		seq           uint64
		payload       []byte
	}
	per := map[string][]msg{
		"a": {
			{"a", "kv@x@m", 0, batchBytes(t, nil, evStored([]uint64{1, 2}, nil, []uint32{1, 2, 3, 4}, 2))},
			{"a", "kv@x@m", 1, batchBytes(t, 3, evStored([]uint64{1}, nil, []uint32{1, 2}, 2))},
			{"a", "kv@x@m", 2, batchBytes(t, nil, evRemoved([]uint64{1}, nil))},
		},
		"b": {
			{"b", "", 0, batchBytes(t, nil, withMedium(evStored([]uint64{1}, nil, []uint32{7}, 1), "cpu"))},
			{"b", "", 3, batchBytes(t, nil, evStored([]uint64{2}, nil, []uint32{8}, 1))},
		},
		"c": {
			{"c", "kv@x@m", 0, batchBytes(t, 1, evStored([]uint64{5}, nil, []uint32{9, 9, 9}, 3))},
			{"c", "kv@x@m", 1, batchBytes(t, 1, evCleared(), evStored([]uint64{6}, nil, []uint32{9}, 1))},
		},
	}
	orders := [][]string{
		{"a", "a", "a", "b", "b", "c", "c"},
		{"c", "b", "a", "c", "b", "a", "a"},
		{"b", "c", "a", "a", "c", "b", "a"},
	}
	var digests []string
	for _, order := range orders {
		ix := newTestIndex(t, spec.KVEvConfig{}, streams...)
		next := map[string]int{}
		for _, s := range order {
			m := per[s][next[s]]
			next[s]++
			feed(t, ix, m.stream, m.topic, m.seq, m.payload)
		}
		digests = append(digests, ix.State().Digest)
	}
	if digests[0] != digests[1] || digests[0] != digests[2] {
		t.Fatalf("digests differ: %v", digests)
	}
	// And the digest does see a change: feed one more event.
	ix := newTestIndex(t, spec.KVEvConfig{}, streams...)
	for _, m := range append(append(per["a"], per["b"]...), per["c"]...) {
		feed(t, ix, m.stream, m.topic, m.seq, m.payload)
	}
	feed(t, ix, "c", "kv@x@m", 2, batchBytes(t, 1, evRemoved([]uint64{6}, nil)))
	if ix.State().Digest == digests[0] {
		t.Fatal("digest ignored a removal")
	}
}

func TestKVEvIndexNewKVEvIndexValidatesAndAppliesDefaults(t *testing.T) {
	if _, err := NewKVEvIndex(spec.KVEvConfig{MaxEngines: -1}, nil); !errors.Is(err, spec.ErrTooLarge) {
		t.Fatalf("negative max_engines: %v", err)
	}
	if _, err := NewKVEvIndex(spec.KVEvConfig{}, []spec.KVEvStream{{Name: "a"}, {Name: "a"}}); !errors.Is(err, spec.ErrBadEnum) {
		t.Fatalf("duplicate stream: %v", err)
	}
	ix := newTestIndex(t, spec.KVEvConfig{MaxHeld: 3})
	// A5, A7, A10: 256 engines, 4 Mi tokens, 64 MiB held, 2^18 events, ratio 16; one stream's share is all 256 engines.
	if ix.cfg != (spec.KVEvConfig{MaxEngines: 256, MaxTokensPerEngine: 4 << 20, MaxHeld: 3, MaxEnginesPerStream: 256, MaxEvents: 262144, MaxDecodeRatio: 16, MaxHeldBytes: 64 << 20}) {
		t.Fatalf("config %+v", ix.cfg)
	}
	s := ix.State()
	if s.Streams == nil || s.Engines == nil || s.Digest == "" {
		t.Fatalf("empty state %+v", s)
	}
	r := ix.Live("nope", nil)
	if r.Error == nil || r.Error.Code != spec.ErrUnknownStream.Code() {
		t.Fatalf("unknown stream: %+v", r)
	}
}

func TestKVEvIndexCountsAndTokenBudgetsSurviveHostileNumbers(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{MaxTokensPerEngine: 4}, spec.KVEvStream{Name: "s"})
	r := feed(t, ix, "s", "", 0, batchBytes(t, uint64(math.MaxInt64),
		evStored([]uint64{1, 2}, nil, []uint32{1}, math.MaxInt64),
		evStored([]uint64{1}, nil, []uint32{1, 2, 3, 4, 5}, 5),
		withGroup(evStored([]uint64{math.MaxUint64}, nil, []uint32{math.MaxUint32}, 1), math.MinInt64),
		evStored([]uint64{math.MaxUint64}, nil, nil, math.MaxInt64)))
	if d := cmp.Diff([]string{"0/0:token_count", "0/1:pool_budget"}, errCodes(r.Errors)); d != "" {
		t.Fatal(d)
	}
	e := engineState(t, ix, "s", math.MaxInt64)
	if e.Tokens != 1 || e.Counters.OrphanStores != 1 {
		t.Fatalf("engine %+v", e)
	}
}

func TestKVEvIndexIsSafeForConcurrentCalls(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "a"}, spec.KVEvStream{Name: "b", Replay: true})
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b"} {
		wg.Go(func() {
			for s := uint64(0); s < 50; s++ {
				ix.Live(name, liveFrames("", s, batchBytes(t, nil, evStored([]uint64{s + 1}, nil, []uint32{uint32(s)}, 1))))
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			ix.Score(tokensQ(1, 2, 3))
			ix.State()
			ix.Digest()
		}
	})
	wg.Wait()
	checkKVEvInvariants(t, ix)
	for _, e := range ix.State().Engines {
		if e.Tokens != 50 {
			t.Fatalf("engine %+v", e)
		}
	}
}
