package fast

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// node is one radix-tree node (docs/spec/radix-acks.md §1.2).
type node struct {
	id       spec.NodeID
	parent   *node
	children map[ChildKey]*node // nil until the first child
	// only is the sole child when there is exactly one (every node of a
	// path), so a walk along a path compares the first page instead of
	// hashing it for the map; nil otherwise.
	only    *node
	key     RadixKey       // compact (R-COMPACT); empty for the root
	value   []spec.SlotIdx // len == key.n; capacity-capped so no append reaches a neighbour
	lockRef int
	// ownLocks counts the locks taken on this node itself (R-LOCKSUM's
	// directLocks): lockRef == ownLocks + Σ children's lockRef.
	ownLocks int
	// lastAccess and created are ticks (§0.2 rule 2).
	lastAccess, created uint64
	hitCount, priority  int
	// leafPos is the node's index in RadixTree.leaves, -1 when it is not an
	// evictable leaf.
	leafPos int
	// meta is the node's CP owner metadata (docs/spec/radix-acks.md §4.2): start page
	// and page count always, owners and counts only with CP on.
	meta CPNodeMeta
	// planMark is the plan generation whose load path holds the node.
	planMark uint64
	// hashes are the prefix hashes of the node's pages (§1.14), computed
	// once when the pages are stored and divided when the node splits.
	hashes []spec.PrefixHash
	// heapGen numbers the node's latest entry in RadixTree.heap; older entries
	// of the node are stale and skipped when popped.
	heapGen uint32
}

// RadixTree is the production radix prefix cache (docs/spec/radix-acks.md §1, §2): view
// keys that are only copied when stored, a child map keyed by the first
// page's bytes, memequal key matching, an incrementally kept set of
// evictable leaves, an id index for lock handles, and CP owner metadata on
// every node (CPNodeMeta, docs/spec/radix-acks.md §4.2) for the owner-lane eviction
// planner (hicache_owner_counts.go). Its observable
// behaviour (results, errors, State) equals ref.NewRadixTree's. A RadixTree is not
// safe for concurrent use, except that PrefixLen may run concurrently with
// other PrefixLen calls.
type RadixTree struct {
	cfg    spec.TreeConfig
	ps     int
	root   *node
	nodes  map[spec.NodeID]*node
	nextID spec.NodeID
	tick   uint64

	evictable, protected int
	// leaves is the set of evictable leaves (non-root, unlocked, childless),
	// kept on every insert, split, lock change and eviction like upstream's
	// _update_leaf_status; its order is not observable.
	leaves []*node
	// heap holds an entry for every evictable leaf under its current
	// policy order, kept between Evict calls: a leaf whose order changes
	// (a match touching it) or that joins the set gets a fresh entry, and
	// stale entries (older generation, or no longer a leaf) are dropped
	// when popped or when compact rebuilds the heap. Evict then costs
	// O(victims·log n) instead of heapifying every leaf on each call.
	heap   victimHeap
	copied int64
	// faults re-introduces historic bugs for the bug zoo; always zero in
	// trees built by NewRadixTree.
	faults fault.Radix
	// owner maps pages to CP ranks (§4.1); sizes are cfg.CPSizes().
	owner spec.OwnerFn
	sizes []int
	// recounts, metaMisses and loadRefusals are the §4.4–§4.6 counters;
	// planGen numbers plans for the load-path marks.
	recounts, metaMisses, loadRefusals int64
	planGen                            uint64
	// gen counts the changes of the tree's shape and slot arrays (a leaf
	// added or deleted, a node split), so a SlotView can tell it is stale.
	gen uint64
}

// NewRadixTree builds an empty tree (the root, id 0) for cfg, as a
// spec.NewRadixTreeFunc; an invalid config is rejected as by cfg.Validate.
// CP owners are round-robin. The tree is a *RadixTree.
func NewRadixTree(cfg spec.TreeConfig) (spec.RadixTree, error) {
	return newRadixTreeWithFaults(cfg, fault.Radix{})
}

// newRadixTreeWithFaults is NewRadixTree with the historic bugs f selects
// put back, for the bug zoo only: fault.Hooks hands it to equiv/mutants
// (hooks.go). Called with the zero value it is NewRadixTree.
func newRadixTreeWithFaults(cfg spec.TreeConfig, f fault.Radix) (spec.RadixTree, error) {
	t, err := newRadixTreeOwned(cfg, ref.RoundRobin{})
	if err != nil {
		return nil, err
	}
	t.faults = f
	return t, nil
}

// newRadixTreeOwned is NewRadixTree with the page → owner rule owner
// (docs/spec/radix-acks.md §4.1, §6 item 1); fast's tests build trees under
// other rules with it (export_test.go).
func newRadixTreeOwned(cfg spec.TreeConfig, owner spec.OwnerFn) (*RadixTree, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	root := &node{
		key:     RadixKey{b: &keyBacking{units: []spec.Unit{}, private: true}},
		value:   []spec.SlotIdx{},
		lockRef: 1,
		leafPos: -1,
	}
	t := &RadixTree{cfg: cfg, ps: cfg.PageSize, root: root, nodes: map[spec.NodeID]*node{0: root}, nextID: 1,
		owner: owner, sizes: cfg.CPSizes()}
	root.meta = t.newMeta(0, 0)
	return t, nil
}

var _ spec.NewRadixTreeFunc = NewRadixTree

// Config returns the configuration the tree was built with.
func (t *RadixTree) Config() spec.TreeConfig { return t.cfg }

// CopiedUnits is the number of key units materialized by stores so far
// (docs/spec/radix-acks.md §1.1 "Instrumentation"): a match adds 0, an insert adds its
// new leaf's length plus the length of every node it split.
func (t *RadixTree) CopiedUnits() int64 { return t.copied }

// EvictableSize is the units held by unlocked nodes.
func (t *RadixTree) EvictableSize() int { return t.evictable }

// ProtectedSize is the units held by locked nodes.
func (t *RadixTree) ProtectedSize() int { return t.protected }

// TotalSize is the units held by all nodes.
func (t *RadixTree) TotalSize() int { return t.evictable + t.protected }

// queryKey views a caller's key as the tree's key space without copying: in
// Eagle mode a token key becomes a pair view (§2.3), after a read-only range
// check that fails with ErrTokenRange. The backing is the caller's b, so a
// query that is only read stays on the caller's stack.
func (t *RadixTree) queryKey(k spec.RadixKey, b *keyBacking) (RadixKey, error) {
	if t.cfg.Eagle && !k.Bigram {
		if err := checkTokenUnits(k.Units); err != nil {
			return RadixKey{}, err
		}
		*b = keyBacking{units: k.Units, pairs: true}
		return RadixKey{b: b, n: max(0, len(k.Units)-1), Extra: k.Extra, Bigram: true}, nil
	}
	*b = keyBacking{units: k.Units}
	return RadixKey{b: b, n: len(k.Units), Extra: k.Extra, Bigram: k.Bigram}, nil
}

// pageBuf is the stack buffer a pair-view page is packed into for a child
// lookup; pages longer than this use one heap buffer per call.
const pageBuf = 64

// lookup returns node's child for the first page of q, or nil. The map key
// aliases q's backing (plain view) or scratch (pair view), so the lookup
// does not allocate.
func (t *RadixTree) lookup(n *node, q RadixKey, scratch []spec.Unit) *node {
	if len(n.children) == 0 {
		return nil
	}
	return t.child(n, t.queryChildKey(q, scratch))
}

// child returns node's child under ck, or nil; node has children.
func (t *RadixTree) child(n *node, ck ChildKey) *node {
	if c := n.only; c != nil {
		if ck.Extra == c.key.Extra && ck.Page == unitString(c.key.plain()[:t.ps]) {
			return c
		}
		return nil
	}
	return n.children[ck]
}

// relink brings n.only up to date after n's children changed.
func relink(n *node) {
	n.only = nil
	if len(n.children) == 1 {
		for _, c := range n.children {
			n.only = c
		}
	}
}

// queryChildKey is q's child key with the page packed into scratch when q
// is a pair view; the result must not be stored.
func (t *RadixTree) queryChildKey(q RadixKey, scratch []spec.Unit) ChildKey {
	page := q.slice(0, t.ps)
	if !q.b.pairs {
		return ChildKey{Extra: q.Extra, Page: unitString(page.plain())}
	}
	tok := q.b.units[page.off : page.off+t.ps+1]
	s := scratch[:t.ps]
	for i := range s {
		s[i] = ref.PackBigram(tok[i], tok[i+1])
	}
	return ChildKey{Extra: q.Extra, Page: unitString(s)}
}

// scratchFor returns a page-sized packing buffer for pair-view lookups: buf
// when it is big enough, else one fresh slice (Eagle trees with pages over
// pageBuf units).
func (t *RadixTree) scratchFor(q RadixKey, buf []spec.Unit) []spec.Unit {
	if !q.b.pairs || t.ps <= len(buf) {
		return buf
	}
	return make([]spec.Unit, t.ps)
}

// storedChildKey is the child-map key of a stored node: it aliases the
// node's compact key, which is immutable.
func (t *RadixTree) storedChildKey(k RadixKey) ChildKey {
	return ChildKey{Extra: k.Extra, Page: unitString(k.plain()[:t.ps])}
}

// MatchPrefix returns the slots of the longest page-aligned cached prefix of
// k and the node it ends on, splitting a node the match ends inside
// (docs/spec/radix-acks.md §1.4). It copies no key units; only the result is
// allocated, once, at its exact size.
func (t *RadixTree) MatchPrefix(k spec.RadixKey) (spec.MatchResult, error) {
	last, err := t.match(k)
	if err != nil {
		return spec.MatchResult{}, err
	}
	return spec.MatchResult{Indices: pathValues(make([]spec.SlotIdx, 0, pathLen(last)), last), LastNode: last.id}, nil
}

// MatchPrefixAppend is MatchPrefix appending the matched slots to dst and
// returning the extended slice and the last node's id; with enough capacity
// in dst a match allocates nothing. On error dst is returned unchanged.
func (t *RadixTree) MatchPrefixAppend(dst []spec.SlotIdx, k spec.RadixKey) ([]spec.SlotIdx, spec.NodeID, error) {
	last, err := t.match(k)
	if err != nil {
		return dst, 0, err
	}
	return pathValues(slices.Grow(dst, pathLen(last)), last), last.id, nil
}

// pathLen is the number of slots on the path from the root to last: the
// matched nodes are exactly last's ancestors, so the walk keeps no list.
func pathLen(last *node) int {
	total := 0
	for n := last; n != nil; n = n.parent {
		total += len(n.value)
	}
	return total
}

// pathValues appends the values along the root-to-last path to dst, which
// has room for pathLen(last) more slots, filling from the end upwards.
func pathValues(dst []spec.SlotIdx, last *node) []spec.SlotIdx {
	end := len(dst) + pathLen(last)
	out := dst[:end]
	for n := last; n != nil; n = n.parent {
		end -= copy(out[end-len(n.value):end], n.value)
	}
	return out
}

// match is the §1.4 walk; it returns the node the match ends on.
func (t *RadixTree) match(k spec.RadixKey) (*node, error) {
	if t.cfg.Disable {
		return t.root, nil
	}
	var qb keyBacking
	q, err := t.queryKey(k, &qb)
	if err != nil {
		return nil, err
	}
	t.tick++
	q = q.slice(0, q.n/t.ps*t.ps)
	if q.n == 0 {
		return t.root, nil
	}
	var buf [pageBuf]spec.Unit
	scratch := t.scratchFor(q, buf[:])
	n := t.root
	n.lastAccess = t.tick
	for q.n > 0 {
		c := t.lookup(n, q, scratch)
		if c == nil {
			break
		}
		c.lastAccess = t.tick
		t.touch(c)
		p := matchLen(c.key, q, t.ps)
		if p < c.key.n {
			return t.split(c, p), nil
		}
		n = c
		q = t.rest(q, p)
	}
	return n, nil
}

// rest is q after its first p units: an O(1) view, or under the B1.a fault
// a copy of the remaining units, as the pre-fix list slice made.
func (t *RadixTree) rest(q RadixKey, p int) RadixKey {
	q = q.slice(p, q.n)
	if !t.faults.CopyingSlices || q.n == 0 {
		return q
	}
	t.copied += int64(q.n)
	return RadixKey{b: &keyBacking{units: q.materialize()}, n: q.n, Extra: q.Extra, Bigram: q.Bigram}
}

// PrefixLen is the length MatchPrefix(k) would return, computed read-only:
// no tick, no stamp, no split, no allocation (docs/spec/radix-acks.md §1.4, designed
// for routers). Concurrent PrefixLen calls are safe.
func (t *RadixTree) PrefixLen(k spec.RadixKey) (int, error) {
	return t.readLen(k, nil, false)
}

// readLen is the read-only walk of PrefixLen and PrefixLenHashed: a child
// is chosen by its first page's units, and its pages are then matched by
// their units, or with hashed by their prefix hashes (§1.14), whose count
// it checks against k's whole pages.
func (t *RadixTree) readLen(k spec.RadixKey, hashes []spec.PrefixHash, hashed bool) (int, error) {
	if t.cfg.Disable {
		return 0, nil
	}
	var qb keyBacking
	q, err := t.queryKey(k, &qb)
	if err != nil {
		return 0, err
	}
	if hashed {
		if err := ref.CheckPrefixHashCount(len(hashes), q.n/t.ps); err != nil {
			return 0, err
		}
	}
	q = q.slice(0, q.n/t.ps*t.ps)
	var buf [pageBuf]spec.Unit
	scratch := t.scratchFor(q, buf[:])
	total := 0
	for n := t.root; q.n > 0; {
		c := t.lookup(n, q, scratch)
		if c == nil {
			break
		}
		var p int
		if hashed {
			p = hashedPages(c, hashes[total/t.ps:], q.n/t.ps) * t.ps
		} else {
			p = matchLen(c.key, q, t.ps)
		}
		total += p
		if p < c.key.n {
			break
		}
		n = c
		q = q.slice(p, q.n)
	}
	return total, nil
}

// Insert stores k → value and returns the number of leading units already
// present (docs/spec/radix-acks.md §1.5). A nil value is simulation mode: the slots
// are k's units before any bigram conversion. Every check (value length,
// token range, alignment) runs before the tree changes, so a failed insert
// changes nothing, the tick included.
func (t *RadixTree) Insert(k spec.RadixKey, value []spec.SlotIdx, priority int) (int, error) {
	if t.cfg.Disable {
		return 0, nil
	}
	sim := value == nil
	if !sim && len(value) != len(k.Units) {
		return 0, ref.ValueLengthError(len(value), len(k.Units))
	}
	var qb keyBacking
	q, err := t.queryKey(k, &qb)
	if err != nil {
		return 0, err
	}
	if !sim {
		value = value[:q.n] // the last token's slot serves no bigram (§2.1)
	}
	if q.n%t.ps != 0 {
		return 0, ref.UnalignedKeyError(q.n, t.ps)
	}
	t.tick++
	if q.n == 0 {
		return 0, nil
	}
	n := t.root
	n.lastAccess = t.tick
	n.priority = max(n.priority, priority)
	var buf [pageBuf]spec.Unit
	scratch := t.scratchFor(q, buf[:])
	total := 0
	for q.n > 0 {
		c := t.lookup(n, q, scratch)
		if c == nil {
			break
		}
		c.lastAccess = t.tick
		p := matchLen(c.key, q, t.ps)
		if p < c.key.n {
			t.touch(c) // the lower half keeps the new access time
			c = t.split(c, p)
		}
		c.priority = max(c.priority, priority)
		t.touch(c)
		total += p
		q = t.rest(q, p)
		if !sim {
			value = value[p:]
		}
		n = c
	}
	if q.n > 0 {
		t.addLeaf(n, q, k.Extra, value, sim, priority)
	}
	return total, nil
}

// addLeaf creates the leaf q → value under parent (§1.5 step 5, store site
// S1): the key is copied into a private backing and the slots copied, so
// nothing aliases the caller's buffers. extra is q's namespace, passed apart
// from q so that q (whose backing lives on Insert's stack) never flows into
// the heap.
func (t *RadixTree) addLeaf(parent *node, q RadixKey, extra spec.ExtraKey, value []spec.SlotIdx, sim bool, priority int) {
	t.gen++
	var key RadixKey
	if t.faults.StoredViews {
		key = RadixKey{b: &keyBacking{units: q.b.units, pairs: q.b.pairs}, off: q.off, n: q.n, Extra: extra, Bigram: q.Bigram}
	} else {
		units := q.materialize()
		t.copied += int64(len(units))
		key = RadixKey{b: &keyBacking{units: units, private: true}, n: len(units), Extra: extra, Bigram: q.Bigram}
	}
	leaf := t.newNode(key, leafValue(q, value, sim))
	leaf.priority = priority
	var h prefixHasher
	leaf.hashes = h.appendChain(make([]spec.PrefixHash, 0, key.n/t.ps), t.chainStart(parent, key), key, t.ps)
	leaf.meta = t.newMeta(parent.meta.StartPage+parent.meta.NumPages, key.n/t.ps)
	t.attach(parent, leaf)
	t.evictable += key.n
	t.updateLeaf(leaf)
	t.updateLeaf(parent)
}

// leafValue copies a new leaf's slots. In simulation mode they are q's
// backing units at its offset, which for a pair view are the pairs' first
// tokens: the token slots before the bigram conversion (§1.5, §2.1).
func leafValue(q RadixKey, value []spec.SlotIdx, sim bool) []spec.SlotIdx {
	v := make([]spec.SlotIdx, q.n)
	if !sim {
		copy(v, value)
		return v
	}
	for i, u := range q.b.units[q.off : q.off+q.n] {
		v[i] = spec.SlotIdx(u)
	}
	return v
}

// newNode mints a node with the next id, stamped with the current tick.
func (t *RadixTree) newNode(key RadixKey, value []spec.SlotIdx) *node {
	n := &node{id: t.nextID, key: key, value: value, lastAccess: t.tick, created: t.tick, leafPos: -1}
	t.nextID++
	t.nodes[n.id] = n
	return n
}

// attach links child under parent by its child key.
func (t *RadixTree) attach(parent, child *node) {
	if parent.children == nil {
		parent.children = make(map[ChildKey]*node, 1)
	}
	ck := child.key
	if t.faults.StoredViews {
		ck, _ = ck.Compact() // the map keeps the key the node was stored under
	}
	parent.children[t.storedChildKey(ck)] = child
	child.parent = parent
	relink(parent)
}

// split cuts c at p (0 < p < len, a page multiple) into a new prefix node m,
// which takes a fresh id and c's place under its parent, and c, which keeps
// its id and becomes m's only child (docs/spec/radix-acks.md §1.6). Both halves are
// compacted (S2); sizes and c's leaf status do not change. A bad p would be
// a bug in the walk (a child is only found when its first page matches, so
// p >= page size), never bad input, so it panics like ref's split.
func (t *RadixTree) split(c *node, p int) *node {
	if p <= 0 || p >= c.key.n || p%t.ps != 0 {
		panic(fmt.Sprintf("radix: split of node %d at %d (len %d) breaks §1.6", c.id, p, c.key.n))
	}
	t.gen++
	parent := c.parent
	delete(parent.children, t.storedChildKey(c.key))
	relink(parent)
	mk, ck := c.key.slice(0, p), c.key.slice(p, c.key.n)
	if !t.faults.StoredViews {
		var n1, n2 int
		mk, n1 = mk.Compact()
		ck, n2 = ck.Compact()
		t.copied += int64(n1 + n2)
	}
	// Each half gets its own slot array (as ref's split does): views of the
	// split node's array would let a one-page prefix pin the whole array
	// of the insert it came from after the rest is evicted, past the
	// pool's memory reservation (prefix/budget.go).
	m := t.newNode(mk, slices.Clone(c.value[:p]))
	m.priority, m.lockRef, m.hitCount = c.priority, c.lockRef, c.hitCount
	c.key, c.value = ck, slices.Clone(c.value[p:])
	m.meta, c.meta = t.splitMeta(c.meta, p/t.ps)
	m.hashes, c.hashes = slices.Clone(c.hashes[:p/t.ps]), slices.Clone(c.hashes[p/t.ps:])
	t.attach(parent, m)
	t.attach(m, c)
	return m
}

// updateLeaf puts x in or takes it out of the evictable-leaf set to match
// its current state.
func (t *RadixTree) updateLeaf(x *node) {
	want := x != t.root && x.lockRef == 0 && len(x.children) == 0
	switch {
	case want && x.leafPos < 0:
		x.leafPos = len(t.leaves)
		t.leaves = append(t.leaves, x)
		t.pushVictim(x)
	case !want && x.leafPos >= 0:
		t.dropLeaf(x)
	}
}

// dropLeaf takes x out of the leaf set by moving the last entry into its
// slot.
func (t *RadixTree) dropLeaf(x *node) {
	last := t.leaves[len(t.leaves)-1]
	t.leaves[x.leafPos], last.leafPos = last, x.leafPos
	t.leaves[len(t.leaves)-1] = nil
	t.leaves = t.leaves[:len(t.leaves)-1]
	x.leafPos = -1
}

// IncLockRef protects the path from node up to (not including) the root and
// returns minus the units newly protected (docs/spec/radix-acks.md §1.7). An id that is
// not a live node is ErrForeignNode.
func (t *RadixTree) IncLockRef(id spec.NodeID) (int, error) {
	x, ok := t.nodes[id]
	if !ok {
		return 0, ref.ForeignNodeError(id)
	}
	if x != t.root {
		x.ownLocks++
	}
	delta := 0
	for y := x; y != t.root; y = y.parent {
		if y.lockRef == 0 {
			t.evictable -= y.key.n
			t.protected += y.key.n
			delta -= y.key.n
		}
		y.lockRef++
		t.updateLeaf(y)
	}
	return delta, nil
}

// DecLockRef releases one lock on the path from node up to the root and
// returns the units newly evictable (docs/spec/radix-acks.md §1.7). Everything is
// checked first, so a rejected unlock changes nothing: a node with lock_ref
// 0 on the path is ErrLockUnderflow, and so is a node whose lock_ref is all
// held by its descendants' locks (ref's tightening that keeps R-LOCKSUM;
// the per-node own-lock count makes it O(1) instead of a sum over children).
func (t *RadixTree) DecLockRef(id spec.NodeID) (int, error) {
	x, ok := t.nodes[id]
	if !ok {
		return 0, ref.ForeignNodeError(id)
	}
	for y := x; y != t.root; y = y.parent {
		if y.lockRef == 0 {
			return 0, ref.LockUnderflowError(id, y.id)
		}
	}
	if x != t.root && x.ownLocks == 0 {
		return 0, ref.NoOwnLockError(id, x.lockRef)
	}
	if x != t.root {
		x.ownLocks--
	}
	delta := 0
	for y := x; y != t.root; y = y.parent {
		if y.lockRef == 1 {
			t.evictable += y.key.n
			t.protected -= y.key.n
			delta += y.key.n
		}
		y.lockRef--
		t.updateLeaf(y)
	}
	return delta, nil
}

// victim is a heap entry: a leaf and its policy order, computed once, with
// the leaf's heap generation when the entry was made.
type victim struct {
	ord [2]int64
	n   *node
	gen uint32
}

// before is the eviction order: ascending policy tuple, then id (§0.2 rule 3).
func (a victim) before(b victim) bool {
	if c := cmp.Compare(a.ord[0], b.ord[0]); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(a.ord[1], b.ord[1]); c != 0 {
		return c < 0
	}
	return a.n.id < b.n.id
}

// Evict frees unlocked leaves in policy order until numTokens units are
// freed or none is left (docs/spec/radix-acks.md §1.8). The heap starts from the
// incrementally kept leaf set; a parent left childless and unlocked joins it.
// The Freed slot lists are handed over, not copied: their nodes are gone.
func (t *RadixTree) Evict(numTokens int) (spec.EvictResult, error) {
	if numTokens < 0 {
		return spec.EvictResult{}, ref.NegativeCountError(numTokens)
	}
	res := spec.EvictResult{Freed: [][]spec.SlotIdx{}, Victims: []spec.NodeID{}}
	if numTokens == 0 || len(t.leaves) == 0 {
		return res, nil
	}
	for res.Evicted < numTokens && len(t.leaves) > 0 {
		x := t.popVictim()
		res.Freed = append(res.Freed, x.value)
		res.Victims = append(res.Victims, x.id)
		res.Evicted += len(x.value)
		t.evictable -= x.key.n
		t.deleteLeaf(x)
	}
	return res, nil
}

// touch gives x a fresh heap entry after its policy order changed, when it
// is an evictable leaf; the entry it had goes stale.
func (t *RadixTree) touch(x *node) {
	if x.leafPos >= 0 {
		t.pushVictim(x)
	}
}

// pushVictim adds x's current entry to the heap, first rebuilding the heap
// from the leaf set when stale entries outnumber live ones, so the heap
// stays within twice the leaf count (plus a constant).
func (t *RadixTree) pushVictim(x *node) {
	if len(t.heap) >= 2*len(t.leaves)+64 {
		t.compactHeap()
	}
	x.heapGen++
	t.heap.push(t.victimOf(x))
}

// compactHeap rebuilds the heap with one fresh entry per evictable leaf.
func (t *RadixTree) compactHeap() {
	clear(t.heap)
	t.heap = t.heap[:0]
	for _, x := range t.leaves {
		x.heapGen++
		t.heap = append(t.heap, t.victimOf(x))
	}
	t.heap.init()
}

// popVictim removes and returns the first evictable leaf in eviction
// order, skipping stale entries. The leaf set must be non-empty: every
// leaf has a live entry.
func (t *RadixTree) popVictim() *node {
	for {
		v := t.heap.pop()
		if v.gen == v.n.heapGen && v.n.leafPos >= 0 {
			return v.n
		}
	}
}

// victimOf is x's heap entry under the tree's policy.
func (t *RadixTree) victimOf(x *node) victim {
	ord := ref.EvictOrder(t.cfg.Policy, x.lastAccess, x.created, x.hitCount, x.priority)
	if k := t.faults.EvictKeyDropped; k == 1 || k == 2 {
		ord[k-1] = 0
	}
	return victim{ord: ord, n: x, gen: x.heapGen}
}

// deleteLeaf unlinks the evictable leaf x and returns its parent, whose leaf
// status is brought up to date. Stale heap entries may point at x until
// they are popped, so x lets go of its key and slots (the caller has taken
// the slots).
func (t *RadixTree) deleteLeaf(x *node) *node {
	t.gen++
	t.dropLeaf(x)
	parent := x.parent
	delete(parent.children, t.storedChildKey(x.key))
	relink(parent)
	delete(t.nodes, x.id)
	x.parent, x.key, x.value, x.hashes = nil, RadixKey{}, nil, nil
	t.updateLeaf(parent)
	return parent
}

// victimHeap is a binary min-heap in eviction order.
type victimHeap []victim

func (h victimHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *victimHeap) push(v victim) {
	*h = append(*h, v)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s[i].before(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *victimHeap) pop() victim {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s[last] = victim{}
	*h = s[:last]
	h.down(0)
	return top
}

func (h victimHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		c := l
		if r := l + 1; r < len(h) && h[r].before(h[l]) {
			c = r
		}
		if !h[c].before(h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// State returns the observable state (docs/spec/radix-acks.md §1.9 P5): every node in
// ascending id with copies of its key and value.
func (t *RadixTree) State() spec.TreeState {
	ids := make([]spec.NodeID, 0, len(t.nodes))
	for id := range t.nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	nodes := make([]spec.NodeState, len(ids))
	for i, id := range ids {
		nodes[i] = t.nodeState(t.nodes[id])
	}
	return spec.TreeState{
		Config: t.cfg, Tick: t.tick, NextID: t.nextID,
		EvictableSize: t.evictable, ProtectedSize: t.protected, CopiedUnits: t.copied,
		OwnerCountRecomputations: t.recounts, MetaMisses: t.metaMisses, LoadRefusals: t.loadRefusals, Nodes: nodes,
	}
}

// nodeState is the observable state of one node.
func (t *RadixTree) nodeState(n *node) spec.NodeState {
	parent := spec.NodeID(-1)
	if n.parent != nil {
		parent = n.parent.id
	}
	return spec.NodeState{
		ID: n.id, Parent: parent, Key: n.key.Units(), Extra: n.key.Extra,
		Value: append([]spec.SlotIdx{}, n.value...), LockRef: n.lockRef,
		LastAccess: n.lastAccess, Created: n.created, HitCount: n.hitCount, Priority: n.priority,
		CP: t.nodeCP(n), PrefixHashes: slices.Clone(n.hashes),
	}
}
