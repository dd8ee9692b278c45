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
// Layout. Each page has a slot. What the score walk reads lives in two
// pointer-free arrays indexed by slot, 16 bytes a slot: prefix (the prefix
// hash) and link (the first child's slot and the namespace id with a hole
// bit). A long prompt's walk is therefore a scan of dense arrays (8
// engines' 15K-page chains fit in L2) instead of one cache line per page,
// and where a chain's pages have consecutive slots (a store allocates them
// in order) it compares a block of prefix hashes at once, as the HTTP
// pools compare a compressed node's hashes. Everything else
// (links, tokens, bindings) is in the page struct, allocated from per-pool
// slabs and recycled with its slot through a free list, so a pruned page's
// memory is reused by the next store instead of pinning a slab. Tokens
// are a slice of a per-pool token slab; bindings an inline one-element
// slice (a page almost always has one hash).
//
// Lookups. byHash finds a block hash's page; byPrefix finds a page by its
// prefix hash (unique in a pool, A4), which also answers "does this parent
// already have a child with these tokens in this namespace" without a
// children index: that child, if it exists, has exactly the prefix hash
// the new page would get.
//
// Pruning (§2.4) is incremental: between events every hole has a resident
// descendant, so a page is prunable exactly when it is a hole without
// children. A removal records the pages it turned into holes; at the end
// of the event each is pruned upwards while it is a childless hole.
//
// Atomicity (§2.7): a store applies block by block, logging what it did;
// a refusal (conflict, collision, budget) undoes the log in reverse, so
// the checks see the store's own earlier blocks exactly as a sequential
// application would, and the pool ends exactly as before the event.

// kvBinding is one block hash bound to a page and its residency count (A4).
type kvBinding struct {
	hash  uint64
	count int64
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

const kvHoleBit = 1 << 31

// kvPage is one page: one block of a pool.
type kvPage struct {
	first    *kvPage // first child
	next     *kvPage // next sibling
	prev     *kvPage // previous sibling
	parent   *kvPage
	prefix   uint64 // A4 prefix hash
	resident int64  // sum of the bindings' counts; 0 is a hole
	ns       string // namespace (§2.2)
	nsID     uint32
	slot     int32
	nkids    int32
	attached bool // in the pool (false once pruned, undone or freed)
	tokens   []uint32
	bind     []kvBinding // inline[:n] while n <= 1
	inline   [1]kvBinding
}

// binding returns the index of h in p's bindings, or -1.
func (p *kvPage) binding(h uint64) int {
	for i := range p.bind {
		if p.bind[i].hash == h {
			return i
		}
	}
	return -1
}

// kvPool is one (group, tier) of an engine.
type kvPool struct {
	group    int64
	tier     string
	pageSize int64
	root     kvPage // slot 0, never attached to anything
	pages    int
	byHash   map[uint64]*kvPage
	byPrefix map[uint64]*kvPage
	prefix   []uint64  // slot → prefix hash
	link     []uint64  // slot → kvLink(first child's slot, namespace id | hole bit)
	pageOf   []*kvPage // slot → page

	nsIDs   map[string]uint32
	nsNames []string
	nsRefs  []int32
	nsFree  []uint32
	nsLast  uint32 // the last id taken, tried first

	free    []*kvPage
	slab    []kvPage
	tokSlab []uint32

	// faults are the index's reach plants that live in a pool's walk and
	// pruning (internal/fault.KVEv); always zero in production.
	faults fault.KVEv
}

func newKVPool(group int64, tier string, pageSize int64) *kvPool {
	pl := &kvPool{
		group: group, tier: tier, pageSize: pageSize,
		byHash:   make(map[uint64]*kvPage),
		byPrefix: make(map[uint64]*kvPage),
		nsIDs:    make(map[string]uint32),
		prefix:   make([]uint64, 1, 16),
		link:     make([]uint64, 1, 16),
		pageOf:   make([]*kvPage, 1, 16),
	}
	pl.pageOf[0] = &pl.root
	return pl
}

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

func (pl *kvPool) nsUnref(id uint32) {
	if pl.nsRefs[id]--; pl.nsRefs[id] == 0 {
		delete(pl.nsIDs, pl.nsNames[id])
		pl.nsNames[id] = ""
		pl.nsFree = append(pl.nsFree, id)
	}
}

// alloc returns a detached, zeroed page with a slot whose tokens hold a
// copy of toks.
func (pl *kvPool) alloc(toks []uint32) *kvPage {
	var p *kvPage
	if n := len(pl.free); n > 0 {
		p = pl.free[n-1]
		pl.free = pl.free[:n-1]
	} else {
		if len(pl.slab) == 0 {
			pl.slab = make([]kvPage, min(max(pl.pages/4, 16), 1024))
		}
		p = &pl.slab[0]
		pl.slab = pl.slab[1:]
		p.slot = int32(len(pl.prefix))
		pl.prefix = append(pl.prefix, 0)
		pl.link = append(pl.link, 0)
		pl.pageOf = append(pl.pageOf, p)
	}
	buf := p.tokens[:0]
	if cap(buf) < len(toks) {
		if int64(len(toks)) == pl.pageSize && pl.pageSize <= 4096 {
			ps := int(pl.pageSize)
			if len(pl.tokSlab) < ps {
				pl.tokSlab = make([]uint32, ps*min(max(pl.pages/4, 16), 1024))
			}
			buf = pl.tokSlab[:0:ps]
			pl.tokSlab = pl.tokSlab[ps:]
		} else {
			buf = make([]uint32, 0, len(toks))
		}
	}
	p.tokens = append(buf, toks...)
	p.bind = p.inline[:0]
	return p
}

// release returns a detached page (and its slot) to the free list.
func (pl *kvPool) release(p *kvPage) {
	pl.nsUnref(p.nsID)
	p.first, p.next, p.prev, p.parent = nil, nil, nil, nil
	p.prefix, p.resident, p.ns, p.nsID, p.nkids, p.attached = 0, 0, "", 0, 0, false
	p.tokens = p.tokens[:0]
	p.inline[0] = kvBinding{}
	p.bind = nil
	pl.prefix[p.slot], pl.link[p.slot] = 0, 0
	pl.free = append(pl.free, p)
}

// slotOf is p's slot, 0 for nil.
func slotOf(p *kvPage) int32 {
	if p == nil {
		return 0
	}
	return p.slot
}

// setResident sets p's residency and its hot hole bit.
func (pl *kvPool) setResident(p *kvPage, v int64) {
	p.resident = v
	ns := p.nsID
	if v == 0 {
		ns |= kvHoleBit
	}
	pl.link[p.slot] = kvLink(kvLinkFirst(pl.link[p.slot]), ns)
}

// setFirst records slot's first child's slot in its link word.
func (pl *kvPool) setFirst(slot, first int32) {
	pl.link[slot] = kvLink(first, kvLinkNSHole(pl.link[slot]))
}

// attach makes p (a hole) a child of parent and registers its prefix hash.
func (pl *kvPool) attach(parent, p *kvPage, ns string, prefix uint64) {
	p.parent = parent
	p.ns = ns
	p.nsID = pl.nsRef(ns)
	p.prefix = prefix
	p.attached = true
	p.next = parent.first
	if parent.first != nil {
		parent.first.prev = p
	}
	parent.first = p
	parent.nkids++
	pl.prefix[p.slot] = prefix
	pl.link[p.slot] = kvLink(0, p.nsID|kvHoleBit)
	pl.setFirst(parent.slot, p.slot)
	pl.byPrefix[prefix] = p
	pl.pages++
}

// detach removes a childless page from the pool, unbinding its hashes.
func (pl *kvPool) detach(p *kvPage) {
	parent := p.parent
	if p.prev != nil {
		p.prev.next = p.next
	} else {
		parent.first = p.next
		pl.setFirst(parent.slot, slotOf(p.next))
	}
	if p.next != nil {
		p.next.prev = p.prev
	}
	parent.nkids--
	bound := p.bind
	if pl.faults.PruneUnbindsFirstOnly && len(bound) > 1 {
		bound = bound[:1]
	}
	for _, b := range bound {
		if pl.byHash[b.hash] == p {
			delete(pl.byHash, b.hash)
		}
	}
	if pl.byPrefix[p.prefix] == p {
		delete(pl.byPrefix, p.prefix)
	}
	pl.pages--
	p.attached = false
}

// kvHasher computes A4 prefix hashes of token pages: each token as one
// 8-byte little-endian unit (radix-acks.md §1.14, token units).
type kvHasher struct {
	buf   []byte
	seeds map[string]uint64
	path  []*kvPage
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
// gets under parent (A4): the chain seeded with ns over the tokens of every
// page from the root down to it, whatever the ancestors' namespaces. Under
// a parent of the same namespace that is the parent's hash chained once.
func (h *kvHasher) childPrefix(pl *kvPool, parent *kvPage, ns string, toks []uint32) uint64 {
	if parent == &pl.root {
		return h.next(h.seed(ns), toks)
	}
	if parent.ns == ns {
		return h.next(parent.prefix, toks)
	}
	path := h.path[:0]
	for q := parent; q != &pl.root; q = q.parent {
		path = append(path, q)
	}
	v := h.seed(ns)
	for i := len(path) - 1; i >= 0; i-- {
		v = h.next(v, path[i].tokens)
	}
	clear(path)
	h.path = path[:0]
	return h.next(v, toks)
}

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

type kvUndo struct {
	kind int
	pl   *kvPool
	p    *kvPage
	hash uint64
	old  int64
}

// rollback undoes log in reverse and releases created pages.
func (e *kvEngine) rollback(log []kvUndo) {
	for i := len(log) - 1; i >= 0; i-- {
		u := log[i]
		switch u.kind {
		case undoCreated:
			e.tokens -= int64(len(u.p.tokens))
			u.pl.detach(u.p)
			u.pl.release(u.p)
		case undoBound:
			p := u.p
			u.pl.setResident(p, p.resident-p.bind[len(p.bind)-1].count)
			p.bind = p.bind[:len(p.bind)-1]
			delete(u.pl.byHash, u.hash)
		case undoCount:
			p := u.p
			j := p.binding(u.hash)
			u.pl.setResident(p, p.resident+u.old-p.bind[j].count)
			p.bind[j].count = u.old
		case undoPool:
			delete(e.pools, kvPoolKey{u.pl.group, u.pl.tier})
		}
	}
}

// incr adds one copy of binding j of p (A4, §2.5); asSet caps it at 1
// (the CountsAsSet bug).
func (e *kvEngine) incr(pl *kvPool, p *kvPage, j int, asSet bool) {
	b := &p.bind[j]
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
	e.log = append(e.log, kvUndo{kind: undoCount, pl: pl, p: p, hash: b.hash, old: old})
	b.count = nc
	pl.setResident(p, satAdd(p.resident, nc-old))
}

// bindNew binds unbound hash h to p with count 1.
func (e *kvEngine) bindNew(pl *kvPool, p *kvPage, h uint64) {
	p.bind = append(p.bind, kvBinding{hash: h, count: 1})
	pl.setResident(p, satAdd(p.resident, 1))
	pl.byHash[h] = p
	e.log = append(e.log, kvUndo{kind: undoBound, pl: pl, p: p, hash: h})
}

// create attaches a new page (a hole until bound) under parent.
func (e *kvEngine) create(pl *kvPool, parent *kvPage, ns string, toks []uint32, prefix uint64) *kvPage {
	p := pl.alloc(toks)
	pl.attach(parent, p, ns, prefix)
	e.tokens += int64(len(toks))
	e.log = append(e.log, kvUndo{kind: undoCreated, pl: pl, p: p})
	return p
}

// createBound attaches a new page under parent with hv bound to it, count 1;
// its one undo entry (undoCreated) also unbinds hv.
func (e *kvEngine) createBound(pl *kvPool, parent *kvPage, ns string, toks []uint32, prefix, hv uint64) *kvPage {
	p := pl.alloc(toks)
	p.bind = append(p.bind, kvBinding{hash: hv, count: 1})
	pl.attach(parent, p, ns, prefix)
	pl.setResident(p, 1)
	pl.byHash[hv] = p
	e.tokens += int64(len(toks))
	e.log = append(e.log, kvUndo{kind: undoCreated, pl: pl, p: p})
	return p
}

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
	var cur *kvPage
	if a.parent != nil {
		if pl != nil {
			cur = pl.byHash[uint64(*a.parent)]
		}
		if cur == nil && !ix.f.OrphanAtRoot {
			return 1, nil
		}
	}
	e.log = e.log[:0]
	if pl == nil {
		pl = newKVPool(a.key.group, a.key.tier, a.bs)
		pl.faults = ix.f
		e.pools[a.key] = pl
		e.log = append(e.log, kvUndo{kind: undoPool, pl: pl})
	}
	if cur == nil {
		cur = &pl.root
	}
	// 4. Walk and insert.
	bs := int(a.bs)
	for i := range a.hashes {
		toks := a.tokens[i*bs : (i+1)*bs]
		hv := uint64(a.hashes[i])
		if x := pl.byHash[hv]; x != nil {
			if x.parent != cur || x.ns != a.ns || !equalTokens(x.tokens, toks) {
				e.rollback(e.log)
				return 0, ref.KVHashConflictError(a.event, i, a.hashes[i])
			}
			e.incr(pl, x, x.binding(hv), ix.f.CountsAsSet)
			cur = x
			continue
		}
		ph := h.childPrefix(pl, cur, a.ns, toks)
		if c := pl.byPrefix[ph]; c != nil {
			if c.parent != cur || c.ns != a.ns || !equalTokens(c.tokens, toks) {
				e.rollback(e.log)
				return 0, ref.KVChainCollisionError(a.event, i, spec.PrefixHash(ph))
			}
			e.bindNew(pl, c, hv)
			cur = c
			continue
		}
		cur = e.createBound(pl, cur, a.ns, toks, ph, hv)
	}
	return 0, ix.checkBudget(e, a)
}

// checkBudget is A5 at the end of a store, e.tokens being the engine's
// tokens after it (the reference's "after"): past the budget the store is
// undone and refused.
func (ix *kvIndex) checkBudget(e *kvEngine, a *kvStoreArgs) error {
	if e.tokens <= ix.cfg.MaxTokensPerEngine {
		return nil
	}
	after := e.tokens
	e.rollback(e.log)
	return ref.KVPoolBudgetError(a.event, after, ix.cfg.MaxTokensPerEngine)
}

// storeTokenless is §2.3 step 6: each hash's page is copied, with its
// path, from another tier of the same engine and group whose page size is
// the event's. Hash by hash, in the reference's order: its source (a
// source of another page size refuses the event), its binding, then the
// pages missing on its path, root first.
func (ix *kvIndex) storeTokenless(e *kvEngine, pl *kvPool, a *kvStoreArgs, h *kvHasher) (orphans uint64, err error) {
	srcs := e.tierOrder(a.key)
	e.log = e.log[:0]
	for i, hv := range a.hashes {
		var src *kvPage
		for _, sp := range srcs {
			if src = sp.byHash[uint64(hv)]; src != nil {
				if sp.pageSize != a.bs {
					e.rollback(e.log)
					return 0, ref.KVBlockSizeChangeError(a.event, a.bs, sp.pageSize, sp.group, sp.tier)
				}
				break
			}
		}
		if src == nil {
			orphans++
			continue
		}
		if pl == nil {
			pl = newKVPool(a.key.group, a.key.tier, a.bs)
			pl.faults = ix.f
			e.pools[a.key] = pl
			e.log = append(e.log, kvUndo{kind: undoPool, pl: pl})
		}
		if x := pl.byHash[uint64(hv)]; x != nil {
			if !samePath(x, src) {
				e.rollback(e.log)
				return 0, ref.KVHashConflictError(a.event, i, hv)
			}
			e.incr(pl, x, x.binding(uint64(hv)), ix.f.CountsAsSet)
			continue
		}
		path := h.path[:0]
		for q := src; q.parent != nil; q = q.parent {
			path = append(path, q)
		}
		cur := &pl.root
		for k := len(path) - 1; k >= 0; k-- {
			q := path[k]
			if c := pl.byPrefix[q.prefix]; c != nil {
				if c.parent != cur || c.ns != q.ns || !equalTokens(c.tokens, q.tokens) {
					clear(path)
					h.path = path[:0]
					e.rollback(e.log)
					return 0, ref.KVChainCollisionError(a.event, i, spec.PrefixHash(q.prefix))
				}
				cur = c
				continue
			}
			cur = e.create(pl, cur, q.ns, q.tokens, q.prefix)
		}
		clear(path)
		h.path = path[:0]
		e.bindNew(pl, cur, uint64(hv))
	}
	return orphans, ix.checkBudget(e, a)
}

// samePath reports whether pages a and b (of two pools) have the same
// path from their roots: namespaces and tokens page by page.
func samePath(a, b *kvPage) bool {
	for a.parent != nil && b.parent != nil {
		if a.prefix != b.prefix || a.ns != b.ns || !equalTokens(a.tokens, b.tokens) {
			return false
		}
		a, b = a.parent, b.parent
	}
	return a.parent == nil && b.parent == nil
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
		p := pl.byHash[uint64(hv)]
		if p == nil {
			unknown++
			continue
		}
		j := p.binding(uint64(hv))
		if pl.faults.RemoveDecrementsFirstBinding {
			j = 0
		}
		b := &p.bind[j]
		if b.count > 0 {
			b.count--
			pl.setResident(p, p.resident-1)
			if p.resident == 0 {
				holes = append(holes, p)
			}
		}
	}
	for _, p := range holes {
		for p.attached && p.resident == 0 && p.first == nil {
			parent := p.parent
			e.tokens -= int64(len(p.tokens))
			pl.detach(p)
			pl.release(p)
			if parent == &pl.root {
				break
			}
			p = parent
		}
	}
	clear(holes)
	e.holes = holes[:0]
	if pl.pages == 0 {
		delete(e.pools, key)
	}
	return unknown
}
