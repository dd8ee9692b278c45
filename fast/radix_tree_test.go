package fast_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// tree builds a fast tree or fails the test.
func tree(t testing.TB, cfg spec.TreeConfig) *fast.RadixTree {
	t.Helper()
	tr, err := fast.NewRadixTree(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tr.(*fast.RadixTree)
}

// key is a token key in the unset namespace.
func key(units ...spec.Unit) spec.RadixKey { return spec.RadixKey{Units: units} }

// slots is shorthand for a value list.
func slots(s ...spec.SlotIdx) []spec.SlotIdx { return s }

// mustInsert inserts and checks the returned prefix length and the tree.
func mustInsert(t *testing.T, tr *fast.RadixTree, k spec.RadixKey, v []spec.SlotIdx, want int) {
	t.Helper()
	got, err := tr.Insert(k, v, 0)
	if err != nil || got != want {
		t.Fatalf("Insert(%v) = %d, %v; want %d", k.Units, got, err, want)
	}
	if err := tr.CheckInvariants(); err != nil {
		t.Fatalf("after Insert(%v): %v", k.Units, err)
	}
}

// mustMatch matches and checks the result and the tree.
func mustMatch(t *testing.T, tr *fast.RadixTree, k spec.RadixKey, want []spec.SlotIdx, last spec.NodeID) {
	t.Helper()
	got, err := tr.MatchPrefix(k)
	if err != nil || !slices.Equal(got.Indices, want) || got.Indices == nil || got.LastNode != last {
		t.Fatalf("MatchPrefix(%v) = %v, %d, %v; want %v, node %d", k.Units, got.Indices, got.LastNode, err, want, last)
	}
	if err := tr.CheckInvariants(); err != nil {
		t.Fatalf("after MatchPrefix(%v): %v", k.Units, err)
	}
}

// TestMatchPrefixWorkedExamplePageSize1 is docs/spec/radix-acks.md §1.4's ps = 1
// example: the second insert splits, the match ends on the new leaf and a
// longer query stops at the node boundary without splitting.
func TestMatchPrefixWorkedExamplePageSize1(t *testing.T) {
	tr := tree(t, spec.TreeConfig{PageSize: 1})
	mustInsert(t, tr, key(1, 2, 3), slots(10, 11, 12), 0)
	mustInsert(t, tr, key(1, 2, 4), slots(20, 21, 22), 2)
	mustInsert(t, tr, key(5, 6), slots(30, 31), 0)
	mustMatch(t, tr, key(1, 2, 4), slots(10, 11, 22), 3)
	next := tr.State().NextID
	mustMatch(t, tr, key(1, 2, 4, 9), slots(10, 11, 22), 3)
	if tr.State().NextID != next {
		t.Error("a match ending on a node boundary split a node")
	}
	want := map[spec.NodeID][]spec.Unit{0: {}, 1: {3}, 2: {1, 2}, 3: {4}, 4: {5, 6}}
	for _, n := range tr.State().Nodes {
		if !slices.Equal(n.Key, want[n.ID]) {
			t.Errorf("node %d key %v, want %v", n.ID, n.Key, want[n.ID])
		}
	}
}

// TestMatchPrefixWorkedExamplePageSize2 is §1.4's ps = 2 example: matches
// truncate to whole pages, and a match ending inside a node splits it with
// the new prefix taking the next id.
func TestMatchPrefixWorkedExamplePageSize2(t *testing.T) {
	tr := tree(t, spec.TreeConfig{PageSize: 2})
	mustInsert(t, tr, key(1, 2, 3, 4), slots(10, 11, 12, 13), 0)
	mustMatch(t, tr, key(1, 2, 3, 5, 6), slots(10, 11), 2)
	mustInsert(t, tr, key(1, 2, 3, 5, 7, 8), slots(30, 31, 32, 33, 34, 35), 2)
	mustMatch(t, tr, key(1, 2, 3, 5, 7), slots(10, 11, 32, 33), 4)
}

// TestNamespacesDoNotShareASubtree is §1.4's namespace example, with the
// erratum's salt: an unset extra key, "" and other values are all different
// namespaces; an empty salt is no salt (TestEmptySaltIsNoSalt).
func TestNamespacesDoNotShareASubtree(t *testing.T) {
	a, b, empty := "A", "B", ""
	tr := tree(t, spec.TreeConfig{PageSize: 1})
	mustInsert(t, tr, spec.RadixKey{Units: []spec.Unit{1, 2}, Extra: spec.ExtraKeyOf(&a, nil)}, slots(1, 2), 0)
	salt := "s"
	for _, extra := range []spec.ExtraKey{spec.ExtraKeyOf(&b, nil), {}, spec.ExtraKeyOf(&empty, nil), spec.ExtraKeyOf(&a, &salt)} {
		mustMatch(t, tr, spec.RadixKey{Units: []spec.Unit{1, 2}, Extra: extra}, slots(), 0)
	}
	mustMatch(t, tr, spec.RadixKey{Units: []spec.Unit{1, 2}, Extra: spec.ExtraKeyOf(&a, nil)}, slots(1, 2), 1)
}

// TestInsertCountsNoHits is the §0.2 amendment on hit counts: the plain
// tree follows upstream's RadixCache before inserts counted hits, so after
// insert [1] every node still reports hit_count 0.
func TestInsertCountsNoHits(t *testing.T) {
	tr := tree(t, spec.TreeConfig{PageSize: 1})
	mustInsert(t, tr, key(1), slots(10), 0)
	mustMatch(t, tr, key(1), slots(10), 1)
	nodes := tr.State().Nodes
	if len(nodes) != 2 {
		t.Fatalf("%d nodes, want the root and [1]", len(nodes))
	}
	for _, n := range nodes {
		if n.HitCount != 0 {
			t.Fatalf("node %d hit_count %d, want 0", n.ID, n.HitCount)
		}
	}
}

// TestEmptySaltIsNoSalt is the §1.1 amendment, the case upstream SGLang's own
// key constructor decides: an entry inserted with cache_salt "" is found by a
// match without a salt and the other way round, since "" becomes None there.
func TestEmptySaltIsNoSalt(t *testing.T) {
	empty := ""
	tr := tree(t, spec.TreeConfig{PageSize: 1})
	mustInsert(t, tr, spec.RadixKey{Units: []spec.Unit{1, 2}, Extra: spec.ExtraKeyOf(nil, &empty)}, slots(10, 11), 0)
	mustMatch(t, tr, spec.RadixKey{Units: []spec.Unit{1, 2}}, slots(10, 11), 1)
	mustInsert(t, tr, spec.RadixKey{Units: []spec.Unit{3}}, slots(12), 0)
	mustMatch(t, tr, spec.RadixKey{Units: []spec.Unit{3}, Extra: spec.ExtraKeyOf(nil, &empty)}, slots(12), 2)
}

// TestLockAndEvictWorkedExample is §1.7 and §1.8: locking moves the path's
// units to protected, eviction takes unlocked leaves in LRU order and pushes
// a parent once it becomes a leaf.
func TestLockAndEvictWorkedExample(t *testing.T) {
	tr := tree(t, spec.TreeConfig{PageSize: 1})
	mustInsert(t, tr, key(1, 2, 3), slots(10, 11, 12), 0)
	mustInsert(t, tr, key(1, 2, 4), slots(20, 21, 22), 2)
	mustInsert(t, tr, key(5, 6), slots(30, 31), 0)
	mustMatch(t, tr, key(1, 2, 4), slots(10, 11, 22), 3)
	if d, err := tr.IncLockRef(3); d != -3 || err != nil {
		t.Fatalf("IncLockRef(3) = %d, %v; want -3", d, err)
	}
	if tr.EvictableSize() != 3 || tr.ProtectedSize() != 3 {
		t.Fatalf("sizes %d/%d, want 3/3", tr.EvictableSize(), tr.ProtectedSize())
	}
	evict := func(n, want int, freed [][]spec.SlotIdx, victims []spec.NodeID) {
		t.Helper()
		r, err := tr.Evict(n)
		if err != nil || r.Evicted != want || !slices.EqualFunc(r.Freed, freed, slices.Equal) || !slices.Equal(r.Victims, victims) {
			t.Fatalf("Evict(%d) = %+v, %v; want %d %v %v", n, r, err, want, freed, victims)
		}
		if err := tr.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	}
	evict(1, 1, [][]spec.SlotIdx{{12}}, []spec.NodeID{1})
	evict(10, 2, [][]spec.SlotIdx{{30, 31}}, []spec.NodeID{4})
	if d, err := tr.DecLockRef(3); d != 3 || err != nil {
		t.Fatalf("DecLockRef(3) = %d, %v; want 3", d, err)
	}
	evict(3, 3, [][]spec.SlotIdx{{22}, {10, 11}}, []spec.NodeID{3, 2})
	if tr.EvictableSize() != 0 || tr.ProtectedSize() != 0 || tr.TotalSize() != 0 {
		t.Errorf("sizes %d/%d after evicting everything", tr.EvictableSize(), tr.ProtectedSize())
	}
}

// TestBadInputIsRejectedWithoutChange is §1.10 on the fast tree: each bad
// call returns its sentinel and leaves State (tick included) as it was.
func TestBadInputIsRejectedWithoutChange(t *testing.T) {
	if _, err := fast.NewRadixTree(spec.TreeConfig{PageSize: 0}); !errors.Is(err, spec.ErrInvalidPageSize) {
		t.Errorf("page_size 0: %v", err)
	}
	tr := tree(t, spec.TreeConfig{PageSize: 2})
	mustInsert(t, tr, key(1, 2, 3, 4), slots(1, 2, 3, 4), 0)
	before := tr.State()
	cases := []struct {
		name string
		err  error
		call func() error
	}{
		{"value length", spec.ErrValueLength, func() error { _, err := tr.Insert(key(1, 2), slots(1), 0); return err }},
		{"unaligned", spec.ErrUnalignedKey, func() error { _, err := tr.Insert(key(1, 2, 3), slots(1, 2, 3), 0); return err }},
		{"foreign lock", spec.ErrForeignNode, func() error { _, err := tr.IncLockRef(99); return err }},
		{"foreign unlock", spec.ErrForeignNode, func() error { _, err := tr.DecLockRef(-1); return err }},
		{"underflow", spec.ErrLockUnderflow, func() error { _, err := tr.DecLockRef(1); return err }},
		{"negative evict", spec.ErrNegativeCount, func() error { _, err := tr.Evict(-1); return err }},
	}
	for _, c := range cases {
		if err := c.call(); !errors.Is(err, c.err) {
			t.Errorf("%s: %v, want %v", c.name, err, c.err)
		}
		if !stateEqual(before, tr.State()) {
			t.Errorf("%s changed the tree", c.name)
		}
	}
}

// TestUnlockUnderflowIsAtomic locks a leaf, then unlocks its parent twice:
// the second unlock finds the parent's count at 0 only after the leaf's lock
// is accounted, so nothing on the path may change.
func TestUnlockUnderflowIsAtomic(t *testing.T) {
	tr := tree(t, spec.TreeConfig{PageSize: 1})
	mustInsert(t, tr, key(1, 2), slots(1, 2), 0)
	mustInsert(t, tr, key(1, 3), slots(1, 3), 1) // splits: node 2 = [1], node 3 = [3]
	if _, err := tr.IncLockRef(2); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.DecLockRef(2); err != nil {
		t.Fatal(err)
	}
	before := tr.State()
	if _, err := tr.DecLockRef(3); !errors.Is(err, spec.ErrLockUnderflow) {
		t.Fatalf("DecLockRef of an unlocked leaf: %v", err)
	}
	if !stateEqual(before, tr.State()) {
		t.Error("a failed unlock changed the tree")
	}
}

// TestFullHitMatchCopiesNoKeyAndAllocatesNothing is "the fast path was
// taken" (§1.1 Instrumentation, P6): on a 64K-token, 128-node path a
// full-hit match adds 0 to CopiedUnits, and MatchPrefixAppend into a big
// enough buffer makes no allocation; MatchPrefix allocates only the result.
func TestFullHitMatchCopiesNoKeyAndAllocatesNothing(t *testing.T) {
	for _, eagle := range []bool{false, true} {
		tr, k := pathTree(t, 1<<16, 128, 64, eagle)
		copied := tr.CopiedUnits()
		want := 1 << 16
		buf := make([]spec.SlotIdx, 0, len(k.Units))
		allocs := testing.AllocsPerRun(20, func() {
			out, _, err := tr.MatchPrefixAppend(buf[:0], k)
			if err != nil || len(out) != want {
				t.Fatalf("eagle=%v: matched %d, %v; want %d", eagle, len(out), err, want)
			}
		})
		if allocs != 0 {
			t.Errorf("eagle=%v: MatchPrefixAppend made %v allocations, want 0", eagle, allocs)
		}
		if allocs := testing.AllocsPerRun(20, func() { _, _ = tr.MatchPrefix(k) }); allocs != 1 {
			t.Errorf("eagle=%v: MatchPrefix made %v allocations, want 1 (the result)", eagle, allocs)
		}
		if allocs := testing.AllocsPerRun(20, func() { _, _ = tr.PrefixLen(k) }); allocs != 0 {
			t.Errorf("eagle=%v: PrefixLen made %v allocations, want 0", eagle, allocs)
		}
		if tr.CopiedUnits() != copied {
			t.Errorf("eagle=%v: matches copied %d key units, want 0", eagle, tr.CopiedUnits()-copied)
		}
	}
}

// pathTree stores one n-unit sequence as a k-node path by inserting the
// prefixes of length n·i/k (§1.12) and returns the tree and the full key. In
// Eagle mode the key has n+1 tokens, so its n bigrams are whole pages.
func pathTree(t testing.TB, n, k, ps int, eagle bool) (*fast.RadixTree, spec.RadixKey) {
	t.Helper()
	tr := tree(t, spec.TreeConfig{PageSize: ps, Eagle: eagle})
	extra := 0
	if eagle {
		extra = 1
	}
	full := spec.RadixKey{Units: make([]spec.Unit, n+extra)}
	for i := range full.Units {
		full.Units[i] = spec.Unit(i*7919) % 50000
	}
	for i := 1; i <= k; i++ {
		if _, err := tr.Insert(spec.RadixKey{Units: full.Units[:n*i/k+extra]}, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	return tr, full
}

// TestInsertCopiesExactlyTheNewUnits is P6 for Insert: a fresh leaf adds
// its length, a split adds the split node's length, a re-walk adds nothing.
func TestInsertCopiesExactlyTheNewUnits(t *testing.T) {
	tr := tree(t, spec.TreeConfig{PageSize: 2})
	step := func(k spec.RadixKey, want int64) {
		t.Helper()
		before := tr.CopiedUnits()
		if _, err := tr.Insert(k, nil, 0); err != nil {
			t.Fatal(err)
		}
		if got := tr.CopiedUnits() - before; got != want {
			t.Errorf("Insert(%v) copied %d units, want %d", k.Units, got, want)
		}
	}
	step(key(1, 2, 3, 4, 5, 6), 6)   // new leaf
	step(key(1, 2, 3, 4, 5, 6), 0)   // re-walk
	step(key(1, 2, 3, 4, 9, 9), 6+2) // split of the 6-unit node, leaf of 2
	step(key(1, 2, 7, 7, 7, 7), 4+4) // split of the 4-unit prefix, leaf of 4
	step(key(8, 8), 2)               // new leaf under the root
	step(key(1, 2, 3, 4, 5, 6, 1, 1), 2)
}

// TestMatchSplitCompactsBothHalves is S2 on the match path: the only units a
// match copies are the halves of the node it splits.
func TestMatchSplitCompactsBothHalves(t *testing.T) {
	tr := tree(t, spec.TreeConfig{PageSize: 2})
	mustInsert(t, tr, key(1, 2, 3, 4, 5, 6), nil, 0)
	before := tr.CopiedUnits()
	mustMatch(t, tr, key(1, 2, 3, 4, 9, 9), slots(1, 2, 3, 4), 2)
	if got := tr.CopiedUnits() - before; got != 6 {
		t.Errorf("a splitting match copied %d units, want 6 (the split node)", got)
	}
}

// TestStoredKeysSurviveCallerBufferReuse is B1.b (§1.11): the caller
// overwrites the buffer it inserted from, and the tree still matches the
// original units because the stored key is a private copy.
func TestStoredKeysSurviveCallerBufferReuse(t *testing.T) {
	for _, eagle := range []bool{false, true} {
		tr := tree(t, spec.TreeConfig{PageSize: 1, Eagle: eagle})
		buf := []spec.Unit{1, 2, 3, 4}
		if _, err := tr.Insert(spec.RadixKey{Units: buf}, slots(10, 11, 12, 13), 0); err != nil {
			t.Fatal(err)
		}
		buf[0], buf[1] = 9, 9
		want := slots(10, 11, 12, 13)
		if eagle {
			want = want[:3]
		}
		mustMatch(t, tr, key(1, 2, 3, 4), want, 1)
	}
}

// TestEagleKeysAreBigramsOfTheTokens is §2.1 in the tree: a token key is
// stored as its bigrams with the last token's slot dropped, 130 tokens at
// ps 64 cache 128 bigrams, and a bigram-mode key matches the same entries.
func TestEagleKeysAreBigramsOfTheTokens(t *testing.T) {
	tr := tree(t, spec.TreeConfig{PageSize: 2, Eagle: true})
	mustInsert(t, tr, key(5, 7, 7, 9, 1), slots(100, 101, 102, 103, 104), 0)
	st := tr.State()
	if got := st.Nodes[1]; !slices.Equal(got.Key, []spec.Unit{5<<32 | 7, 7<<32 | 7, 7<<32 | 9, 9<<32 | 1}) || !slices.Equal(got.Value, slots(100, 101, 102, 103)) {
		t.Errorf("stored %v → %v", got.Key, got.Value)
	}
	mustMatch(t, tr, key(5, 7, 7), slots(100, 101), 2)
	mustMatch(t, tr, spec.RadixKey{Units: []spec.Unit{5<<32 | 7, 7<<32 | 7}, Bigram: true}, slots(100, 101), 2)
	if _, err := tr.MatchPrefix(key(1, 1<<32)); !errors.Is(err, spec.ErrTokenRange) {
		t.Errorf("token 2^32: %v", err)
	}
	big := tree(t, spec.TreeConfig{PageSize: 64, Eagle: true})
	toks := make([]spec.Unit, 130)
	if _, err := big.Insert(spec.RadixKey{Units: toks}, nil, 0); !errors.Is(err, spec.ErrUnalignedKey) {
		t.Errorf("130 tokens at ps 64 insert: %v, want unaligned (129 bigrams)", err)
	}
	if _, err := big.Insert(spec.RadixKey{Units: toks[:129]}, nil, 0); err != nil {
		t.Fatal(err)
	}
	if n, _ := big.PrefixLen(spec.RadixKey{Units: toks}); n != 128 {
		t.Errorf("PrefixLen of 130 tokens = %d, want 128", n)
	}
}

// TestDisabledTreeDoesNothing: a disabled cache matches nothing, stores
// nothing and keeps its tick (§1.4 step 1, §1.5 step 1).
func TestDisabledTreeDoesNothing(t *testing.T) {
	tr := tree(t, spec.TreeConfig{PageSize: 1, Disable: true})
	if n, err := tr.Insert(key(1, 2), slots(1, 2), 0); n != 0 || err != nil {
		t.Fatalf("Insert = %d, %v", n, err)
	}
	mustMatch(t, tr, key(1, 2), slots(), 0)
	if st := tr.State(); st.Tick != 0 || len(st.Nodes) != 1 {
		t.Errorf("tick %d, %d nodes", st.Tick, len(st.Nodes))
	}
}

// TestPrefixLenIsReadOnly: PrefixLen reports what a match would return but
// neither ticks, stamps nor splits.
func TestPrefixLenIsReadOnly(t *testing.T) {
	tr := tree(t, spec.TreeConfig{PageSize: 2})
	mustInsert(t, tr, key(1, 2, 3, 4), slots(1, 2, 3, 4), 0)
	before := tr.State()
	if n, err := tr.PrefixLen(key(1, 2, 3, 5, 6)); n != 2 || err != nil {
		t.Fatalf("PrefixLen = %d, %v; want 2", n, err)
	}
	if !stateEqual(before, tr.State()) {
		t.Error("PrefixLen changed the tree")
	}
}

// TestEveryOpKeepsTheInvariants drives a random op sequence (insert, match,
// lock, unlock, evict over two namespaces, every page size, Eagle on and
// off) and checks R-COMPACT and the rest of P2 after each op.
func TestEveryOpKeepsTheInvariants(t *testing.T) {
	for _, cfg := range smokeConfigs() {
		rng := rand.New(rand.NewPCG(uint64(cfg.PageSize), 7))
		tr := tree(t, cfg)
		for i := range 300 {
			op := randomOp(rng, cfg.PageSize, tr.State().NextID)
			op.apply(tr)
			if err := tr.CheckInvariants(); err != nil {
				t.Fatalf("%+v step %d (%s): %v", cfg, i, op, err)
			}
		}
	}
}

// TestFastTreeMatchesRefStepByStep is the differential smoke test (§1.9
// P5): the same random ops on ref.NewRadixTree and the fast tree give equal
// results, byte-equal errors and equal State (ticks, ids, stamps, sizes,
// copied units, victim order) after every step. The full state machine
// lives in equiv/.
func TestFastTreeMatchesRefStepByStep(t *testing.T) {
	for _, cfg := range append(smokeConfigs(), spec.TreeConfig{PageSize: 1, Disable: true}) {
		rng := rand.New(rand.NewPCG(uint64(cfg.PageSize), 11))
		want, err := ref.NewRadixTree(cfg)
		if err != nil {
			t.Fatal(err)
		}
		got := tree(t, cfg)
		for i := range 400 {
			op := randomOp(rng, cfg.PageSize, want.State().NextID)
			// reflect.DeepEqual first: cmp.Diff costs ten times more and is only
			// needed to explain a failure.
			if rw, rg := op.apply(want), op.apply(got); !reflect.DeepEqual(rw, rg) {
				t.Fatalf("%+v step %d %s: result (-ref +fast):\n%s", cfg, i, op, cmp.Diff(rw, rg))
			}
			if sw, sg := want.State(), got.State(); !reflect.DeepEqual(sw, sg) {
				t.Fatalf("%+v step %d %s: state (-ref +fast):\n%s", cfg, i, op, cmp.Diff(sw, sg))
			}
			if err := got.CheckInvariants(); err != nil {
				t.Fatalf("%+v step %d %s: %v", cfg, i, op, err)
			}
		}
	}
}

// TestPrefixLenIsSafeForConcurrentReaders runs PrefixLen from several
// goroutines at once (run under -race): it reads the tree without writing.
func TestPrefixLenIsSafeForConcurrentReaders(t *testing.T) {
	tr, k := pathTree(t, 4096, 8, 64, true)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				if n, err := tr.PrefixLen(k); n != 4096 || err != nil {
					t.Errorf("PrefixLen = %d, %v", n, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestUnlockNeedsALockOfTheNodeItself: with only a leaf locked, unlocking
// its parent would leave the parent's lock_ref below the leaf's (R-LOCKSUM),
// so it is ErrLockUnderflow like ref's, and nothing changes.
func TestUnlockNeedsALockOfTheNodeItself(t *testing.T) {
	tr := tree(t, spec.TreeConfig{PageSize: 1})
	mustInsert(t, tr, key(1, 2), slots(1, 2), 0)
	mustInsert(t, tr, key(1, 3), slots(1, 3), 1) // node 2 = [1] over leaves 1 and 3
	if _, err := tr.IncLockRef(3); err != nil {
		t.Fatal(err)
	}
	before := tr.State()
	_, err := tr.DecLockRef(2)
	if !errors.Is(err, spec.ErrLockUnderflow) || err.Error() != ref.NoOwnLockError(2, 1).Error() {
		t.Fatalf("unlocking the parent of the only locked node: %v", err)
	}
	if !stateEqual(before, tr.State()) {
		t.Error("the rejected unlock changed the tree")
	}
	if d, err := tr.DecLockRef(3); d != 2 || err != nil {
		t.Errorf("DecLockRef(3) = %d, %v; want 2", d, err)
	}
	if err := tr.CheckInvariants(); err != nil {
		t.Error(err)
	}
}

// TestEvictionHeapStaysBoundedAndInOrderUnderRepeatedTouches drives the
// persistent eviction heap through many more re-stamps than there are
// leaves (every match of a leaf leaves a stale entry behind), so the heap
// must compact to stay within CheckInvariants' bound, and interleaves
// evictions whose victims must equal the reference's under every policy.
func TestEvictionHeapStaysBoundedAndInOrderUnderRepeatedTouches(t *testing.T) {
	policies := []spec.EvictPolicy{spec.PolicyLRU, spec.PolicyLFU, spec.PolicyFIFO, spec.PolicyMRU, spec.PolicyFILO, spec.PolicyPriority}
	for _, p := range policies {
		cfg := spec.TreeConfig{PageSize: 2, Policy: p}
		want, err := ref.NewRadixTree(cfg)
		if err != nil {
			t.Fatal(err)
		}
		got := tree(t, cfg)
		rng := rand.New(rand.NewPCG(3, 5))
		for i := range 2000 {
			k := key(spec.Unit(rng.IntN(6)), 9, spec.Unit(i%3), 1)
			var rw, rg any
			switch {
			case i%97 == 96:
				rw, _ = want.Evict(4)
				rg, _ = got.Evict(4)
			case i%5 == 0:
				rw, _ = want.Insert(k, slots(1, 2, 3, 4), i%4)
				rg, _ = got.Insert(k, slots(1, 2, 3, 4), i%4)
			default:
				rw, _ = want.MatchPrefix(k)
				rg, _ = got.MatchPrefix(k)
			}
			if !reflect.DeepEqual(rw, rg) {
				t.Fatalf("%s step %d: (-ref +fast):\n%s", p, i, cmp.Diff(rw, rg))
			}
			if err := got.CheckInvariants(); err != nil {
				t.Fatalf("%s step %d: %v", p, i, err)
			}
		}
		if sw, sg := want.State(), got.State(); !reflect.DeepEqual(sw, sg) {
			t.Fatalf("%s: state (-ref +fast):\n%s", p, cmp.Diff(sw, sg))
		}
	}
}

// TestPrefixHashesEqualTheReference compares the fast tree's one-pass chain
// (pages hashed in place, bigrams from a pair view) with the reference's on
// random keys in token and Eagle trees, including units past 2^32 in token
// mode, and the hashed score with the exact one on a stored path.
func TestPrefixHashesEqualTheReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, cfg := range []spec.TreeConfig{{PageSize: 1}, {PageSize: 3}, {PageSize: 64}, {PageSize: 2, Eagle: true}, {PageSize: 100, Eagle: true}} {
		want, err := ref.NewRadixTree(cfg)
		if err != nil {
			t.Fatal(err)
		}
		got := tree(t, cfg)
		for i := range 20 {
			units := make([]spec.Unit, rng.IntN(400))
			for j := range units {
				units[j] = spec.Unit(rng.IntN(5))
				if !cfg.Eagle && i%4 == 3 {
					units[j] <<= 40
				}
			}
			k := spec.RadixKey{Units: units, Extra: spec.ExtraKeyOf(nil, new(fmt.Sprint(i%2)))}
			hw, errw := want.PrefixHashes(k)
			hg, errg := got.PrefixHashes(k)
			if !reflect.DeepEqual(hw, hg) || !reflect.DeepEqual(errw, errg) {
				t.Fatalf("%+v key %d: chain (-ref +fast):\n%s", cfg, i, cmp.Diff(hw, hg))
			}
			n := len(units) / cfg.PageSize * cfg.PageSize
			if cfg.Eagle && len(units) > 0 {
				n = (len(units)-1)/cfg.PageSize*cfg.PageSize + 1 // whole pages of bigrams
			}
			stored := spec.RadixKey{Units: units[:n], Extra: k.Extra}
			if _, err := got.Insert(stored, nil, 0); err != nil {
				t.Fatal(err)
			}
			exact, _ := got.PrefixLen(k)
			if hashed, err := got.PrefixLenHashed(k, hg); err != nil || hashed != exact {
				t.Fatalf("%+v key %d: hashed score %d, %v; exact %d", cfg, i, hashed, err, exact)
			}
		}
	}
}

// TestHashedScoreOfABinaryPromptIsTheDecodedPromptsScore: on trees of
// page sizes 1, 3, 64 and 100 (past the lookup's stack page) holding
// branching paths in two namespaces, a prompt given as little-endian u32
// ids scores, by PageHasher.ChainLE32 (seeded with the namespace or not)
// and PrefixLenHashedLE32, exactly what the decoded prompt scores by
// ref.PrefixHashes and PrefixLenHashed, and what PrefixLen gives; an Eagle
// tree takes the decoded path. A length that is not whole ids, and a chain
// of the wrong length, are refused.
func TestHashedScoreOfABinaryPromptIsTheDecodedPromptsScore(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 13))
	salt := "s"
	spaces := []spec.ExtraKey{{}, spec.ExtraKeyOf(nil, &salt)}
	unitsOf := func(ids []int64) []spec.Unit {
		u := make([]spec.Unit, len(ids))
		for i, id := range ids {
			u[i] = spec.Unit(id)
		}
		return u
	}
	for _, cfg := range []spec.TreeConfig{{PageSize: 1}, {PageSize: 3}, {PageSize: 64}, {PageSize: 100}, {PageSize: 2, Eagle: true}} {
		tr := tree(t, cfg)
		ps := cfg.PageSize
		var stored [][]int64
		for i := range 30 {
			ids := make([]int64, (1+rng.IntN(12))*ps)
			for j := range ids {
				ids[j] = int64(rng.IntN(3)) << (30 * (j % 2)) // a few ids, some 2^31
			}
			if i > 0 && rng.IntN(2) == 0 { // share a prefix with an earlier path
				prev := stored[rng.IntN(len(stored))]
				copy(ids, prev[:min(len(prev), rng.IntN(len(ids)+1)/ps*ps)])
			}
			stored = append(stored, ids)
			n := len(ids)
			if cfg.Eagle {
				n = (len(ids)-1)/ps*ps + 1
			}
			if _, err := tr.Insert(spec.RadixKey{Units: unitsOf(ids[:n]), Extra: spaces[i%2]}, nil, 0); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 200 {
			q := slices.Clone(stored[rng.IntN(len(stored))])
			q = append(q, make([]int64, 2*ps+2)...)
			q = q[:rng.IntN(len(q)+1)]
			if len(q) > 0 && i%3 == 0 {
				q[rng.IntN(len(q))] = 7 // differs somewhere
			}
			le := make([]byte, 4*len(q))
			for j, id := range q {
				binary.LittleEndian.PutUint32(le[4*j:], uint32(id))
			}
			extra := spaces[i%2]
			k := spec.RadixKey{Units: unitsOf(q), Extra: extra}
			exact, err := tr.PrefixLen(k)
			if err != nil {
				t.Fatal(err)
			}
			var chain []spec.PrefixHash
			if cfg.Eagle {
				chain, _ = tr.PrefixHashes(k)
			} else {
				h, _ := fast.NewPageHasher(ps, nil)
				if i%4 < 2 {
					h.Seed(spaces[i%4])
				}
				for n := 0; n < len(le); n += 4 * rng.IntN(3*ps+1) {
					h.HashLE32(le[:n])
				}
				chain = h.ChainLE32(le, extra)
				if want := ref.PrefixHashes(k, ps); !slices.Equal(chain, want) {
					t.Fatalf("%+v query %d: ChainLE32 %v, want %v", cfg, i, chain, want)
				}
			}
			hashed, err := tr.PrefixLenHashed(k, chain)
			if err != nil || hashed != exact {
				t.Fatalf("%+v query %d: hashed %d (%v), exact %d", cfg, i, hashed, err, exact)
			}
			if got, err := tr.PrefixLenHashedLE32(le, extra, chain); err != nil || got != exact {
				t.Fatalf("%+v query %d (%d ids): from u32 ids %d (%v), want %d", cfg, i, len(q), got, err, exact)
			}
		}
		if _, err := tr.PrefixLenHashedLE32(make([]byte, 4*ps+2), spec.ExtraKey{}, make([]spec.PrefixHash, 1)); !errors.Is(err, spec.ErrLengthMismatch) {
			t.Errorf("%+v: a length of whole ids and 2 bytes: %v, want ErrLengthMismatch", cfg, err)
		}
		if !cfg.Eagle {
			if _, err := tr.PrefixLenHashedLE32(make([]byte, 8*ps), spec.ExtraKey{}, make([]spec.PrefixHash, 1)); err == nil {
				t.Errorf("%+v: one hash for two pages was taken", cfg)
			}
		}
	}
}

// TestHashedScoreOfABinaryPromptStopsInsideANode pins by hand where the
// walk from u32 ids ends, on a one-unit-page tree holding 1 2 3 4 and
// 1 2 3 5 (a node 1 2 3 with children 4 and 5): 1 4 matches 1 (the walk
// must not go on to the child 4 after leaving the node at its second
// page), 1 2 3 5 all 4, 1 2 9 matches 2, 1 matches 1, the empty prompt 0.
func TestHashedScoreOfABinaryPromptStopsInsideANode(t *testing.T) {
	tr := tree(t, spec.TreeConfig{PageSize: 1})
	mustInsert(t, tr, key(1, 2, 3, 4), nil, 0)
	mustInsert(t, tr, key(1, 2, 3, 5), nil, 3)
	for _, c := range []struct {
		q    []spec.Unit
		want int
	}{{[]spec.Unit{1, 4}, 1}, {[]spec.Unit{1, 2, 3, 5}, 4}, {[]spec.Unit{1, 2, 9}, 2}, {[]spec.Unit{1}, 1}, {nil, 0}} {
		le := make([]byte, 4*len(c.q))
		for j, u := range c.q {
			binary.LittleEndian.PutUint32(le[4*j:], uint32(u))
		}
		hs, err := tr.PrefixHashes(key(c.q...))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := tr.PrefixLenHashedLE32(le, spec.ExtraKey{}, hs); err != nil || got != c.want {
			t.Errorf("%v: %d (%v), want %d", c.q, got, err, c.want)
		}
	}
}

// TestHashedScoreStopsAtTheFirstDifferingPageAnywhereInABlock: a query
// that leaves a 400-page stored node at page d, for d around every
// boundary of the hashes compared a block at a time (and at none), scores
// d pages hashed as exactly; and the hashed score never reads past the
// query's pages.
func TestHashedScoreStopsAtTheFirstDifferingPageAnywhereInABlock(t *testing.T) {
	const pages = 400
	tr := tree(t, spec.TreeConfig{PageSize: 1})
	stored := make([]spec.Unit, pages)
	for i := range stored {
		stored[i] = spec.Unit(i + 1)
	}
	mustInsert(t, tr, key(stored...), nil, 0)
	for _, d := range []int{1, 2, 63, 64, 65, 66, 127, 128, 129, 130, 193, 257, 320, 321, 399, pages} {
		for _, qlen := range []int{d, pages, pages + 7} {
			q := make([]spec.Unit, qlen)
			copy(q, stored)
			for i := d; i < qlen; i++ {
				q[i] = spec.Unit(1<<20 + i) // differs from page d on
			}
			hs, err := tr.PrefixHashes(key(q...))
			if err != nil {
				t.Fatal(err)
			}
			got, err := tr.PrefixLenHashed(key(q...), hs)
			exact, _ := tr.PrefixLen(key(q...))
			if err != nil || got != min(d, qlen) || got != exact {
				t.Errorf("differing from page %d of a %d-page query: hashed %d (%v), exact %d, want %d", d, qlen, got, err, exact, min(d, qlen))
			}
		}
	}
}

// TestTokenKeyChainIsCheckThenHash pins the fused pass the prefix pools
// score with: the key, chain and error equal ref.TokenKey followed by
// ref.PrefixHashes, with a bad id in a whole page, in the partial tail or
// nowhere, for several page sizes, on prompts of up to 1,200 pages.
func TestTokenKeyChainIsCheckThenHash(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	lora := "l"
	for i := range 200 {
		ps := []int{1, 3, 64}[i%3]
		tokens := make([]int64, rng.IntN(1200))
		for j := range tokens {
			tokens[j] = rng.Int64N(1 << 20)
		}
		if len(tokens) > 0 && i%4 == 0 {
			tokens[rng.IntN(len(tokens))] = []int64{-1, 1 << 32}[i%8/4]
		}
		extra := spec.ExtraKeyOf(&lora, nil)
		wantKey, wantErr := ref.TokenKey("tokens", tokens, extra)
		var wantChain []spec.PrefixHash
		if wantErr == nil {
			wantChain = ref.PrefixHashes(wantKey, ps)
		}
		key, chain, err := fast.TokenKeyChain("tokens", tokens, extra, ps)
		if !reflect.DeepEqual(err, wantErr) || !reflect.DeepEqual(chain, wantChain) || (err == nil && !reflect.DeepEqual(key, wantKey)) {
			t.Fatalf("case %d (ps %d): got %v, %v; want %v, %v", i, ps, chain, err, wantChain, wantErr)
		}
	}
}

// TestPageHasherFedInPiecesIsCheckThenHash: hashing a prompt's pages as
// its prefixes arrive (any lengths, page-aligned or not, repeated) and
// finishing with Chain gives ref.TokenKey then ref.PrefixHashes, a bad id
// in a page hashed early included, as TokenKeyChain does in one call.
func TestPageHasherFedInPiecesIsCheckThenHash(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 7))
	salt := "s"
	for i := range 200 {
		ps := []int{1, 5, 64}[i%3]
		tokens := make([]int64, rng.IntN(1500))
		for j := range tokens {
			tokens[j] = rng.Int64N(1 << 32)
		}
		if len(tokens) > 0 && i%4 == 0 {
			tokens[rng.IntN(len(tokens))] = []int64{-7, 1<<32 + 3}[i%8/4]
		}
		extra := spec.ExtraKeyOf(nil, &salt)
		wantKey, wantErr := ref.TokenKey("tokens", tokens, extra)
		var wantChain []spec.PrefixHash
		if wantErr == nil {
			wantChain = ref.PrefixHashes(wantKey, ps)
		}
		h, err := fast.NewPageHasher(ps, nil)
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n < len(tokens); n += rng.IntN(3 * ps) {
			h.Add(tokens[:n])
		}
		key, chain, err := h.Chain("tokens", tokens, extra)
		if !reflect.DeepEqual(err, wantErr) || !reflect.DeepEqual(chain, wantChain) || (err == nil && !reflect.DeepEqual(key, wantKey)) {
			t.Fatalf("case %d (ps %d): got %v, %v; want %v, %v", i, ps, chain, err, wantChain, wantErr)
		}
	}
	if _, err := fast.NewPageHasher(0, nil); !errors.Is(err, spec.ErrInvalidPageSize) {
		t.Errorf("page size 0: %v, want ErrInvalidPageSize", err)
	}
}

// TestPageHasherAddLE32IsDecodeThenAdd: a binary prompt (little-endian
// u32 ids) decoded and hashed by AddLE32 in pieces of any length (page-
// aligned or not, empty, repeated) sets every token to its id and, after
// Chain, gives ref.TokenKey then ref.PrefixHashes of the decoded prompt,
// for 64-unit pages (fused with the decode on AVX-512 CPUs) and others;
// pieces fed through Add in between, and ids at 2^32-1, included. A
// hasher seeded with the namespace (Seed: folded as it hashes) gives the
// same chain, and so does one seeded with another namespace (Chain then
// hashes again); joined onto an empty hasher, any of them chains alike
// (one with folded pages refuses the join).
func TestPageHasherAddLE32IsDecodeThenAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 11))
	for i := range 300 {
		ps := []int{64, 1, 7, 64, 128}[i%5]
		n := rng.IntN(3000)
		le := make([]byte, 4*n)
		want := make([]int64, n)
		for j := range n {
			id := rng.Uint32()
			if j%97 == 5 {
				id = math.MaxUint32
			}
			binary.LittleEndian.PutUint32(le[4*j:], id)
			want[j] = int64(id)
		}
		salt := "s"
		extra := []spec.ExtraKey{{}, spec.ExtraKeyOf(nil, &salt)}[i%2]
		key, wantErr := ref.TokenKey("tokens", want, extra)
		if wantErr != nil {
			t.Fatal(wantErr)
		}
		wantChain := ref.PrefixHashes(key, ps)
		h, err := fast.NewPageHasher(ps, nil)
		if err != nil {
			t.Fatal(err)
		}
		switch i % 4 {
		case 1:
			h.Seed(extra)
		case 2:
			h.Seed(spec.ExtraKeyOf(&salt, nil)) // not the namespace Chain gets
		}
		tokens := make([]int64, n)
		for from := 0; from < n; {
			to := min(n, from+rng.IntN(4*ps+300))
			if i%3 == 1 && rng.IntN(2) == 0 {
				// A piece the caller decoded itself, then Add.
				for j := from; j < to; j++ {
					tokens[j] = want[j]
				}
				h.Add(tokens[:to])
			} else {
				h.AddLE32(tokens[:to], from, le)
			}
			from = to
		}
		h.AddLE32(tokens, n, le) // nothing left: changes nothing
		if !slices.Equal(tokens, want) {
			t.Fatalf("case %d (ps %d, %d ids): the decoded tokens differ", i, ps, n)
		}
		// Joined onto an empty hasher, h's pages must chain as before: a
		// hasher whose pages are folded already (seeded, fused) refuses.
		if other, _ := fast.NewPageHasher(ps, nil); other.Join(h, 0) {
			if _, chain, err := other.Chain("tokens", tokens, extra); err != nil || !slices.Equal(chain, wantChain) {
				t.Fatalf("case %d (ps %d, %d ids, seed %d): joined, chain %v (%v), want %v", i, ps, n, i%4, chain, err, wantChain)
			}
		}
		if _, chain, err := h.Chain("tokens", tokens, extra); err != nil || !slices.Equal(chain, wantChain) {
			t.Fatalf("case %d (ps %d, %d ids, seed %d): chain %v (%v), want %v", i, ps, n, i%4, chain, err, wantChain)
		}
	}
}

// TestPageHashersJoinedAtAPageBoundaryHashAsOne: a prompt's pages hashed
// in two halves (the first hasher up to a page boundary, the second from
// it, each fed in pieces) and joined give TokenKeyChain's chain and its
// refusal of a bad id in either half; a join at any other token index or
// of another page size is refused and changes nothing; a seeded first
// half joined with a partly fed second still chains alike.
func TestPageHashersJoinedAtAPageBoundaryHashAsOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for i := range 300 {
		ps := []int{1, 3, 64}[i%3]
		tokens := make([]int64, rng.IntN(2000))
		for j := range tokens {
			tokens[j] = rng.Int64N(1 << 32)
		}
		if len(tokens) > 0 && i%5 == 0 {
			tokens[rng.IntN(len(tokens))] = 1<<32 + 1
		}
		_, wantChain, wantErr := fast.TokenKeyChain("tokens", tokens, spec.ExtraKey{}, ps)
		at := min(len(tokens), rng.IntN(len(tokens)+1)/ps*ps)
		first, _ := fast.NewPageHasher(ps, nil)
		second, _ := fast.NewPageHasher(ps, nil)
		for n := 0; n < at; n += 1 + rng.IntN(2*ps) {
			first.Add(tokens[:n])
		}
		first.Add(tokens[:at])
		for n := at; n < len(tokens); n += 1 + rng.IntN(2*ps) {
			second.Add(tokens[at:n])
		}
		second.Add(tokens[at:])
		if at >= ps && first.Join(second, at-ps) {
			t.Fatalf("case %d: a join one page early was taken", i)
		}
		other, _ := fast.NewPageHasher(ps+1, nil)
		if first.Join(other, at) {
			t.Fatalf("case %d: a join of page size %d onto %d was taken", i, ps+1, ps)
		}
		if !first.Join(second, at) {
			t.Fatalf("case %d: the join at token %d (page size %d, %d pages) was refused", i, at, ps, first.Pages())
		}
		_, chain, err := first.Chain("tokens", tokens, spec.ExtraKey{})
		if !reflect.DeepEqual(err, wantErr) || !reflect.DeepEqual(chain, wantChain) {
			t.Fatalf("case %d (ps %d, joined at %d): got %v, %v; want %v, %v", i, ps, at, chain, err, wantChain, wantErr)
		}
		if wantErr != nil {
			continue
		}
		// Told the ids are in range, the halves skip the check and hash alike.
		first, _ = fast.NewPageHasher(ps, nil)
		second, _ = fast.NewPageHasher(ps, nil)
		first.InRange().Add(tokens[:at])
		second.InRange().Add(tokens[at:])
		if !first.Join(second, at) {
			t.Fatalf("case %d: the in-range join at %d was refused", i, at)
		}
		if _, chain, err := first.Chain("tokens", tokens, spec.ExtraKey{}); err != nil || !reflect.DeepEqual(chain, wantChain) {
			t.Fatalf("case %d (ps %d, in range): got %v, %v; want %v", i, ps, chain, err, wantChain)
		}
		// A first half told the namespace (folded as hashed), joined with a
		// second that saw only part of its half: the pages Chain then hashes
		// fold on from the joined, unfolded ones.
		first, _ = fast.NewPageHasher(ps, nil)
		second, _ = fast.NewPageHasher(ps, nil)
		first.Seed(spec.ExtraKey{}).Add(tokens[:at])
		second.Add(tokens[at : at+(len(tokens)-at)/2])
		if !first.Join(second, at) {
			t.Fatalf("case %d: the join of a seeded first half at %d was refused", i, at)
		}
		if _, chain, err := first.Chain("tokens", tokens, spec.ExtraKey{}); err != nil || !reflect.DeepEqual(chain, wantChain) {
			t.Fatalf("case %d (ps %d, seeded, half the second half): got %v, %v; want %v", i, ps, chain, err, wantChain)
		}
	}
}
