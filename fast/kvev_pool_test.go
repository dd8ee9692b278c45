package fast

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// A minimal msgpack encoder for building event payloads in tests.

type kxMp []byte

func kxMArr(elems ...kxMp) kxMp {
	b := kxMp{}
	n := len(elems)
	switch {
	case n < 16:
		b = append(b, 0x90|byte(n))
	case n < 1<<16:
		b = append(b, 0xdc, byte(n>>8), byte(n))
	default:
		b = append(b, 0xdd)
		b = binary.BigEndian.AppendUint32(b, uint32(n))
	}
	for _, e := range elems {
		b = append(b, e...)
	}
	return b
}

func kxMStr(s string) kxMp {
	b := kxMp{}
	n := len(s)
	switch {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n < 256:
		b = append(b, 0xd9, byte(n))
	default:
		b = append(b, 0xda, byte(n>>8), byte(n))
	}
	return append(b, s...)
}

func kxMUint(v uint64) kxMp {
	switch {
	case v < 128:
		return kxMp{byte(v)}
	case v < 1<<32:
		return binary.BigEndian.AppendUint32(kxMp{0xce}, uint32(v))
	default:
		return binary.BigEndian.AppendUint64(kxMp{0xcf}, v)
	}
}

func kxMInt(v int64) kxMp {
	if v >= 0 {
		return kxMUint(uint64(v))
	}
	return binary.BigEndian.AppendUint64(kxMp{0xd3}, uint64(v))
}

var kxMNil = kxMp{0xc0}

func kxMF64(f float64) kxMp { return binary.BigEndian.AppendUint64(kxMp{0xcb}, math.Float64bits(f)) }

func kxMHashes(hs []uint64) kxMp {
	e := make([]kxMp, len(hs))
	for i, h := range hs {
		e[i] = kxMUint(h)
	}
	return kxMArr(e...)
}

func kxMTokens(ts []uint32) kxMp {
	e := make([]kxMp, len(ts))
	for i, t := range ts {
		e[i] = kxMUint(uint64(t))
	}
	return kxMArr(e...)
}

// kxEvOpt are the optional fields of a test event.
type kxEvOpt struct {
	medium   *string
	loraName *string
	loraID   *int64
	group    *int64
}

func kxOptStr(p *string) kxMp {
	if p == nil {
		return kxMNil
	}
	return kxMStr(*p)
}

func kxOptInt(p *int64) kxMp {
	if p == nil {
		return kxMNil
	}
	return kxMInt(*p)
}

// kxEvStored is a form-A BlockStored with every field through group_idx.
func kxEvStored(hashes []uint64, parent *uint64, toks []uint32, bs int64, o kxEvOpt) kxMp {
	par := kxMNil
	if parent != nil {
		par = kxMUint(*parent)
	}
	return kxMArr(kxMStr("BlockStored"), kxMHashes(hashes), par, kxMTokens(toks), kxMInt(bs),
		kxOptInt(o.loraID), kxOptStr(o.medium), kxOptStr(o.loraName), kxMNil, kxOptInt(o.group))
}

func kxEvRemoved(hashes []uint64, o kxEvOpt) kxMp {
	return kxMArr(kxMStr("BlockRemoved"), kxMHashes(hashes), kxOptStr(o.medium), kxOptInt(o.group))
}

func kxEvCleared() kxMp { return kxMArr(kxMStr("AllBlocksCleared")) }

// kxBatch is [ts, events, rank].
func kxBatch(rank *int64, evs ...kxMp) []byte {
	return kxMArr(kxMF64(1757500000.25), kxMArr(evs...), kxOptInt(rank))
}

func kxSeqFrame(s uint64) []byte { return binary.BigEndian.AppendUint64(nil, s) }

func kxLiveFrames(topic string, s uint64, payload []byte) [][]byte {
	return [][]byte{[]byte(topic), kxSeqFrame(s), payload}
}

func kxMustHexT(s string) []byte {
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		panic(err)
	}
	return b
}

func kxU64p(v uint64) *uint64 { return &v }

// kxSeqTokens returns n tokens start, start+1, ….
func kxSeqTokens(start uint32, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = start + uint32(i)
	}
	return out
}

// kxCheckKVInvariants verifies the fast index's internal bookkeeping against
// a full recount: tables, children, counts, tokens, pruning, free lists.
func kxCheckKVInvariants(t testing.TB, ix *kvIndex) {
	t.Helper()
	for _, e := range *ix.sorted.Load() {
		e.mu.RLock()
		var tokens int64
		for key, pl := range e.pools {
			tokens += kxCheckPool(t, e, key, pl)
		}
		if tokens != e.tokens {
			t.Fatalf("%v: tokens %d != %d", e.key, e.tokens, tokens)
		}
		e.mu.RUnlock()
	}
}

// kxCheckPool is kxCheckKVInvariants for one pool; it returns the pool's
// tokens.
func kxCheckPool(t testing.TB, e *kvEngine, key kvPoolKey, pl *kvPool) (tokens int64) {
	t.Helper()
	if key.group != pl.group || key.tier != pl.tier {
		t.Fatalf("%v: pool key %v names pool %d/%s", e.key, key, pl.group, pl.tier)
	}
	if pl.pages == 0 {
		t.Fatalf("%v %v: empty pool kept", e.key, key)
	}
	n := len(pl.page)
	if len(pl.prefix) != n || len(pl.link) != n || len(pl.toks) != (n-1)*int(pl.pageSize) {
		t.Fatalf("%v: arrays of %d slots: prefix %d link %d toks %d", e.key, n, len(pl.prefix), len(pl.link), len(pl.toks))
	}
	if r := pl.page[0]; r.parent != kvNoSlot || r.nbind != 0 || r.resident != 0 {
		t.Fatalf("%v: root %+v", e.key, r)
	}
	var pages int
	hashes := map[uint64]int32{}
	nsCount := map[uint32]int32{}
	prefixes := map[uint64]int32{}
	inPool := make([]bool, n)
	usedNodes := map[int32]bool{}
	var walk func(p int32, depth int) bool // returns: subtree has a resident page
	walk = func(p int32, depth int) bool {
		var kids int32
		any := false
		prev := int32(0)
		for k := kvLinkFirst(pl.link[p]); k != 0; k = pl.page[k].next {
			pg := pl.page[k]
			if pg.parent != p || pg.prev != prev || inPool[k] {
				t.Fatalf("%v: bad sibling links at depth %d", e.key, depth)
			}
			inPool[k] = true
			prev = k
			kids++
			pages++
			tokens += int64(len(pl.tokensOf(k)))
			var res int64
			binds := pl.appendBindings(nil, k)
			if len(binds) != int(pg.nbind) {
				t.Fatalf("%v: slot %d has %d bindings, nbind %d", e.key, k, len(binds), pg.nbind)
			}
			for i := pg.more; i != 0; i = pl.binds[i].next {
				if usedNodes[i] {
					t.Fatalf("%v: binding node %d used twice", e.key, i)
				}
				usedNodes[i] = true
			}
			for _, b := range binds {
				if b.count < 0 {
					t.Fatalf("negative count")
				}
				res += b.count
				if _, ok := hashes[b.hash]; ok {
					t.Fatalf("hash %x bound twice", b.hash)
				}
				hashes[b.hash] = k
			}
			if res != pg.resident {
				t.Fatalf("%v: resident %d != sum %d", e.key, pg.resident, res)
			}
			id := pl.nsID(k)
			wantNS := id
			if pg.resident == 0 {
				wantNS |= kvHoleBit
			}
			if kvLinkNSHole(pl.link[k]) != wantNS || pl.nsIDs[pl.nsOf(k)] != id {
				t.Fatalf("%v: hot slot %d out of date: prefix %x link %x", e.key, k, pl.prefix[k], pl.link[k])
			}
			nsCount[id]++
			if _, ok := prefixes[pl.prefix[k]]; ok {
				t.Fatalf("prefix %x twice", pl.prefix[k])
			}
			prefixes[pl.prefix[k]] = k
			// The prefix hash is one step from the parent's (A4 as
			// amended by A14): from the namespace's seed under the
			// root, from the parent's hash in the parent's namespace,
			// else from the seed chained over the parent's hash.
			seed := ref.PrefixHashSeed(spec.ExtraKey{Extra: pl.nsOf(k), HasExtra: pl.nsOf(k) != ""}, false)
			base := seed
			switch {
			case p != 0 && pl.nsOf(p) == pl.nsOf(k):
				base = spec.PrefixHash(pl.prefix[p])
			case p != 0:
				base = ref.NextPrefixHash(seed, []spec.Unit{spec.Unit(pl.prefix[p])})
			}
			want := ref.NextPrefixHash(base, kxUnits(pl.tokensOf(k)))
			if uint64(want) != pl.prefix[k] {
				t.Fatalf("%v: prefix of page is %x, want %x", e.key, pl.prefix[k], uint64(want))
			}
			sub := walk(k, depth+1)
			if pg.resident == 0 && !sub {
				t.Fatalf("%v: hole without resident descendant at depth %d", e.key, depth)
			}
			any = any || sub || pg.resident > 0
		}
		if kids != pl.page[p].nkids {
			t.Fatalf("%v: nkids %d != %d", e.key, pl.page[p].nkids, kids)
		}
		return any
	}
	walk(0, 0)
	kxCheckFree(t, e, pl, inPool, usedNodes)
	for id, c := range nsCount {
		if pl.nsRefs[id] != c {
			t.Fatalf("%v: namespace %d refs %d, pages %d", e.key, id, pl.nsRefs[id], c)
		}
	}
	if len(nsCount) != len(pl.nsIDs) {
		t.Fatalf("%v: %d namespaces interned, %d used", e.key, len(pl.nsIDs), len(nsCount))
	}
	if pages != pl.pages {
		t.Fatalf("%v %v: pages %d != %d", e.key, key, pl.pages, pages)
	}
	kxCheckTable(t, "byHash", &pl.byHash, hashes)
	kxCheckTable(t, "byPrefix", &pl.byPrefix, prefixes)
	kxCheckTableCells(t, &pl.byHash)
	kxCheckTableCells(t, &pl.byPrefix)
	return tokens
}

// kxCheckFree checks that every slot is in the pool or free (once, and
// reset), and every overflow binding node used by one page or free.
func kxCheckFree(t testing.TB, e *kvEngine, pl *kvPool, inPool []bool, usedNodes map[int32]bool) {
	t.Helper()
	free := make([]bool, len(pl.page))
	for _, s := range pl.free {
		if s <= 0 || int(s) >= len(pl.page) || inPool[s] || free[s] {
			t.Fatalf("%v: free slot %d in the pool or freed twice", e.key, s)
		}
		free[s] = true
		if pl.page[s] != (kvPage{parent: kvNoSlot}) || pl.prefix[s] != 0 || pl.link[s] != 0 {
			t.Fatalf("%v: free slot %d not reset: %+v", e.key, s, pl.page[s])
		}
	}
	for s := 1; s < len(pl.page); s++ {
		if !inPool[s] && !free[s] {
			t.Fatalf("%v: slot %d neither in the pool nor free", e.key, s)
		}
	}
	nodes := len(usedNodes)
	for i := pl.bindFree; i != 0; i = pl.binds[i].next {
		if usedNodes[i] {
			t.Fatalf("%v: binding node %d both used and free", e.key, i)
		}
		usedNodes[i] = true
		nodes++
	}
	if len(pl.binds) > 0 && nodes != len(pl.binds)-1 {
		t.Fatalf("%v: %d binding nodes used or free of %d", e.key, nodes, len(pl.binds)-1)
	}
}

// kxCheckTable checks that table tb holds exactly want, and that every
// key is reachable from its home cell without crossing an empty cell.
func kxCheckTable(t testing.TB, name string, tb *kvTable, want map[uint64]int32) {
	t.Helper()
	if tb.len() != len(want) {
		t.Fatalf("%s: %d keys, want %d", name, tb.len(), len(want))
	}
	for k, v := range want {
		if got := tb.get(k); got != v {
			t.Fatalf("%s[%x] = %d, want %d", name, k, got, v)
		}
	}
	if tb.n*kvTableLoadDen > len(tb.cells)*kvTableLoadNum {
		t.Fatalf("%s: %d keys in %d cells, past the load bound", name, tb.n, len(tb.cells))
	}
}

func kxUnits(toks []uint32) []spec.Unit {
	u := make([]spec.Unit, len(toks))
	for i, x := range toks {
		u[i] = spec.Unit(x)
	}
	return u
}

func kxFmtScores(s []spec.KVEvScore) string {
	var b strings.Builder
	for _, x := range s {
		fmt.Fprintf(&b, "%s/%d:%d(ps%d,stale=%v) ", x.Source, x.DPRank, x.Blocks, x.PageSize, x.Stale)
	}
	return b.String()
}

// TestKVEvEmptiedPoolsMemoryServesTheNextPoolAsNew empties a pool (its
// memory kept as the engine's spare), then creates pools of other page
// sizes, tiers and namespaces from it, under each fault that leaves
// stale entries in a pool, and requires the reference's state and digest
// after every message.
func TestKVEvEmptiedPoolsMemoryServesTheNextPoolAsNew(t *testing.T) {
	for _, f := range []fault.KVEv{{}, {PruneUnbindsFirstOnly: true}} {
		streams := []spec.KVEvStream{{Name: "s"}}
		rx, err := ref.NewKVEvIndex(spec.KVEvConfig{}, streams)
		if err != nil {
			t.Fatal(err)
		}
		fx := kxNewTestIx(t, spec.KVEvConfig{}, f, streams...)
		var seq uint64
		live := func(evs ...kxMp) {
			fr := kxLiveFrames("kv@pod@m", seq, kxBatch(nil, evs...))
			seq++
			rr, fr2 := rx.Live("s", fr), fx.Live("s", fr)
			rb, _ := json.Marshal(rr)
			fb, _ := json.Marshal(fr2)
			if !bytes.Equal(rb, fb) {
				t.Fatalf("%+v, message %d: ref %s, fast %s", f, seq-1, rb, fb)
			}
			rs, fs := rx.State(), fx.State()
			rb, _ = json.Marshal(rs)
			fb, _ = json.Marshal(fs)
			if !bytes.Equal(rb, fb) {
				t.Fatalf("%+v, message %d: states differ:\nref  %s\nfast %s", f, seq-1, rb, fb)
			}
			// No pool keeps a stale entry here, even under the fault: the
			// pool that had one was dropped.
			kxCheckKVInvariants(t, fx)
		}
		lora := "adapter"
		// A page with two hashes (the second bound by a re-store under
		// another hash), removed whole: the pool empties.
		live(kxEvStored([]uint64{1, 2}, nil, kxSeqTokens(10, 8), 4, kxEvOpt{}))
		live(kxEvStored([]uint64{3}, nil, kxSeqTokens(10, 4), 4, kxEvOpt{}))
		live(kxEvRemoved([]uint64{2, 1, 3}, kxEvOpt{}))
		// The next pools: another page size, tier and namespace, the
		// first reusing the emptied pool's memory with hash 3 (a stale
		// entry there under the fault, which must not survive).
		live(kxEvStored([]uint64{3, 8, 9}, nil, kxSeqTokens(50, 6), 2, kxEvOpt{medium: new("cpu"), loraName: &lora}))
		live(kxEvStored([]uint64{3, 4}, nil, kxSeqTokens(10, 8), 4, kxEvOpt{}))
		live(kxEvRemoved([]uint64{9, 8, 3}, kxEvOpt{medium: new("cpu")}))
		live(kxEvStored([]uint64{1}, nil, kxSeqTokens(10, 4), 4, kxEvOpt{medium: new("cpu")}))
		live(kxEvRemoved([]uint64{3, 4}, kxEvOpt{}))
		live(kxEvStored([]uint64{2, 5}, nil, kxSeqTokens(10, 8), 4, kxEvOpt{}))
	}
}
