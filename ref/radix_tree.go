package ref

import (
	"cmp"
	"container/heap"
	"fmt"
	"slices"

	"github.com/kvtwin/kvtwin/spec"
)

// radixNode is a node of the reference tree (docs/spec/radix-acks.md §1.2). Its key is
// a plain copy: the pre-fix behaviour, obviously correct and slow.
type radixNode struct {
	id         spec.NodeID
	parent     *radixNode
	children   map[radixChildKey]*radixNode
	key        spec.RadixKey
	value      []spec.SlotIdx
	lockRef    int
	lastAccess uint64
	created    uint64
	hitCount   int
	priority   int
}

// radixChildKey selects a child: the namespace and the first page's units
// (docs/spec/radix-acks.md §1.3). The page is rendered as text, which is exact.
type radixChildKey struct {
	extra spec.ExtraKey
	page  string
}

// refRadixTree is the reference radix tree (docs/spec/radix-acks.md §1): copying key
// slices, node lookup and leaf collection by full walks. It is not safe for
// concurrent use.
type refRadixTree struct {
	cfg           spec.TreeConfig
	root          *radixNode
	nextID        spec.NodeID
	tick          uint64
	evictableSize int
	protectedSize int
	copiedUnits   int64
	// owner maps pages to CP ranks (§4.1).
	owner spec.OwnerFn
	// metaMisses and loadRefusals are the §4.4–§4.5 counters; the
	// reference never recomputes counts it could read, so its
	// owner_count_recomputations is always 0 (the contract).
	metaMisses, loadRefusals int64
}

var _ spec.RadixTree = (*refRadixTree)(nil)

// NewRadixTree returns an empty reference tree: the root has id 0, lock_ref
// 1 forever and an empty key (docs/spec/radix-acks.md §0.2 rule 1). It rejects an
// invalid config (TreeConfig.Validate). CP owners are round-robin.
func NewRadixTree(cfg spec.TreeConfig) (spec.RadixTree, error) {
	return NewRadixTreeOwned(cfg, RoundRobin{})
}

// NewRadixTreeOwned is NewRadixTree with the page → owner rule owner
// (docs/spec/radix-acks.md §4.1, §6 item 1).
func NewRadixTreeOwned(cfg spec.TreeConfig, owner spec.OwnerFn) (spec.RadixTree, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	root := &radixNode{id: 0, lockRef: 1, children: map[radixChildKey]*radixNode{}, value: []spec.SlotIdx{}}
	return &refRadixTree{cfg: cfg, root: root, nextID: 1, owner: owner}, nil
}

// Config implements RadixTree.
func (t *refRadixTree) Config() spec.TreeConfig { return t.cfg }

// EvictableSize implements RadixTree.
func (t *refRadixTree) EvictableSize() int { return t.evictableSize }

// ProtectedSize implements RadixTree.
func (t *refRadixTree) ProtectedSize() int { return t.protectedSize }

// TotalSize implements RadixTree: the sum of every non-root key length.
func (t *refRadixTree) TotalSize() int {
	total := 0
	for _, n := range t.walk() {
		total += len(n.key.Units)
	}
	return total
}

// copyKey is the pre-fix slice: a fresh copy of units [i, j).
func copyKey(k spec.RadixKey, i, j int) spec.RadixKey {
	return spec.RadixKey{Units: append([]spec.Unit{}, k.Units[i:j]...), Extra: k.Extra, Bigram: k.Bigram}
}

func (t *refRadixTree) childKey(k spec.RadixKey) radixChildKey {
	return radixChildKey{extra: k.Extra, page: fmt.Sprint(k.Units[:t.cfg.PageSize])}
}

// MatchLen is the key match of docs/spec/radix-acks.md §1.3: the length of the common
// prefix of a and b counted in whole pages of ps units (ps = 1: the longest
// common prefix). Only whole pages count, so unaligned keys never match
// past their last whole page (the §1.1 erratum; old upstream compared
// partial tails). Keys in different namespaces are ErrExtraKeyMismatch.
func MatchLen(a, b spec.RadixKey, ps int) (int, error) {
	if a.Extra != b.Extra {
		return 0, spec.Reject(spec.ErrExtraKeyMismatch, "extra", b.Extra, fmt.Sprintf("== %+v", a.Extra))
	}
	n := min(len(a.Units), len(b.Units))
	i := 0
	for i+ps <= n && slices.Equal(a.Units[i:i+ps], b.Units[i:i+ps]) {
		i += ps
	}
	return i, nil
}

// treeKey converts a query or insert key to the tree's unit kind: bigrams in
// Eagle mode (docs/spec/radix-acks.md §1.4 step 1).
func (t *refRadixTree) treeKey(k spec.RadixKey) (spec.RadixKey, error) {
	if t.cfg.Eagle && !k.Bigram {
		return ToBigram(k)
	}
	return k, nil
}

// MatchPrefix implements RadixTree (docs/spec/radix-acks.md §1.4).
func (t *refRadixTree) MatchPrefix(k spec.RadixKey) (spec.MatchResult, error) {
	empty := spec.MatchResult{Indices: []spec.SlotIdx{}, LastNode: t.root.id}
	if t.cfg.Disable {
		return empty, nil
	}
	k, err := t.treeKey(k)
	if err != nil {
		return spec.MatchResult{}, err
	}
	t.tick++
	ps := t.cfg.PageSize
	if len(k.Units) == 0 {
		return empty, nil
	}
	k = copyKey(k, 0, len(k.Units)/ps*ps)
	if len(k.Units) == 0 {
		return empty, nil
	}
	node, vals := t.root, []spec.SlotIdx{}
	node.lastAccess = t.tick
	for len(k.Units) > 0 {
		c := node.children[t.childKey(k)]
		if c == nil {
			break
		}
		c.lastAccess = t.tick
		p, _ := MatchLen(c.key, k, ps)
		if p < len(c.key.Units) {
			m := t.split(c, p)
			vals = append(vals, m.value...)
			node = m
			break
		}
		vals = append(vals, c.value...)
		node = c
		k = copyKey(k, p, len(k.Units))
	}
	return spec.MatchResult{Indices: vals, LastNode: node.id}, nil
}

// PrefixLen implements RadixTree: MatchPrefix's length without any change
// to the tree.
func (t *refRadixTree) PrefixLen(k spec.RadixKey) (int, error) {
	return t.readLen(k, nil, false)
}

// readLen is the read-only walk of PrefixLen and PrefixLenHashed: a child
// is chosen by its first page's units, and its pages are then matched by
// their units (MatchLen), or with hashed by their prefix hashes recomputed
// from the stored path (§1.14), whose count it checks first.
func (t *refRadixTree) readLen(k spec.RadixKey, hashes []spec.PrefixHash, hashed bool) (int, error) {
	if t.cfg.Disable {
		return 0, nil
	}
	k, err := t.treeKey(k)
	if err != nil {
		return 0, err
	}
	ps := t.cfg.PageSize
	if hashed {
		if err := CheckPrefixHashCount(len(hashes), len(k.Units)/ps); err != nil {
			return 0, err
		}
	}
	k = copyKey(k, 0, len(k.Units)/ps*ps)
	node, total := t.root, 0
	for len(k.Units) > 0 {
		c := node.children[t.childKey(k)]
		if c == nil {
			break
		}
		var p int
		if hashed {
			p = t.hashedLen(c, hashes[total/ps:], len(k.Units))
		} else {
			p, _ = MatchLen(c.key, k, ps)
		}
		total += p
		if p < len(c.key.Units) {
			break
		}
		node = c
		k = copyKey(k, p, len(k.Units))
	}
	return total, nil
}

// hashedLen is how many units of c match a query of n units left whose
// chain from c's depth on is qh: the first page (the child key chose c by
// it), then each page whose stored prefix hash, recomputed, agrees.
func (t *refRadixTree) hashedLen(c *radixNode, qh []spec.PrefixHash, n int) int {
	ps := t.cfg.PageSize
	stored := t.nodeHashes(c)
	p := ps
	for p < len(c.key.Units) && p < n && stored[p/ps] == qh[p/ps] {
		p += ps
	}
	return p
}

// PrefixHashes implements RadixTree (docs/spec/radix-acks.md §1.14).
func (t *refRadixTree) PrefixHashes(k spec.RadixKey) ([]spec.PrefixHash, error) {
	k, err := t.treeKey(k)
	if err != nil {
		return nil, err
	}
	return PrefixHashes(k, t.cfg.PageSize), nil
}

// PrefixLenHashed implements RadixTree (docs/spec/radix-acks.md §1.14): the
// walk of PrefixLen, where a child is still chosen by its first page's
// units but the pages after it match when the node's prefix hash, computed
// afresh from the stored path, equals the query's.
func (t *refRadixTree) PrefixLenHashed(k spec.RadixKey, hashes []spec.PrefixHash) (int, error) {
	return t.readLen(k, hashes, true)
}

// nodeHashes recomputes n's prefix hashes from the root: the chain over
// the concatenated keys of its path, of which n's pages are the last.
func (t *refRadixTree) nodeHashes(n *radixNode) []spec.PrefixHash {
	if n == t.root {
		return nil
	}
	var path []*radixNode
	for y := n; y != t.root; y = y.parent {
		path = append(path, y)
	}
	full := spec.RadixKey{Extra: n.key.Extra, Bigram: n.key.Bigram}
	for i := len(path) - 1; i >= 0; i-- {
		full.Units = append(full.Units, path[i].key.Units...)
	}
	all := PrefixHashes(full, t.cfg.PageSize)
	return all[len(all)-len(n.key.Units)/t.cfg.PageSize:]
}

// split divides c at p (0 < p < len(c.key), a page multiple): a new parent m
// with a fresh id takes the first p units; c keeps its id and the rest
// (docs/spec/radix-acks.md §1.6). Sizes do not change.
func (t *refRadixTree) split(c *radixNode, p int) *radixNode {
	if p <= 0 || p >= len(c.key.Units) || p%t.cfg.PageSize != 0 {
		panic(fmt.Sprintf("radix: split of node %d at %d (len %d) breaks §1.6", c.id, p, len(c.key.Units)))
	}
	m := &radixNode{
		id: t.nextID, parent: c.parent, children: map[radixChildKey]*radixNode{},
		priority: c.priority, lockRef: c.lockRef, hitCount: c.hitCount,
		lastAccess: t.tick, created: t.tick,
	}
	t.nextID++
	t.copiedUnits += int64(len(c.key.Units))
	m.key, c.key = copyKey(c.key, 0, p), copyKey(c.key, p, len(c.key.Units))
	m.value, c.value = append([]spec.SlotIdx{}, c.value[:p]...), append([]spec.SlotIdx{}, c.value[p:]...)
	m.parent.children[t.childKey(m.key)] = m
	m.children[t.childKey(c.key)] = c
	c.parent = m
	return m
}

// Insert implements RadixTree (docs/spec/radix-acks.md §1.5). Every check runs before
// the tick advances, so a rejected insert changes nothing; the value length
// is checked against the key as given, before a bigram conversion shortens
// both (a designed tightening: upstream truncates the value silently).
func (t *refRadixTree) Insert(k spec.RadixKey, value []spec.SlotIdx, priority int) (int, error) {
	if t.cfg.Disable {
		return 0, nil
	}
	if value == nil {
		value = make([]spec.SlotIdx, len(k.Units))
		for i, u := range k.Units {
			value[i] = spec.SlotIdx(u)
		}
	} else if len(value) != len(k.Units) {
		return 0, ValueLengthError(len(value), len(k.Units))
	}
	k, err := t.treeKey(k)
	if err != nil {
		return 0, err
	}
	value = value[:len(k.Units)]
	ps := t.cfg.PageSize
	if len(k.Units)%ps != 0 {
		return 0, UnalignedKeyError(len(k.Units), ps)
	}
	t.tick++
	if len(k.Units) == 0 {
		return 0, nil
	}
	node, total := t.root, 0
	node.lastAccess = t.tick
	node.priority = max(node.priority, priority)
	k = copyKey(k, 0, len(k.Units))
	for len(k.Units) > 0 {
		c := node.children[t.childKey(k)]
		if c == nil {
			break
		}
		node = c
		node.lastAccess = t.tick
		p, _ := MatchLen(node.key, k, ps)
		if p < len(node.key.Units) {
			node = t.split(node, p)
		}
		node.priority = max(node.priority, priority)
		total += p
		k, value = copyKey(k, p, len(k.Units)), value[p:]
	}
	if len(k.Units) > 0 {
		leaf := &radixNode{
			id: t.nextID, parent: node, children: map[radixChildKey]*radixNode{},
			key: k, value: append([]spec.SlotIdx{}, value...), priority: priority,
			lastAccess: t.tick, created: t.tick,
		}
		t.nextID++
		t.copiedUnits += int64(len(k.Units))
		node.children[t.childKey(k)] = leaf
		t.evictableSize += len(k.Units)
	}
	return total, nil
}

// walk returns every non-root node, in ascending id.
func (t *refRadixTree) walk() []*radixNode {
	var out []*radixNode
	var visit func(*radixNode)
	visit = func(n *radixNode) {
		for _, c := range n.children {
			out = append(out, c)
			visit(c)
		}
	}
	visit(t.root)
	slices.SortFunc(out, func(a, b *radixNode) int { return cmp.Compare(a.id, b.id) })
	return out
}

// find returns the live node with the given id, or ErrForeignNode.
func (t *refRadixTree) find(id spec.NodeID) (*radixNode, error) {
	if id == t.root.id {
		return t.root, nil
	}
	for _, n := range t.walk() {
		if n.id == id {
			return n, nil
		}
	}
	return nil, ForeignNodeError(id)
}

// IncLockRef implements RadixTree (docs/spec/radix-acks.md §1.7).
func (t *refRadixTree) IncLockRef(id spec.NodeID) (int, error) {
	x, err := t.find(id)
	if err != nil {
		return 0, err
	}
	delta := 0
	for y := x; y != t.root; y = y.parent {
		if y.lockRef == 0 {
			t.evictableSize -= len(y.key.Units)
			t.protectedSize += len(y.key.Units)
			delta -= len(y.key.Units)
		}
		y.lockRef++
	}
	return delta, nil
}

// DecLockRef implements RadixTree (docs/spec/radix-acks.md §1.7): the whole path is
// checked before anything changes, so an underflow is atomic. An unlock must
// also release a lock taken on this very node, not one its descendants
// hold: otherwise R-LOCKSUM breaks (a designed tightening; upstream lets an
// ancestor be unlocked from under a locked descendant).
func (t *refRadixTree) DecLockRef(id spec.NodeID) (int, error) {
	x, err := t.find(id)
	if err != nil {
		return 0, err
	}
	for y := x; y != t.root; y = y.parent {
		if y.lockRef == 0 {
			return 0, LockUnderflowError(id, y.id)
		}
	}
	if x != t.root {
		held := 0
		for _, c := range x.children {
			held += c.lockRef
		}
		if x.lockRef <= held {
			return 0, NoOwnLockError(id, x.lockRef)
		}
	}
	delta := 0
	for y := x; y != t.root; y = y.parent {
		if y.lockRef == 1 {
			t.protectedSize -= len(y.key.Units)
			t.evictableSize += len(y.key.Units)
			delta += len(y.key.Units)
		}
		y.lockRef--
	}
	return delta, nil
}

// evictable reports whether n is an evictable leaf (docs/spec/radix-acks.md §1.8).
func (t *refRadixTree) evictable(n *radixNode) bool {
	return n != t.root && n.lockRef == 0 && len(n.children) == 0
}

// leafHeap orders evictable leaves by the policy tuple, then id.
type leafHeap struct {
	policy spec.EvictPolicy
	nodes  []*radixNode
}

func (h *leafHeap) Len() int { return len(h.nodes) }
func (h *leafHeap) Less(i, j int) bool {
	a, b := h.nodes[i], h.nodes[j]
	ka := EvictOrder(h.policy, a.lastAccess, a.created, a.hitCount, a.priority)
	kb := EvictOrder(h.policy, b.lastAccess, b.created, b.hitCount, b.priority)
	if ka != kb {
		return ka[0] < kb[0] || (ka[0] == kb[0] && ka[1] < kb[1])
	}
	return a.id < b.id
}
func (h *leafHeap) Swap(i, j int) { h.nodes[i], h.nodes[j] = h.nodes[j], h.nodes[i] }
func (h *leafHeap) Push(x any)    { h.nodes = append(h.nodes, x.(*radixNode)) }
func (h *leafHeap) Pop() any {
	n := h.nodes[len(h.nodes)-1]
	h.nodes = h.nodes[:len(h.nodes)-1]
	return n
}

// Evict implements RadixTree (docs/spec/radix-acks.md §1.8): the evictable leaves are
// collected by a full walk, then popped in policy order; a parent that
// becomes an evictable leaf joins the heap.
func (t *refRadixTree) Evict(numTokens int) (spec.EvictResult, error) {
	if numTokens < 0 {
		return spec.EvictResult{}, NegativeCountError(numTokens)
	}
	res := spec.EvictResult{Freed: [][]spec.SlotIdx{}, Victims: []spec.NodeID{}}
	h := &leafHeap{policy: t.cfg.Policy}
	for _, n := range t.walk() {
		if t.evictable(n) {
			h.nodes = append(h.nodes, n)
		}
	}
	heap.Init(h)
	for res.Evicted < numTokens && h.Len() > 0 {
		x := heap.Pop(h).(*radixNode)
		res.Freed = append(res.Freed, append([]spec.SlotIdx{}, x.value...))
		res.Victims = append(res.Victims, x.id)
		res.Evicted += len(x.value)
		t.evictableSize -= len(x.key.Units)
		delete(x.parent.children, t.childKey(x.key))
		if p := x.parent; t.evictable(p) {
			heap.Push(h, p)
		}
	}
	return res, nil
}

// State implements RadixTree.
func (t *refRadixTree) State() spec.TreeState {
	nodes := append([]*radixNode{t.root}, t.walk()...)
	st := spec.TreeState{Config: t.cfg, Tick: t.tick, NextID: t.nextID,
		EvictableSize: t.evictableSize, ProtectedSize: t.protectedSize, CopiedUnits: t.copiedUnits,
		MetaMisses: t.metaMisses, LoadRefusals: t.loadRefusals, Nodes: make([]spec.NodeState, len(nodes))}
	for i, n := range nodes {
		parent := spec.NodeID(-1)
		if n.parent != nil {
			parent = n.parent.id
		}
		st.Nodes[i] = spec.NodeState{ID: n.id, Parent: parent, Key: append([]spec.Unit{}, n.key.Units...),
			Extra: n.key.Extra, Value: append([]spec.SlotIdx{}, n.value...), LockRef: n.lockRef,
			LastAccess: n.lastAccess, Created: n.created, HitCount: n.hitCount, Priority: n.priority,
			CP: t.nodeCP(n), PrefixHashes: t.nodeHashes(n)}
	}
	return st
}

// tokenDepth is the sum of n's ancestors' key lengths (docs/spec/radix-acks.md §4.1).
func (t *refRadixTree) tokenDepth(n *radixNode) int {
	d := 0
	for y := n.parent; y != nil; y = y.parent {
		d += len(y.key.Units)
	}
	return d
}

// nodeCP derives n's owner metadata the old way: its pages enumerated from
// its token depth (docs/spec/radix-acks.md §4.3); nil with CP off.
func (t *refRadixTree) nodeCP(n *radixNode) *spec.NodeCP {
	sizes := t.cfg.CPSizes()
	if len(sizes) == 0 {
		return nil
	}
	ps, d := t.cfg.PageSize, t.tokenDepth(n)
	cp := &spec.NodeCP{StartPage: d / ps, NumPages: len(n.key.Units) / ps,
		PageOwners: pageOwnersOf(t.owner, d/ps, len(n.key.Units)/ps, sizes[0])}
	for _, size := range sizes {
		cp.OwnerCounts = append(cp.OwnerCounts, spec.CPCounts{CPSize: size, Counts: EnumerateOwnerCounts(t.owner, d, len(n.key.Units), ps, size)})
	}
	return cp
}

// EvictOwnerLanes implements RadixTree (docs/spec/radix-acks.md §4.4) as the spec
// reads, with the plain-tree leaf definition of §1.8 (the tree keeps no
// host backups, so every leaf is resident and a victim is deleted). Each
// scanned leaf's counts are recounted from its tokens — the old path, O(n)
// per leaf — and a leaf whose size has no metadata in the fixed tree
// counts a miss, as the fast tree must.
func (t *refRadixTree) EvictOwnerLanes(req spec.OwnerPlanRequest) (spec.OwnerPlan, error) {
	n, err := CheckOwnerPlan(req, t.cfg.CPSize)
	if err != nil {
		return spec.OwnerPlan{}, err
	}
	load, err := t.find(req.Locked)
	if err != nil {
		return spec.OwnerPlan{}, err
	}
	deficit := PlanDeficit(req.Need, req.Free)
	plan := spec.OwnerPlan{CPSize: n, Deficit: slices.Clone(deficit), Victims: []spec.NodeID{}, Freed: [][]spec.SlotIdx{}}
	onPath := map[*radixNode]bool{}
	for y := load; y != nil; y = y.parent {
		onPath[y] = true
	}
	victims := t.planVictims(n, deficit, onPath)
	for _, v := range victims {
		plan.Victims = append(plan.Victims, v.id)
	}
	plan.Remaining = deficit
	plan.Admitted = !slices.ContainsFunc(deficit, func(d int) bool { return d > 0 })
	switch {
	case req.DryRun:
	case !plan.Admitted:
		t.loadRefusals++
	default:
		for _, v := range victims {
			plan.Freed = append(plan.Freed, append([]spec.SlotIdx{}, v.value...))
			plan.Evicted += len(v.value)
			t.evictableSize -= len(v.key.Units)
			delete(v.parent.children, t.childKey(v.key))
		}
	}
	return plan, nil
}

// planVictims is steps 2–4 of §4.4: pop evictable leaves (not on the load
// path) in policy order while a lane is short; skip a leaf that frees
// nothing a short lane needs; take the others, lowering the deficit in
// place, and push a parent whose children have all been taken.
func (t *refRadixTree) planVictims(n int, deficit []int, onPath map[*radixNode]bool) []*radixNode {
	short := func() bool { return slices.ContainsFunc(deficit, func(d int) bool { return d > 0 }) }
	if !short() {
		return nil
	}
	h := &leafHeap{policy: t.cfg.Policy}
	for _, x := range t.walk() {
		if t.evictable(x) && !onPath[x] {
			h.nodes = append(h.nodes, x)
		}
	}
	heap.Init(h)
	taken := map[*radixNode]int{}
	var victims []*radixNode
	for short() && h.Len() > 0 {
		x := heap.Pop(h).(*radixNode)
		c := t.leafCounts(x, n)
		useful := 0
		for r := range deficit {
			useful += min(deficit[r], int(c[r]))
		}
		if useful == 0 {
			continue
		}
		victims = append(victims, x)
		for r := range deficit {
			deficit[r] = max(0, deficit[r]-int(c[r]))
		}
		p := x.parent
		taken[p]++
		if p != t.root && !onPath[p] && p.lockRef == 0 && taken[p] == len(p.children) {
			heap.Push(h, p)
		}
	}
	return victims
}

// leafCounts recounts x's owner counts under N = n from its tokens; a size
// the tree keeps no metadata for is a metadata miss (§4.5).
func (t *refRadixTree) leafCounts(x *radixNode, n int) []int32 {
	if !slices.Contains(t.cfg.CPSizes(), n) {
		t.metaMisses++
	}
	return EnumerateOwnerCounts(t.owner, t.tokenDepth(x), len(x.key.Units), t.cfg.PageSize, n)
}

// CheckTreeState checks the invariants of docs/spec/radix-acks.md §1.7 and §1.9 P2
// that the observable state determines: node keys are positive whole pages
// with one slot per unit, parents exist (a split mints the parent, so a
// parent may have the larger id) and share the child's namespace, siblings have distinct child keys, R-EVICT, R-PROT, R-LOCKSUM (a node's
// lock_ref is at least the sum of its children's) and R-TOTAL, and the
// clock bounds every stamp. R-COMPACT is about representation, so the fast
// tree checks it itself.
func CheckTreeState(st spec.TreeState) error {
	if len(st.Nodes) == 0 || st.Nodes[0].ID != 0 || st.Nodes[0].Parent != -1 || st.Nodes[0].LockRef != 1 {
		return fmt.Errorf("radix: the root must come first with id 0, no parent and lock_ref 1")
	}
	ps := st.Config.PageSize
	byID := map[spec.NodeID]spec.NodeState{}
	childLocks := map[spec.NodeID]int{}
	siblings := map[string]bool{}
	evictable, protected := 0, 0
	for i, n := range st.Nodes {
		if n.LastAccess > st.Tick || n.Created > n.LastAccess && n.ID != 0 || n.ID >= st.NextID {
			return fmt.Errorf("radix: node %d: stamps (%d, %d) or id beyond tick %d / next id %d", n.ID, n.Created, n.LastAccess, st.Tick, st.NextID)
		}
		if i > 0 && n.ID <= st.Nodes[i-1].ID {
			return fmt.Errorf("radix: nodes out of id order at %d", n.ID)
		}
		byID[n.ID] = n
		if i == 0 {
			continue
		}
		if len(n.Key) == 0 || len(n.Key)%ps != 0 || len(n.Value) != len(n.Key) {
			return fmt.Errorf("radix: node %d: key length %d (page size %d), value length %d", n.ID, len(n.Key), ps, len(n.Value))
		}
		ck := fmt.Sprint(n.Parent, n.Extra, n.Key[:ps])
		if siblings[ck] {
			return fmt.Errorf("radix: node %d shares its child key under parent %d", n.ID, n.Parent)
		}
		siblings[ck] = true
		childLocks[n.Parent] += n.LockRef
		if n.LockRef > 0 {
			protected += len(n.Key)
		} else if n.LockRef == 0 {
			evictable += len(n.Key)
		} else {
			return fmt.Errorf("radix: node %d: lock_ref %d < 0", n.ID, n.LockRef)
		}
	}
	for _, n := range st.Nodes[1:] {
		p, ok := byID[n.Parent]
		if !ok {
			return fmt.Errorf("radix: node %d: parent %d is not in the tree", n.ID, n.Parent)
		}
		if p.ID != 0 && p.Extra != n.Extra {
			return fmt.Errorf("radix: node %d: namespace differs from its parent %d", n.ID, p.ID)
		}
	}
	for id, locks := range childLocks {
		if n := byID[id]; id != 0 && n.LockRef < locks {
			return fmt.Errorf("radix: R-LOCKSUM: node %d has lock_ref %d < its children's %d", id, n.LockRef, locks)
		}
	}
	if evictable != st.EvictableSize || protected != st.ProtectedSize {
		return fmt.Errorf("radix: R-EVICT/R-PROT: sizes (%d, %d), nodes hold (%d, %d)", st.EvictableSize, st.ProtectedSize, evictable, protected)
	}
	return nil
}
