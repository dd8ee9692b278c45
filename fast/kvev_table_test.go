package fast

import (
	"math/rand/v2"
	"testing"
)

// kxCheckTableCells checks tb's Robin Hood layout cell by cell: each key's
// stored distance is its distance from its home plus one, a run never
// jumps by more than one (so a lookup that passes a nearer key may stop),
// the count is right and the load is under its bound.
func kxCheckTableCells(t testing.TB, tb *kvTable) {
	t.Helper()
	mask := uint64(len(tb.cells) - 1)
	n := 0
	for i, c := range tb.cells {
		if c.dist == 0 {
			continue
		}
		n++
		if want := uint32((uint64(i)-tb.home(c.key))&mask) + 1; c.dist != want {
			t.Fatalf("cell %d: key %x at distance %d, stored %d", i, c.key, want, c.dist)
		}
		if next := tb.cells[(uint64(i)+1)&mask]; next.dist > c.dist+1 {
			t.Fatalf("cell %d: the run jumps from distance %d to %d", i, c.dist, next.dist)
		}
	}
	if n != tb.n || n != tb.len() {
		t.Fatalf("%d keys in the cells, n %d", n, tb.n)
	}
	if tb.n*kvTableLoadDen > len(tb.cells)*kvTableLoadNum {
		t.Fatalf("%d keys in %d cells, past the load bound", tb.n, len(tb.cells))
	}
}

// TestKVTableAgainstAMap drives a table and a Go map with the same random
// insertions, replacements and deletions (keys from a small space, 0
// among them, so that hits, misses and reinsertions all happen) and
// compares every answer and the layout.
func TestKVTableAgainstAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	tb := new(newKVTable())
	want := map[uint64]int32{}
	key := func() uint64 {
		if rng.IntN(50) == 0 {
			return 0
		}
		return rng.Uint64N(3000) * 0x9e3779b97f4a7c15
	}
	for step := range 60000 {
		k, v := key(), int32(rng.IntN(1<<20))
		switch rng.IntN(6) {
		case 0, 1:
			at, found := tb.insert(k, v)
			old, ok := want[k]
			if found != ok || tb.cells[at].key != k || found && tb.slotAt(at) != old {
				t.Fatalf("step %d: insert(%x) = %d, %v; map had %d, %v", step, k, at, found, old, ok)
			}
			if !found {
				want[k] = v
			}
		case 2:
			tb.set(k, v)
			want[k] = v
		case 3:
			tb.delete(k)
			delete(want, k)
		case 4:
			if old, ok := want[k]; ok && rng.IntN(2) == 0 {
				v = old
			}
			tb.deleteIf(k, v)
			if want[k] == v {
				delete(want, k)
			}
		default:
			got := tb.get(k)
			if old, ok := want[k]; ok && got != old || !ok && got != kvNoSlot {
				t.Fatalf("step %d: get(%x) = %d, map has %d, %v", step, k, got, old, ok)
			}
		}
		if step%997 == 0 {
			kxCheckTableCells(t, tb)
			kxCheckTable(t, "table", tb, want)
		}
	}
	kxCheckTableCells(t, tb)
	kxCheckTable(t, "table", tb, want)
	for k := range want {
		tb.delete(k)
	}
	for i, c := range tb.cells {
		if c != (kvCell{}) {
			t.Fatalf("cell %d not emptied: %+v", i, c)
		}
	}
}

// TestKVTableStructuredKeysKeepShortRuns feeds the key shapes a publisher
// controls (block hashes are sent verbatim): counters, strides of powers
// of two, keys differing only in high bits. The keyed mix spreads them
// like random keys, so no key sits far from its home.
func TestKVTableStructuredKeysKeepShortRuns(t *testing.T) {
	shapes := map[string]func(i uint64) uint64{
		"counter":          func(i uint64) uint64 { return i },
		"stride 2^16":      func(i uint64) uint64 { return i << 16 },
		"stride 2^40":      func(i uint64) uint64 { return i << 40 },
		"request<<32|page": func(i uint64) uint64 { return (i/64)<<32 | i%64 | 1<<63 },
		"top bits only":    func(i uint64) uint64 { return i << 47 },
	}
	for name, key := range shapes {
		tb := new(newKVTable())
		for i := range uint64(1 << 17) {
			tb.set(key(i), int32(i))
		}
		var worst uint32
		for _, c := range tb.cells {
			worst = max(worst, c.dist)
		}
		// Random keys at this load reach about 10; 64 would take a
		// clustered mix.
		if worst > 64 {
			t.Errorf("%s: a key %d cells from its home", name, worst-1)
		}
		kxCheckTableCells(t, tb)
	}
}

// TestKVTableResetEmptiesAndReseeds checks that a reset table keeps its
// cells, holds nothing (stale entries included) and answers afresh.
func TestKVTableResetEmptiesAndReseeds(t *testing.T) {
	tb := new(newKVTable())
	for i := range uint64(100) {
		tb.set(i*7+1, int32(i))
	}
	cells, k0 := len(tb.cells), tb.k0
	tb.reset()
	if len(tb.cells) != cells || tb.len() != 0 || tb.get(8) != kvNoSlot {
		t.Fatalf("after reset: %d cells (had %d), %d keys, get(8) = %d", len(tb.cells), cells, tb.len(), tb.get(8))
	}
	if tb.k0 == k0 {
		t.Fatal("reset kept the seed")
	}
	tb.set(8, 5)
	if tb.get(8) != 5 {
		t.Fatal("a reset table does not take keys")
	}
	kxCheckTableCells(t, tb)
}
