package fast

import (
	"errors"
	"fmt"
	"slices"
	"unsafe"

	"github.com/kvtwin/kvtwin/spec"
)

// CheckInvariants walks the whole tree and reports the first broken
// invariant of docs/spec/radix-acks.md §1.9 P2: R-COMPACT (every non-root key views
// the whole of its own private backing, and no two nodes share one — by
// backing and by memory), the child-map entries (k == ChildKey(c.Key) and
// c.Parent == owner), positive page-multiple key lengths, len(Value) ==
// len(Key), the lock and size accounting (R-LOCKSUM with the own-lock
// counts, R-EVICT, R-PROT; R-TOTAL holds by construction), the id
// index, the CP owner metadata (docs/spec/radix-acks.md §4.2), that the incremental evictable-leaf set equals the full-walk
// set, and that the persistent eviction heap holds one live entry per leaf. It is for tests; a nil result means the tree is sound.
func (t *RadixTree) CheckInvariants() error {
	w := checkWalk{t: t, backings: map[*keyBacking]spec.NodeID{}, memory: map[*spec.Unit]spec.NodeID{}}
	if err := w.node(t.root); err != nil {
		return err
	}
	if t.root.lockRef != 1 || t.root.key.n != 0 || len(t.root.value) != 0 || t.root.parent != nil {
		return errors.New("root: want lock_ref 1, empty key and value, no parent")
	}
	if w.seen != len(t.nodes) {
		return fmt.Errorf("id index holds %d nodes, the tree %d", len(t.nodes), w.seen)
	}
	if w.evictable != t.evictable || w.protected != t.protected {
		return fmt.Errorf("sizes: evictable %d protected %d, walk gives %d and %d (R-EVICT/R-PROT)", t.evictable, t.protected, w.evictable, w.protected)
	}
	return t.checkLeafSet(w.leaves)
}

// checkLeafSet compares the incremental leaf set with the walk's.
func (t *RadixTree) checkLeafSet(walk []spec.NodeID) error {
	set := make([]spec.NodeID, len(t.leaves))
	for i, x := range t.leaves {
		if x.leafPos != i {
			return fmt.Errorf("leaf set: node %d at %d records position %d", x.id, i, x.leafPos)
		}
		set[i] = x.id
	}
	slices.Sort(set)
	slices.Sort(walk)
	if !slices.Equal(set, walk) {
		return fmt.Errorf("leaf set %v, full walk gives %v", set, walk)
	}
	return t.checkHeap()
}

// checkHeap checks the persistent eviction heap: the heap order holds,
// every evictable leaf has exactly one live entry and it carries the leaf's
// current policy order, and stale entries stay within the compaction bound.
func (t *RadixTree) checkHeap() error {
	live := map[*node]int{}
	for i, v := range t.heap {
		if p := (i - 1) / 2; i > 0 && v.before(t.heap[p]) {
			return fmt.Errorf("eviction heap: entry %d (node %d) sorts before its parent", i, v.n.id)
		}
		if v.gen != v.n.heapGen || v.n.leafPos < 0 {
			continue
		}
		live[v.n]++
		if want := t.victimOf(v.n).ord; v.ord != want {
			return fmt.Errorf("eviction heap: node %d has order %v, its fields give %v", v.n.id, v.ord, want)
		}
	}
	for _, x := range t.leaves {
		if live[x] != 1 {
			return fmt.Errorf("eviction heap: leaf %d has %d live entries, want 1", x.id, live[x])
		}
	}
	if len(t.heap) > 2*len(t.leaves)+65 {
		return fmt.Errorf("eviction heap: %d entries for %d leaves, over the compaction bound", len(t.heap), len(t.leaves))
	}
	return nil
}

// checkWalk accumulates what the full walk sees.
type checkWalk struct {
	t                    *RadixTree
	backings             map[*keyBacking]spec.NodeID
	memory               map[*spec.Unit]spec.NodeID
	seen                 int
	evictable, protected int
	leaves               []spec.NodeID
}

// node checks x and its subtree.
func (w *checkWalk) node(x *node) error {
	w.seen++
	if w.t.nodes[x.id] != x {
		return fmt.Errorf("node %d: not in the id index", x.id)
	}
	if x != w.t.root {
		if err := w.stored(x); err != nil {
			return err
		}
	}
	if err := w.t.checkMeta(x); err != nil {
		return err
	}
	if (len(x.children) == 1) != (x.only != nil) || x.only != nil && x.children[w.t.storedChildKey(x.only.key)] != x.only {
		return fmt.Errorf("node %d: the only-child link disagrees with its %d children", x.id, len(x.children))
	}
	held := 0
	for k, c := range x.children {
		if c.parent != x {
			return fmt.Errorf("node %d: child %d has another parent", x.id, c.id)
		}
		if c.key.n < w.t.ps || k != w.t.storedChildKey(c.key) {
			return fmt.Errorf("node %d: child entry does not equal ChildKey of node %d", x.id, c.id)
		}
		if err := w.node(c); err != nil {
			return err
		}
		held += c.lockRef
	}
	if x != w.t.root && (x.ownLocks < 0 || x.lockRef != x.ownLocks+held) {
		return fmt.Errorf("node %d: lock_ref %d != own locks %d + children's %d (R-LOCKSUM)", x.id, x.lockRef, x.ownLocks, held)
	}
	return nil
}

// stored checks one non-root node's key, value, accounting and leaf status.
func (w *checkWalk) stored(x *node) error {
	k := x.key
	if !k.IsCompact() {
		return fmt.Errorf("node %d: key is not compact (R-COMPACT)", x.id)
	}
	if other, dup := w.backings[k.b]; dup {
		return fmt.Errorf("nodes %d and %d share a key backing (R-COMPACT)", other, x.id)
	}
	w.backings[k.b] = x.id
	if k.n > 0 {
		if other, dup := w.memory[unsafe.SliceData(k.b.units)]; dup {
			return fmt.Errorf("nodes %d and %d share key memory (R-COMPACT)", other, x.id)
		}
		w.memory[unsafe.SliceData(k.b.units)] = x.id
	}
	if k.n == 0 || k.n%w.t.ps != 0 {
		return fmt.Errorf("node %d: key length %d is not a positive multiple of page_size %d", x.id, k.n, w.t.ps)
	}
	if len(x.value) != k.n {
		return fmt.Errorf("node %d: %d slots for %d key units", x.id, len(x.value), k.n)
	}
	if x.lockRef < 0 {
		return fmt.Errorf("node %d: negative lock_ref %d", x.id, x.lockRef)
	}
	if x.lockRef == 0 {
		w.evictable += k.n
		if len(x.children) == 0 {
			w.leaves = append(w.leaves, x.id)
		}
	} else {
		w.protected += k.n
	}
	return nil
}
