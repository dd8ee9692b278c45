package fast

import (
	"math/bits"
	"math/rand/v2"
)

// kvTable is a pool's index from a 64-bit key (a block hash, or a page's
// prefix hash) to a page slot. It replaces a Go map there because a map
// entry holding a page pointer made every insert a write barrier and every
// GC cycle a scan of the index, and the runtime map's generic probing and
// hashing were a third of an ingest's time; this table holds no pointer
// (the GC skips its array) and its probe is a few instructions.
//
// Layout. Open addressing over a power-of-two array of 16-byte cells (key,
// slot, probe distance), linear probing in Robin Hood order: a key being
// inserted takes the cell of any key nearer its own home, so each run of
// cells is sorted by home. That buys the two operations an ingest does
// most besides a hit: a lookup of a missing key (every new block looks up
// its hash and its prefix hash) stops as soon as it passes a key nearer
// home than itself, and a deletion shifts the rest of the run back one
// cell (each key moves nearer home, by its stored distance, with no
// rehash) instead of leaving a tombstone, so a table that churns (a pool's
// pages stored and pruned for hours) never fills with tombstones and
// never needs a rebuild. The distance also marks an empty cell (0), so
// every key, 0 included, lives in the cells. The table doubles when it
// would pass kvTableLoadNum/kvTableLoadDen full, and never shrinks (a pool
// that emptied is dropped whole).
//
// Hostile keys. The keys come from the publisher: block hashes verbatim,
// prefix hashes of tokens it chose. Linear probing is only as good as its
// hash function is unpredictable: a publisher that could aim keys at one
// run of cells would make every probe walk it. So a key's home cell is not
// its top bits (which a publisher picks) but the top bits of a keyed mix:
// the 128-bit product of (key XOR k0) and k1, its halves folded with XOR,
// then the same again with k2 and k3, all four drawn at random for each
// table. A plain multiply-shift (a·key >> s) would be cheaper, but it is
// only 2-independent, and such families have input sets on which linear
// probing degrades (structured keys, arithmetic progressions among them).
// One folded product was not enough either: for keys that differ only in
// a few middle bits (a stride of 2^16, or only the top bits), its home
// bits come from the low half of the product, a multiply-shift of those
// bits, and about one seed in fifteen put a key 150-250 cells from its
// home (TestKVTableStructuredKeysKeepShortRuns failed 5 to 8 runs in
// 100); the second round spreads every bit of the first over the home
// bits, as the runtime's own map hash chains its rounds. Without the
// seeds, which are never observable (lookups answer the same whatever the
// layout), a publisher cannot aim its keys.
type kvTable struct {
	cells  []kvCell
	n      int    // keys in the table
	shift  uint   // 64 - log2(len(cells)): the home is the mix's top bits
	k0, k1 uint64 // the mix's first round's seeds, random per table (k1 odd)
	k2, k3 uint64 // its second round's (k3 odd)
}

// kvCell is one cell of a kvTable: a key, its slot, and its distance from
// its home cell plus one (0: the cell is empty).
type kvCell struct {
	key  uint64
	val  int32
	dist uint32
}

// kvTableLoadNum / kvTableLoadDen is the most a table fills before it
// doubles. At 1/2 a lookup, hit or miss, reads 1.2-1.4 cells on average
// and an insert or a deletion's shift about as many; at 3/4 they read
// about twice as many, each an unpredictable branch, and the ingest
// benchmark ran 20 % slower. The price is memory: 16-byte cells a quarter
// to a half full are 32 to 64 bytes a key.
const (
	kvTableLoadNum = 1
	kvTableLoadDen = 2
)

// kvTableMinCells is a new table's size: a pool starts small because a
// fleet has many pools with few pages each.
const kvTableMinCells = 16

// newKVTable returns an empty table with fresh random seeds.
func newKVTable() kvTable {
	var t kvTable
	t.seed()
	t.resize(kvTableMinCells)
	return t
}

// seed draws the mix's four seeds afresh.
func (t *kvTable) seed() {
	t.k0, t.k1, t.k2, t.k3 = rand.Uint64(), rand.Uint64()|1, rand.Uint64(), rand.Uint64()|1
}

// home is k's first cell: the keyed mix's top bits (see kvTable).
func (t *kvTable) home(k uint64) uint64 {
	hi, lo := bits.Mul64(k^t.k0, t.k1)
	hi, lo = bits.Mul64(hi^lo^t.k2, t.k3)
	return (hi ^ lo) >> t.shift
}

// find is k's cell, or -1.
func (t *kvTable) find(k uint64) int {
	cells := t.cells
	mask := uint64(len(cells) - 1)
	i := t.home(k)
	for d := uint32(1); ; d++ {
		c := &cells[i&mask]
		if c.dist < d {
			return -1
		}
		if c.key == k {
			return int(i & mask)
		}
		i++
	}
}

// get returns k's slot, or kvNoSlot.
func (t *kvTable) get(k uint64) int32 {
	cells := t.cells
	mask := uint64(len(cells) - 1)
	i := t.home(k)
	for d := uint32(1); ; d++ {
		c := &cells[i&mask]
		if c.dist < d {
			return kvNoSlot
		}
		if c.key == k {
			return c.val
		}
		i++
	}
}

// set maps k to slot v, replacing k's slot if it has one.
func (t *kvTable) set(k uint64, v int32) {
	if at, found := t.insert(k, v); found {
		t.cells[at].val = v
	}
}

// insert maps k to slot v unless k is in the table, and returns k's cell
// (valid until the table's next insertion or deletion) and whether k was
// there, its slot then unchanged. A store that looks a key up and, when
// it is missing, adds it pays one probe instead of two: the cell where a
// lookup of a missing key stops is the cell it is inserted at.
func (t *kvTable) insert(k uint64, v int32) (cell int, found bool) {
	if (t.n+1)*kvTableLoadDen > len(t.cells)*kvTableLoadNum {
		t.resize(2 * len(t.cells))
	}
	cells := t.cells
	mask := uint64(len(cells) - 1)
	i := t.home(k)
	for d := uint32(1); ; d++ {
		c := &cells[i&mask]
		if c.dist < d {
			out := *c
			*c = kvCell{key: k, val: v, dist: d}
			t.n++
			if out.dist != 0 {
				t.place(out, i+1)
			}
			return int(i & mask), false
		}
		if c.key == k {
			return int(i & mask), true
		}
		i++
	}
}

// place puts the key of cell in, displaced from the cell before i, back
// into the run from i on: Robin Hood order, each key it passes nearer its
// home than in is displaced in turn, until an empty cell.
func (t *kvTable) place(in kvCell, i uint64) {
	cells := t.cells
	mask := uint64(len(cells) - 1)
	for ; ; i++ {
		in.dist++
		c := &cells[i&mask]
		if c.dist == 0 {
			*c = in
			return
		}
		if c.dist < in.dist {
			*c, in = in, *c
		}
	}
}

// slotAt is the slot in cell i (from insert).
func (t *kvTable) slotAt(i int) int32 { return t.cells[i].val }

// setSlotAt maps cell i's key (from insert) to slot v.
func (t *kvTable) setSlotAt(i int, v int32) { t.cells[i].val = v }

// deleteIf removes k if it maps to slot v: a pruned page drops the
// entries that still name it and leaves one that names another page.
func (t *kvTable) deleteIf(k uint64, v int32) {
	if i := t.find(k); i >= 0 && t.cells[i].val == v {
		t.deleteAt(i)
	}
}

// delete removes k, whatever it maps to.
func (t *kvTable) delete(k uint64) {
	if i := t.find(k); i >= 0 {
		t.deleteAt(i)
	}
}

// deleteAt empties cell i by backward shift: the rest of its run, up to
// an empty cell or a key at its home, moves back one cell, each key one
// nearer its home. No tombstone is left, so every run stays as short as
// its live keys make it.
func (t *kvTable) deleteAt(i int) {
	cells := t.cells
	mask := len(cells) - 1
	for {
		j := (i + 1) & mask
		if cells[j].dist <= 1 {
			break
		}
		cells[i] = cells[j]
		cells[i].dist--
		i = j
	}
	cells[i] = kvCell{}
	t.n--
}

// reset empties the table, keeping its cells, with fresh seeds (the old
// layout says nothing about the new keys).
func (t *kvTable) reset() {
	if t.n != 0 {
		clear(t.cells)
	}
	t.n = 0
	t.seed()
}

// len is the number of keys in the table.
func (t *kvTable) len() int { return t.n }

// resize rehashes the table into cells cells (a power of two, more than
// the keys), keeping the seeds.
func (t *kvTable) resize(cells int) {
	old := t.cells
	t.cells = make([]kvCell, cells)
	t.shift = uint(64 - bits.TrailingZeros(uint(cells)))
	t.n = 0
	for _, c := range old {
		if c.dist != 0 {
			t.set(c.key, c.val)
		}
	}
}
