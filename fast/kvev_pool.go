package fast

import (
	"encoding/binary"
	"math"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
	"github.com/zeebo/xxh3"
)

// The pools of the fast event-fed index (docs/spec/kv-events.md §2.1-§2.6,
// §2.10 A4-A5): one per (engine, group, tier), a tree of one-block pages.
//
// Storage. A page is a slot, an int32 index into the pool's arrays; no
// part of a page is a Go pointer, so the GC neither scans a pool's pages
// nor takes a write barrier when they change (a pointer-linked page made
// the GC a fifth of an ingest's time), and a pool is a handful of large
// pointer-free allocations however many pages it holds. Slot 0 is the
// root. The arrays, all indexed by slot:
//
//   - prefix and link, 16 bytes a slot, what the score walk reads: the
//     page's prefix hash, and its link word (the first child's slot, and
//     the namespace id with a hole bit). A long prompt's walk is a scan of
//     dense arrays (8 engines' 15K-page chains fit in L2) instead of one
//     cache line per page, and where a chain's pages have consecutive
//     slots (a store allocates them in order) it compares a block of
//     prefix hashes at once, as the HTTP pools compare a compressed node's
//     hashes.
//   - page, a kvPage of 48 bytes: the parent, the next and previous
//     siblings (int32 slots; kvNoSlot is the root's parent and marks a
//     slot out of the pool), the child count, the residency, and the first
//     binding inline. A page almost always has one hash; the later ones
//     of a page that has more are nodes of binds, a per-pool pointer-free
//     list chained from the page newest first (so an undo pops the head),
//     recycled through their own free list.
//   - toks, the tokens: every page of a pool has exactly pageSize tokens
//     (a store's blocks are cut at the pool's page size, a tokenless copy
//     comes from a pool of the same size), so page s's tokens are
//     toks[(s-1)·pageSize, s·pageSize) with no offset or length stored.
//     The root has none.
//   - The namespace is an id into nsNames (interned per pool, reference
//     counted, ids reused), kept in the link word only.
//
// A pruned page's slot goes to a free list with its tokens' room and is
// reused by the next store, so the arrays grow only to the pool's peak. A
// pool that empties leaves its engine's map (the state shows no empty
// pool) but its memory stays with the engine as its spare, which the
// engine's next new pool takes over instead of regrowing from nothing
// (kvEngine.dropPool, kvPool.reuse).
//
// Lookups. byHash finds a block hash's page; byPrefix finds a page by its
// prefix hash (unique in a pool, A4), which also answers "does this parent
// already have a child with these tokens in this namespace" without a
// children index: that child, if it exists, has exactly the prefix hash
// the new page would get. Both are kvTables (kvev_table.go): Robin Hood
// open addressing from the 64-bit key to the slot in 16-byte cells, at
// most half full, keyed against publishers that pick their hashes. A
// store looks a new block's hash and prefix hash up by inserting them for
// the slot the page would get (kvPool.nextSlot), so the common case, a
// new block, costs one probe per table.
//
// Pruning (§2.4) is incremental: between events every hole has a resident
// descendant, so a page is prunable exactly when it is a hole without
// children. A removal records the pages it turned into holes; at the end
// of the event each is pruned upwards while it is a childless hole.
//
// Atomicity (§2.7): a store applies block by block, logging what it did;
// a refusal (conflict, collision, budget) undoes the log in reverse, so
// the checks see the store's own earlier blocks exactly as a sequential
// application would, and the pool ends exactly as before the event. A
// store touches one pool, so the log names slots only.
//
// Slots are int32, as the link word's half was before the pages lost
// their pointers: a pool of 2^31 pages would hold at least 2^31 tokens
// (the budget's cap allows 2^32) in about 300 GiB of index, far past any
// machine this runs on.

// kvNoSlot is the parent of the root and of a slot out of the pool, and
// the lookups' "none": slot 0 is the root, a real slot, so none is below.
const kvNoSlot int32 = -1

// kvBinding is one block hash bound to a page and its residency count (A4).
type kvBinding struct {
	hash  uint64
	count int64
}

// kvBindNode is a binding of a page after its first, in the pool's
// overflow list: pages with more than one hash are rare, so they pay a
// list walk and the common page keeps one inline binding.
type kvBindNode struct {
	b    kvBinding
	next int32 // the page's next (older) overflow binding, 0: none
}

// kvLink is a slot's link word: its first child's slot (0: none; slot 0
// is the root, never a child) in the low 32 bits, and its namespace id,
// with kvHoleBit set while the page is a hole, in the high 32.
func kvLink(first int32, nsHole uint32) uint64 {
	return uint64(uint32(first)) | uint64(nsHole)<<32
}

// kvLinkFirst and kvLinkNSHole are a link word's two halves.
func kvLinkFirst(l uint64) int32   { return int32(uint32(l)) }
func kvLinkNSHole(l uint64) uint32 { return uint32(l >> 32) }

// kvHoleBit marks a hole in a link word's namespace half, so the walk
// checks "resident in this namespace" with one compare.
const kvHoleBit = 1 << 31

// kvPage is one page's links, residency and first binding: pointer-free,
// so the pool's page array is never scanned by the GC.
type kvPage struct {
	bind0    kvBinding // the first binding, while nbind >= 1
	resident int64     // sum of the bindings' counts; 0 is a hole
	parent   int32     // kvNoSlot: the root, or a slot out of the pool
	next     int32     // next sibling, 0: none
	prev     int32     // previous sibling, 0: none
	nkids    int32
	more     int32 // the newest overflow binding (kvPool.binds), 0: none
	nbind    int32
}

// kvPool is one (group, tier) of an engine.
type kvPool struct {
	group    int64
	tier     string
	pageSize int64
	pages    int
	byHash   kvTable
	byPrefix kvTable
	prefix   []uint64     // slot → prefix hash
	link     []uint64     // slot → kvLink(first child's slot, namespace id | hole bit)
	page     []kvPage     // slot → the rest of the page; [0] is the root
	toks     []uint32     // slot s ≥ 1 → its tokens at [(s-1)·pageSize, s·pageSize)
	binds    []kvBindNode // overflow bindings; [0] unused, so 0 is "none"
	bindFree int32        // the first free node of binds, 0: none
	free     []int32      // free slots, the last freed on top

	nsIDs   map[string]uint32
	nsNames []string
	nsRefs  []int32
	nsFree  []uint32
	nsLast  uint32 // the last id taken, tried first

	// faults are the index's reach plants that live in a pool's walk and
	// pruning (internal/fault.KVEv); always zero in production.
	faults fault.KVEv
}

// newKVPool is an empty pool: the root alone.
func newKVPool(group int64, tier string, pageSize int64) *kvPool {
	pl := &kvPool{
		group: group, tier: tier, pageSize: pageSize,
		byHash:   newKVTable(),
		byPrefix: newKVTable(),
		nsIDs:    make(map[string]uint32),
		prefix:   make([]uint64, 1, 16),
		link:     make([]uint64, 1, 16),
		page:     make([]kvPage, 1, 16),
	}
	pl.page[0].parent = kvNoSlot
	return pl
}

// reuse empties pl for a new (group, tier, pageSize), keeping the memory
// of its arrays and tables (see kvEngine.spare) and drawing its tables'
// seeds afresh: the result is a new pool but for capacity.
func (pl *kvPool) reuse(group int64, tier string, pageSize int64) {
	pl.group, pl.tier, pl.pageSize, pl.pages = group, tier, pageSize, 0
	pl.byHash.reset()
	pl.byPrefix.reset()
	pl.prefix, pl.link, pl.page = pl.prefix[:1], pl.link[:1], pl.page[:1]
	pl.prefix[0], pl.link[0], pl.page[0] = 0, 0, kvPage{parent: kvNoSlot}
	pl.toks, pl.binds, pl.bindFree, pl.free = pl.toks[:0], pl.binds[:0], 0, pl.free[:0]
	clear(pl.nsIDs)
	clear(pl.nsNames)
	pl.nsNames, pl.nsRefs, pl.nsFree, pl.nsLast = pl.nsNames[:0], pl.nsRefs[:0], pl.nsFree[:0], 0
}

// tokensOf is slot s's tokens (s ≥ 1), a view of the pool's token array.
func (pl *kvPool) tokensOf(s int32) []uint32 {
	ps := int(pl.pageSize)
	o := (int(s) - 1) * ps
	return pl.toks[o : o+ps : o+ps]
}

// nsID is slot s's namespace id, read from its link word.
func (pl *kvPool) nsID(s int32) uint32 { return kvLinkNSHole(pl.link[s]) &^ kvHoleBit }

// nsOf is slot s's namespace (§2.2).
func (pl *kvPool) nsOf(s int32) string { return pl.nsNames[pl.nsID(s)] }

// nsRef returns ns's id, taking a reference.
func (pl *kvPool) nsRef(ns string) uint32 {
	if id := pl.nsLast; int(id) < len(pl.nsNames) && pl.nsRefs[id] > 0 && pl.nsNames[id] == ns {
		pl.nsRefs[id]++
		return id
	}
	id, ok := pl.nsIDs[ns]
	if !ok {
		if n := len(pl.nsFree); n > 0 {
			id = pl.nsFree[n-1]
			pl.nsFree = pl.nsFree[:n-1]
			pl.nsNames[id] = ns
		} else {
			id = uint32(len(pl.nsNames))
			pl.nsNames = append(pl.nsNames, ns)
			pl.nsRefs = append(pl.nsRefs, 0)
		}
		pl.nsIDs[ns] = id
	}
	pl.nsRefs[id]++
	pl.nsLast = id
	return id
}

// nsUnref drops a reference to namespace id, freeing the id with the last.
func (pl *kvPool) nsUnref(id uint32) {
	if pl.nsRefs[id]--; pl.nsRefs[id] == 0 {
		delete(pl.nsIDs, pl.nsNames[id])
		pl.nsNames[id] = ""
		pl.nsFree = append(pl.nsFree, id)
	}
}

// nextSlot is the slot alloc returns next, so a store can enter it in
// the tables before it allocates.
func (pl *kvPool) nextSlot() int32 {
	if n := len(pl.free); n > 0 {
		return pl.free[n-1]
	}
	return int32(len(pl.page))
}

// alloc returns a detached, zeroed slot whose tokens hold a copy of toks
// (pageSize tokens): the last freed slot first, so a chain pruned and
// stored again gets its consecutive slots back, else a new one.
func (pl *kvPool) alloc(toks []uint32) int32 {
	if n := len(pl.free); n > 0 {
		s := pl.free[n-1]
		pl.free = pl.free[:n-1]
		copy(pl.tokensOf(s), toks)
		return s
	}
	s := int32(len(pl.page))
	pl.page = append(pl.page, kvPage{parent: kvNoSlot})
	pl.prefix = append(pl.prefix, 0)
	pl.link = append(pl.link, 0)
	pl.toks = append(pl.toks, toks...)
	return s
}

// release returns a detached slot to the free list, its overflow
// bindings to theirs and its namespace reference.
func (pl *kvPool) release(s int32) {
	pl.nsUnref(pl.nsID(s))
	for i := pl.page[s].more; i != 0; {
		next := pl.binds[i].next
		pl.freeBindNode(i)
		i = next
	}
	pl.page[s] = kvPage{parent: kvNoSlot}
	pl.prefix[s], pl.link[s] = 0, 0
	pl.free = append(pl.free, s)
}

// newBindNode returns a free overflow node, growing binds if none is.
func (pl *kvPool) newBindNode() int32 {
	if i := pl.bindFree; i != 0 {
		pl.bindFree = pl.binds[i].next
		return i
	}
	if len(pl.binds) == 0 {
		pl.binds = append(pl.binds, kvBindNode{}) // node 0 is "none"
	}
	pl.binds = append(pl.binds, kvBindNode{})
	return int32(len(pl.binds) - 1)
}

// freeBindNode puts overflow node i on the free list.
func (pl *kvPool) freeBindNode(i int32) {
	pl.binds[i] = kvBindNode{next: pl.bindFree}
	pl.bindFree = i
}

// binding returns s's binding of h, or nil: a pointer into the pool's
// arrays, valid until the next binding or slot is added.
func (pl *kvPool) binding(s int32, h uint64) *kvBinding {
	pg := &pl.page[s]
	if pg.nbind == 0 {
		return nil
	}
	if pg.bind0.hash == h {
		return &pg.bind0
	}
	for i := pg.more; i != 0; i = pl.binds[i].next {
		if pl.binds[i].b.hash == h {
			return &pl.binds[i].b
		}
	}
	return nil
}

// addBinding binds h to s with count 1 (it does not touch byHash or the
// residency).
func (pl *kvPool) addBinding(s int32, h uint64) {
	b := kvBinding{hash: h, count: 1}
	if pl.page[s].nbind == 0 {
		pl.page[s].bind0 = b
	} else {
		i := pl.newBindNode()
		pl.binds[i] = kvBindNode{b: b, next: pl.page[s].more}
		pl.page[s].more = i
	}
	pl.page[s].nbind++
}

// popBinding unbinds s's newest binding (undoing addBinding) and returns
// its count.
func (pl *kvPool) popBinding(s int32) int64 {
	pg := &pl.page[s]
	pg.nbind--
	if pg.nbind == 0 {
		c := pg.bind0.count
		pg.bind0 = kvBinding{}
		return c
	}
	i := pg.more
	c := pl.binds[i].b.count
	pg.more = pl.binds[i].next
	pl.freeBindNode(i)
	return c
}

// appendBindings appends s's bindings to dst, the first one first.
func (pl *kvPool) appendBindings(dst []kvBinding, s int32) []kvBinding {
	pg := &pl.page[s]
	if pg.nbind == 0 {
		return dst
	}
	dst = append(dst, pg.bind0)
	for i := pg.more; i != 0; i = pl.binds[i].next {
		dst = append(dst, pl.binds[i].b)
	}
	return dst
}

// setResident sets s's residency and its hot hole bit.
func (pl *kvPool) setResident(s int32, v int64) {
	pl.page[s].resident = v
	l := pl.link[s]
	ns := kvLinkNSHole(l) &^ kvHoleBit
	if v == 0 {
		ns |= kvHoleBit
	}
	pl.link[s] = kvLink(kvLinkFirst(l), ns)
}

// setFirst records slot's first child's slot in its link word.
func (pl *kvPool) setFirst(slot, first int32) {
	pl.link[slot] = kvLink(first, kvLinkNSHole(pl.link[slot]))
}

// attach makes s (a hole) the first child of parent, in namespace ns,
// with prefix hash prefix (the caller enters it in byPrefix).
func (pl *kvPool) attach(parent, s int32, ns string, prefix uint64) {
	id := pl.nsRef(ns)
	first := kvLinkFirst(pl.link[parent])
	pg := &pl.page[s]
	pg.parent, pg.next, pg.prev = parent, first, 0
	if first != 0 {
		pl.page[first].prev = s
	}
	pl.page[parent].nkids++
	pl.prefix[s] = prefix
	pl.link[s] = kvLink(0, id|kvHoleBit)
	pl.setFirst(parent, s)
	pl.pages++
}

// detach removes a childless slot from the pool, unbinding its hashes
// (those that still name it).
func (pl *kvPool) detach(s int32) {
	pg := &pl.page[s]
	parent := pg.parent
	if pg.prev != 0 {
		pl.page[pg.prev].next = pg.next
	} else {
		pl.setFirst(parent, pg.next)
	}
	if pg.next != 0 {
		pl.page[pg.next].prev = pg.prev
	}
	pl.page[parent].nkids--
	if pg.nbind > 0 {
		pl.byHash.deleteIf(pg.bind0.hash, s)
	}
	if !pl.faults.PruneUnbindsFirstOnly {
		for i := pg.more; i != 0; i = pl.binds[i].next {
			pl.byHash.deleteIf(pl.binds[i].b.hash, s)
		}
	}
	pl.byPrefix.deleteIf(pl.prefix[s], s)
	pl.pages--
	pg.parent = kvNoSlot
}

// kvHasher computes A4 prefix hashes of token pages: each token as one
// 8-byte little-endian unit (radix-acks.md §1.14, token units).
type kvHasher struct {
	buf   []byte
	seeds map[string]uint64
	path  []int32
}

var kvSeedBase = uint64(ref.PrefixHashSeed(spec.ExtraKey{}, false))

// seed is PrefixHashSeed of namespace ns (extra key set iff ns != "").
func (h *kvHasher) seed(ns string) uint64 {
	if ns == "" {
		return kvSeedBase
	}
	if s, ok := h.seeds[ns]; ok {
		return s
	}
	s := uint64(ref.PrefixHashSeed(spec.ExtraKey{Extra: ns, HasExtra: true}, false))
	if h.seeds == nil || len(h.seeds) >= 64 {
		h.seeds = make(map[string]uint64)
	}
	h.seeds[ns] = s
	return s
}

// next is NextPrefixHash(prev, toks as units).
func (h *kvHasher) next(prev uint64, toks []uint32) uint64 {
	n := 8 * len(toks)
	if cap(h.buf) < n {
		h.buf = make([]byte, n)
	}
	b := h.buf[:n]
	for i, t := range toks {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(t))
	}
	return foldHash(prev, xxh3.Hash(b))
}

// childPrefix is the prefix hash a page of namespace ns and tokens toks
// gets under parent (A4 as amended by A14): one step from the parent's
// hash when the parent is in ns, from ns's seed under the root, and from
// ns's seed chained over the parent's hash (one unit) under a parent of
// another namespace. It never looks past the parent: A4's first form
// chained ns's seed over the tokens of the whole path, which made a chain
// whose every page has a new namespace quadratic (8,192 one-token pages
// took 0.8 s, 2,048 took 47 ms).
func (h *kvHasher) childPrefix(pl *kvPool, parent int32, ns string, toks []uint32) uint64 {
	var v uint64
	switch {
	case parent == 0:
		v = h.seed(ns)
	case pl.nsOf(parent) == ns:
		v = pl.prefix[parent]
	case pl.faults.SwitchChainsFromSeed:
		v = h.seed(ns)
	default:
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], pl.prefix[parent])
		v = foldHash(h.seed(ns), xxh3.Hash(b[:]))
	}
	return h.next(v, toks)
}

// equalTokens is slices.Equal for token pages.
func equalTokens(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Undo log entries of one event.
const (
	undoCreated = iota // page created (and attached)
	undoBound          // binding appended to page
	undoCount          // binding's count changed from old
	undoPool           // pool created
)

// kvUndo is one step of a store, as rollback needs it: a store touches
// one pool, so the entry names a slot of it and holds no pointer.
type kvUndo struct {
	kind uint8
	slot int32
	hash uint64
	old  int64
}

// rollback undoes e.log, a store's steps on pl, in reverse and releases
// the slots it created.
func (e *kvEngine) rollback(pl *kvPool) {
	for i := len(e.log) - 1; i >= 0; i-- {
		u := e.log[i]
		switch u.kind {
		case undoCreated:
			e.tokens -= pl.pageSize
			pl.detach(u.slot)
			pl.release(u.slot)
		case undoBound:
			c := pl.popBinding(u.slot)
			pl.setResident(u.slot, pl.page[u.slot].resident-c)
			pl.byHash.delete(u.hash)
		case undoCount:
			b := pl.binding(u.slot, u.hash)
			pl.setResident(u.slot, pl.page[u.slot].resident+u.old-b.count)
			b.count = u.old
		case undoPool:
			e.dropPool(pl)
		}
	}
}

// incr adds one copy of binding b of slot s (A4, §2.5); asSet caps it at
// 1 (the CountsAsSet bug).
func (e *kvEngine) incr(pl *kvPool, s int32, b *kvBinding, asSet bool) {
	old := b.count
	nc := old
	switch {
	case asSet:
		nc = 1
	case old < math.MaxInt64:
		nc = old + 1
	}
	if nc == old {
		return
	}
	e.log = append(e.log, kvUndo{kind: undoCount, slot: s, hash: b.hash, old: old})
	b.count = nc
	pl.setResident(s, satAdd(pl.page[s].resident, nc-old))
}

// bindNew binds unbound hash h to slot s with count 1 (the caller enters
// it in byHash).
func (e *kvEngine) bindNew(pl *kvPool, s int32, h uint64) {
	pl.addBinding(s, h)
	pl.setResident(s, satAdd(pl.page[s].resident, 1))
	e.log = append(e.log, kvUndo{kind: undoBound, slot: s, hash: h})
}

// create attaches a new page (a hole until bound) under parent.
func (e *kvEngine) create(pl *kvPool, parent int32, ns string, toks []uint32, prefix uint64) int32 {
	s := pl.alloc(toks)
	pl.attach(parent, s, ns, prefix)
	pl.byPrefix.set(prefix, s)
	e.tokens += int64(len(toks))
	e.log = append(e.log, kvUndo{kind: undoCreated, slot: s})
	return s
}

// createBound attaches a new page under parent with hv bound to it, count
// 1, at the slot the caller entered in byHash and byPrefix (nextSlot); its
// one undo entry (undoCreated) also removes those entries.
func (e *kvEngine) createBound(pl *kvPool, parent int32, ns string, toks []uint32, prefix, hv uint64) int32 {
	s := pl.alloc(toks)
	pl.addBinding(s, hv)
	pl.attach(parent, s, ns, prefix)
	pl.setResident(s, 1)
	e.tokens += int64(len(toks))
	e.log = append(e.log, kvUndo{kind: undoCreated, slot: s})
	return s
}

// satAdd is a+b saturated at MaxInt64 (b >= 0 or no overflow).
func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// kvStoreArgs is a decoded BlockStored in the index's terms.
type kvStoreArgs struct {
	hashes []spec.EvHash
	parent *spec.EvHash
	tokens []uint32
	bs     int64
	ns     string
	key    kvPoolKey
	event  int
}

// newPool creates a's pool in e (from e's spare if it has one), logging
// it for a rollback.
func (ix *kvIndex) newPool(e *kvEngine, a *kvStoreArgs) *kvPool {
	pl := e.spare
	if pl != nil {
		e.spare = nil
		pl.reuse(a.key.group, a.key.tier, a.bs)
	} else {
		pl = newKVPool(a.key.group, a.key.tier, a.bs)
	}
	pl.faults = ix.f
	e.pools[a.key] = pl
	e.log = append(e.log, kvUndo{kind: undoPool})
	return pl
}

// store applies one BlockStored (§2.3, A4, A5) and returns its refusal,
// or nil. orphans counts its orphan stores or tokenless hashes. The checks
// run in the reference's order: shape, page size, then (tokenless) every
// hash's source tier, or (full) the parent; then block by block the hash's
// binding and the new page's prefix hash; the budget last.
func (ix *kvIndex) store(e *kvEngine, a *kvStoreArgs, h *kvHasher) (orphans uint64, err error) {
	n := int64(len(a.hashes))
	nt := int64(len(a.tokens))
	// 1. Shape.
	if nt != 0 && (a.bs < 1 || spec.MulOverflows(n, a.bs) || n*a.bs != nt) {
		return 0, ref.KVTokenCountError(a.event, len(a.hashes), a.bs, len(a.tokens))
	}
	// 2. Page size.
	pl := e.pools[a.key]
	if pl != nil && pl.pageSize != a.bs {
		return 0, ref.KVBlockSizeChangeError(a.event, a.bs, pl.pageSize, a.key.group, a.key.tier)
	}
	if nt == 0 {
		return ix.storeTokenless(e, pl, a, h)
	}
	// 3. Locate the prefix.
	cur := kvNoSlot
	if a.parent != nil {
		if pl != nil {
			cur = pl.byHash.get(uint64(*a.parent))
		}
		if cur == kvNoSlot && !ix.f.OrphanAtRoot {
			return 1, nil
		}
	}
	e.log = e.log[:0]
	if pl == nil {
		pl = ix.newPool(e, a)
	}
	if cur == kvNoSlot {
		cur = 0
	}
	// 4. Walk and insert. Each block's hash, then its prefix hash, is
	// looked up by inserting it for the slot a new page would get: a miss
	// (the common case, a new block) is then already entered.
	bs := int(a.bs)
	for i := range a.hashes {
		toks := a.tokens[i*bs : (i+1)*bs]
		hv := uint64(a.hashes[i])
		next := pl.nextSlot()
		hc, found := pl.byHash.insert(hv, next)
		if found {
			x := pl.byHash.slotAt(hc)
			if pl.page[x].parent != cur || pl.nsOf(x) != a.ns || !equalTokens(pl.tokensOf(x), toks) {
				e.rollback(pl)
				return 0, ref.KVHashConflictError(a.event, i, a.hashes[i])
			}
			e.incr(pl, x, pl.binding(x, hv), ix.f.CountsAsSet)
			cur = x
			continue
		}
		ph := h.childPrefix(pl, cur, a.ns, toks)
		if pc, found := pl.byPrefix.insert(ph, next); found {
			c := pl.byPrefix.slotAt(pc)
			if pl.page[c].parent != cur || pl.nsOf(c) != a.ns || !equalTokens(pl.tokensOf(c), toks) {
				pl.byHash.deleteAt(hc) // not logged yet
				e.rollback(pl)
				return 0, ref.KVChainCollisionError(a.event, i, spec.PrefixHash(ph))
			}
			pl.byHash.setSlotAt(hc, c)
			e.bindNew(pl, c, hv)
			cur = c
			continue
		}
		cur = e.createBound(pl, cur, a.ns, toks, ph, hv)
	}
	return 0, ix.checkBudget(e, pl, a)
}

// checkBudget is A5 at the end of a store on pl, e.tokens being the
// engine's tokens after it (the reference's "after"): past the budget the
// store is undone and refused.
func (ix *kvIndex) checkBudget(e *kvEngine, pl *kvPool, a *kvStoreArgs) error {
	if e.tokens <= ix.cfg.MaxTokensPerEngine {
		return nil
	}
	after := e.tokens
	e.rollback(pl)
	return ref.KVPoolBudgetError(a.event, after, ix.cfg.MaxTokensPerEngine)
}

// storeTokenless is §2.3 step 6 (as amended by A14): each hash's page is
// copied, with its path, from another tier of the same engine and group
// whose page size is the event's. Hash by hash, in the reference's order:
// its source (a source of another page size refuses the event), its
// binding (which must name the source's copy), then the pages without a
// copy on its path, root first (past spec.KVEvMaxCopyWalk, an orphan).
func (ix *kvIndex) storeTokenless(e *kvEngine, pl *kvPool, a *kvStoreArgs, h *kvHasher) (orphans uint64, err error) {
	srcs := e.tierOrder(a.key)
	e.log = e.log[:0]
	for i, hv := range a.hashes {
		var sp *kvPool
		src := kvNoSlot
		for _, p := range srcs {
			if src = p.byHash.get(uint64(hv)); src != kvNoSlot {
				if p.pageSize != a.bs {
					e.rollback(pl)
					return 0, ref.KVBlockSizeChangeError(a.event, a.bs, p.pageSize, p.group, p.tier)
				}
				sp = p
				break
			}
		}
		if src == kvNoSlot {
			orphans++
			continue
		}
		if pl == nil {
			pl = ix.newPool(e, a)
		}
		if x := pl.byHash.get(uint64(hv)); x != kvNoSlot {
			if !isCopyOf(pl, x, sp, src) {
				e.rollback(pl)
				return 0, ref.KVHashConflictError(a.event, i, hv)
			}
			e.incr(pl, x, pl.binding(x, uint64(hv)), ix.f.CountsAsSet)
			continue
		}
		cur, deep, err := ix.copyPath(e, pl, sp, src, h)
		if deep {
			orphans++ // A14: too many pages to create for one hash
			continue
		}
		if err != nil {
			e.rollback(pl)
			return 0, ref.KVChainCollisionError(a.event, i, spec.PrefixHash(err.prefix))
		}
		e.bindNew(pl, cur, uint64(hv))
		pl.byHash.set(uint64(hv), cur)
	}
	if pl != nil && pl.pages == 0 {
		e.dropPool(pl) // new, and every hash an orphan: no pool (A5)
		return orphans, nil
	}
	return orphans, ix.checkBudget(e, pl, a)
}

// kvCollision is the page a tokenless copy found in the way: its prefix
// hash names a page of another path (A4's chain collision).
type kvCollision struct{ prefix uint64 }

// copyPath makes sure pl has src's path (src a slot of sp) and returns
// the slot of src's copy (A14: the copy of a page is the page of pl with
// its prefix hash). It walks from src up to its nearest ancestor that has
// a copy (the root at the latest), which must have the ancestor's
// namespace and tokens (else a collision), and creates the pages below it
// root first, as holes: the work is the pages created, never the depth
// (walking the whole path made one tokenless store a page of a chain 8,192
// pages deep cost 121 us a page). More than spec.KVEvMaxCopyWalk pages to
// create is deep: nothing is created and the caller counts an orphan.
func (ix *kvIndex) copyPath(e *kvEngine, pl, sp *kvPool, src int32, h *kvHasher) (cur int32, deep bool, _ *kvCollision) {
	path := h.path[:0]
	defer func() { h.path = path[:0] }()
	limit := spec.KVEvMaxCopyWalk
	if pl.faults.CopyWalkOneShort {
		limit--
	}
	for q := src; sp.page[q].parent != kvNoSlot; q = sp.page[q].parent {
		if c := pl.byPrefix.get(sp.prefix[q]); c != kvNoSlot {
			if !isCopyOf(pl, c, sp, q) {
				return 0, false, &kvCollision{prefix: sp.prefix[q]}
			}
			cur = c
			break
		}
		if path = append(path, q); len(path) > limit {
			return 0, true, nil
		}
	}
	for k := len(path) - 1; k >= 0; k-- {
		q := path[k]
		cur = e.create(pl, cur, sp.nsOf(q), sp.tokensOf(q), sp.prefix[q])
	}
	return cur, false, nil
}

// isCopyOf reports whether slot a of pool pa is the copy of slot b of pool
// pb (A14): the same prefix hash, namespace and tokens.
func isCopyOf(pa *kvPool, a int32, pb *kvPool, b int32) bool {
	return pa.prefix[a] == pb.prefix[b] && pa.nsOf(a) == pb.nsOf(b) && equalTokens(pa.tokensOf(a), pb.tokensOf(b))
}

// tierOrder is the pools a tokenless update of key searches: the same
// group's other tiers, GPU first, then by tier name.
func (e *kvEngine) tierOrder(key kvPoolKey) []*kvPool {
	var out []*kvPool
	for k, p := range e.pools {
		if k.group == key.group && k.tier != key.tier {
			out = append(out, p)
		}
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && kvTierLess(out[j].tier, out[j-1].tier); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// kvTierLess orders tiers for tierOrder: GPU first, then by name.
func kvTierLess(a, b string) bool {
	if a == kvTierGPU || b == kvTierGPU {
		return a == kvTierGPU && b != kvTierGPU
	}
	return a < b
}

// remove applies one BlockRemoved (§2.4, A4) and prunes (§2.4).
func (e *kvEngine) remove(key kvPoolKey, hashes []spec.EvHash) (unknown uint64) {
	pl := e.pools[key]
	if pl == nil {
		return uint64(len(hashes))
	}
	holes := e.holes[:0]
	for _, hv := range hashes {
		s := pl.byHash.get(uint64(hv))
		if s == kvNoSlot {
			unknown++
			continue
		}
		b := pl.binding(s, uint64(hv))
		if pl.faults.RemoveDecrementsFirstBinding {
			b = &pl.page[s].bind0
		}
		if b.count > 0 {
			b.count--
			pl.setResident(s, pl.page[s].resident-1)
			if pl.page[s].resident == 0 {
				holes = append(holes, s)
			}
		}
	}
	for _, s := range holes {
		e.prune(pl, s)
	}
	e.holes = holes[:0]
	if pl.pages == 0 {
		e.dropPool(pl)
	}
	return unknown
}

// dropPool removes pl, now empty, from e and keeps it as e's spare: a
// pool that empties and fills again (a cache cycling through requests)
// then regrows neither its arrays nor its tables.
func (e *kvEngine) dropPool(pl *kvPool) {
	delete(e.pools, kvPoolKey{pl.group, pl.tier})
	e.spare = pl
}

// prune releases slot s and then its ancestors, each while it is in the
// pool, a hole and childless (§2.4): a slot pruned earlier in the same
// event (an ancestor of another hole) is out of the pool and skipped.
func (e *kvEngine) prune(pl *kvPool, s int32) {
	for {
		pg := &pl.page[s]
		if pg.parent == kvNoSlot || pg.resident != 0 || kvLinkFirst(pl.link[s]) != 0 {
			return
		}
		parent := pg.parent
		e.tokens -= pl.pageSize
		pl.detach(s)
		pl.release(s)
		if parent == 0 {
			return
		}
		s = parent
	}
}
