package scaleout

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
)

// A generator of realistic KV-event batches for one publisher (vLLM's
// shape, docs/spec/kv-events.md §1.3-1.4 form A): chained BlockStored runs
// under resident parents (hash = a chain over parent hash and tokens, so a
// re-store of the same blocks raises their residency), BlockRemoved of
// random resident blocks (interior ones leave holes), a rare
// AllBlocksCleared, and a bounded resident set.

type genBlock struct {
	hash  uint64
	count int
}

type gen struct {
	rng       *rand.Rand
	bs        int
	rank      *int64 // nil: the batch's rank is nil (SGLang)
	maxBlocks int
	clearOdds int // one clear per clearOdds events (0: never)
	// forceClear makes the next event an AllBlocksCleared.
	forceClear bool
	resident   map[uint64]*genBlock
	list       []uint64 // resident hashes (may hold stale entries; cleaned lazily)
	events     int
}

func newGen(seed uint64, bs int, rank *int64, maxBlocks int) *gen {
	return &gen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), bs: bs, rank: rank, maxBlocks: maxBlocks,
		clearOdds: 20000, resident: map[uint64]*genBlock{}}
}

// reset forgets every block (a publisher restart or a clear).
func (g *gen) reset() {
	g.resident = map[uint64]*genBlock{}
	g.list = g.list[:0]
}

func chainHash(parent uint64, tokens []uint32) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], parent)
	h.Write(b[:])
	for _, t := range tokens {
		binary.LittleEndian.PutUint32(b[:4], t)
		h.Write(b[:4])
	}
	return h.Sum64()
}

// pickResident returns a random resident hash, false when none.
func (g *gen) pickResident() (uint64, bool) {
	for len(g.list) > 0 {
		i := g.rng.IntN(len(g.list))
		h := g.list[i]
		if b := g.resident[h]; b != nil && b.count > 0 {
			return h, true
		}
		g.list[i] = g.list[len(g.list)-1]
		g.list = g.list[:len(g.list)-1]
	}
	return 0, false
}

// batch returns the payload of a batch of n events.
func (g *gen) batch(n int) []byte {
	var evs [][]byte
	for range n {
		evs = append(evs, g.event())
	}
	b := []byte{0x93, 0xcb}
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(1757500000.25+float64(g.events)))
	b = mpArrayHeader(b, len(evs))
	for _, e := range evs {
		b = append(b, e...)
	}
	if g.rank == nil {
		b = append(b, 0xc0)
	} else {
		b = mpUint(b, uint64(*g.rank))
	}
	return b
}

func (g *gen) event() []byte {
	g.events++
	if g.forceClear || g.clearOdds > 0 && g.rng.IntN(g.clearOdds) == 0 {
		g.forceClear = false
		g.reset()
		return mpArrayHeader(nil, 1, mpStr, "AllBlocksCleared")
	}
	if len(g.resident) > g.maxBlocks || (len(g.resident) > 0 && g.rng.IntN(100) < 38) {
		return g.remove()
	}
	return g.store()
}

func (g *gen) store() []byte {
	var parent uint64
	hasParent := false
	if g.rng.IntN(100) >= 25 {
		parent, hasParent = g.pickResident()
	}
	k := 1 + g.rng.IntN(4)
	hashes := make([]uint64, k)
	tokens := make([]uint32, 0, k*g.bs)
	prev := parent
	for i := range k {
		page := make([]uint32, g.bs)
		if g.rng.IntN(100) < 40 {
			// a popular page: shared prefixes, re-stores
			base := uint32(g.rng.IntN(6)) * 1000
			for j := range page {
				page[j] = base + uint32(j)
			}
		} else {
			for j := range page {
				page[j] = uint32(g.rng.IntN(50000))
			}
		}
		h := chainHash(prev, page)
		hashes[i] = h
		tokens = append(tokens, page...)
		prev = h
	}
	for _, h := range hashes {
		b := g.resident[h]
		if b == nil {
			b = &genBlock{hash: h}
			g.resident[h] = b
		}
		if b.count == 0 {
			g.list = append(g.list, h)
		}
		b.count++
	}
	// ["BlockStored", hashes, parent, tokens, bs, lora_id nil, "GPU"]
	e := mpArrayHeader(nil, 7, mpStr, "BlockStored")
	e = mpArrayHeader(e, len(hashes))
	for _, h := range hashes {
		e = mpUint(e, h)
	}
	if hasParent {
		e = mpUint(e, parent)
	} else {
		e = append(e, 0xc0)
	}
	e = mpArrayHeader(e, len(tokens))
	for _, t := range tokens {
		e = mpUint(e, uint64(t))
	}
	e = mpUint(e, uint64(g.bs))
	e = append(e, 0xc0)
	return mpString(e, "GPU")
}

func (g *gen) remove() []byte {
	n := 1 + g.rng.IntN(3)
	var hashes []uint64
	for range n {
		h, ok := g.pickResident()
		if !ok || slices.Contains(hashes, h) {
			break
		}
		hashes = append(hashes, h)
		g.resident[h].count--
		if g.resident[h].count == 0 {
			delete(g.resident, h)
		}
	}
	if len(hashes) == 0 {
		hashes = append(hashes, g.rng.Uint64()) // an unknown removal
	}
	e := mpArrayHeader(nil, 3, mpStr, "BlockRemoved")
	e = mpArrayHeader(e, len(hashes))
	for _, h := range hashes {
		e = mpUint(e, h)
	}
	return mpString(e, "GPU")
}

// Minimal msgpack writers.

const mpStr = 1

// mpArrayHeader appends an array header of n; with (mpStr, s) it also
// appends s as its first element.
func mpArrayHeader(b []byte, n int, first ...any) []byte {
	switch {
	case n < 16:
		b = append(b, 0x90|byte(n))
	case n < 1<<16:
		b = append(b, 0xdc, byte(n>>8), byte(n))
	default:
		b = append(b, 0xdd)
		b = binary.BigEndian.AppendUint32(b, uint32(n))
	}
	if len(first) == 2 {
		b = mpString(b, first[1].(string))
	}
	return b
}

func mpString(b []byte, s string) []byte {
	if len(s) < 32 {
		b = append(b, 0xa0|byte(len(s)))
	} else {
		b = append(b, 0xd9, byte(len(s)))
	}
	return append(b, s...)
}

func mpUint(b []byte, v uint64) []byte {
	switch {
	case v < 128:
		return append(b, byte(v))
	case v < 1<<8:
		return append(b, 0xcc, byte(v))
	case v < 1<<16:
		return append(b, 0xcd, byte(v>>8), byte(v))
	case v < 1<<32:
		b = append(b, 0xce)
		return binary.BigEndian.AppendUint32(b, uint32(v))
	default:
		b = append(b, 0xcf)
		return binary.BigEndian.AppendUint64(b, v)
	}
}
