package fast

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

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
// a full recount: maps, children, counts, tokens, pruning.
func kxCheckKVInvariants(t testing.TB, ix *kvIndex) {
	t.Helper()
	for _, e := range *ix.sorted.Load() {
		e.mu.RLock()
		var tokens int64
		for key, pl := range e.pools {
			if key.group != pl.group || key.tier != pl.tier {
				t.Fatalf("%v: pool key %v names pool %d/%s", e.key, key, pl.group, pl.tier)
			}
			if pl.pages == 0 {
				t.Fatalf("%v %v: empty pool kept", e.key, key)
			}
			var pages int
			hashes := map[uint64]*kvPage{}
			nsCount := map[uint32]int32{}
			prefixes := map[uint64]*kvPage{}
			var walk func(p *kvPage, depth int) bool // returns: subtree has a resident page
			walk = func(p *kvPage, depth int) bool {
				var n int32
				any := false
				var prev *kvPage
				for k := p.first; k != nil; k = k.next {
					if k.parent != p || k.prev != prev || !k.attached {
						t.Fatalf("%v: bad sibling links at depth %d", e.key, depth)
					}
					prev = k
					n++
					pages++
					tokens += int64(len(k.tokens))
					var res int64
					for _, b := range k.bind {
						if b.count < 0 {
							t.Fatalf("negative count")
						}
						res += b.count
						if hashes[b.hash] != nil {
							t.Fatalf("hash %x bound twice", b.hash)
						}
						hashes[b.hash] = k
					}
					if res != k.resident {
						t.Fatalf("%v: resident %d != sum %d", e.key, k.resident, res)
					}
					wantNS := k.nsID
					if k.resident == 0 {
						wantNS |= kvHoleBit
					}
					if pl.pageOf[k.slot] != k || pl.prefix[k.slot] != k.prefix || pl.link[k.slot] != kvLink(slotOf(k.first), wantNS) ||
						pl.nsNames[k.nsID] != k.ns || pl.nsIDs[k.ns] != k.nsID {
						t.Fatalf("%v: hot slot %d out of date: prefix %x link %x", e.key, k.slot, pl.prefix[k.slot], pl.link[k.slot])
					}
					nsCount[k.nsID]++
					if prefixes[k.prefix] != nil {
						t.Fatalf("prefix %x twice", k.prefix)
					}
					prefixes[k.prefix] = k
					// The prefix hash is the chain over the path, seeded
					// with the page's own namespace (A4).
					var want spec.PrefixHash
					if p != &pl.root && p.ns == k.ns {
						want = ref.NextPrefixHash(spec.PrefixHash(p.prefix), kxUnits(k.tokens))
					} else {
						var path []*kvPage
						for q := k; q != &pl.root; q = q.parent {
							path = append(path, q)
						}
						slices.Reverse(path)
						want = ref.PrefixHashSeed(spec.ExtraKey{Extra: k.ns, HasExtra: k.ns != ""}, false)
						for _, q := range path {
							want = ref.NextPrefixHash(want, kxUnits(q.tokens))
						}
					}
					if uint64(want) != k.prefix {
						t.Fatalf("%v: prefix of page is %x, want %x", e.key, k.prefix, uint64(want))
					}
					sub := walk(k, depth+1)
					if k.resident == 0 && !sub {
						t.Fatalf("%v: hole without resident descendant at depth %d", e.key, depth)
					}
					any = any || sub || k.resident > 0
				}
				if n != p.nkids {
					t.Fatalf("%v: nkids %d != %d", e.key, p.nkids, n)
				}
				return any
			}
			if kvLinkFirst(pl.link[0]) != slotOf(pl.root.first) {
				t.Fatalf("%v: root's hot first out of date", e.key)
			}
			walk(&pl.root, 0)
			for id, n := range nsCount {
				if pl.nsRefs[id] != n {
					t.Fatalf("%v: namespace %d refs %d, pages %d", e.key, id, pl.nsRefs[id], n)
				}
			}
			if len(nsCount) != len(pl.nsIDs) {
				t.Fatalf("%v: %d namespaces interned, %d used", e.key, len(pl.nsIDs), len(nsCount))
			}
			if pages != pl.pages {
				t.Fatalf("%v %v: pages %d != %d", e.key, key, pl.pages, pages)
			}
			if len(hashes) != len(pl.byHash) || len(prefixes) != len(pl.byPrefix) {
				t.Fatalf("%v %v: map sizes %d/%d vs %d/%d", e.key, key, len(pl.byHash), len(pl.byPrefix), len(hashes), len(prefixes))
			}
			for h, p := range hashes {
				if pl.byHash[h] != p {
					t.Fatalf("byHash[%x] wrong", h)
				}
			}
			for h, p := range prefixes {
				if pl.byPrefix[h] != p {
					t.Fatalf("byPrefix[%x] wrong", h)
				}
			}
		}
		if tokens != e.tokens {
			t.Fatalf("%v: tokens %d != %d", e.key, e.tokens, tokens)
		}
		e.mu.RUnlock()
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
