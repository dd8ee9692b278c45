package ref

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kvtwin/kvtwin/spec"
)

func newTree(t *testing.T, cfg spec.TreeConfig) spec.RadixTree {
	t.Helper()
	tr, err := NewRadixTree(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func key(units ...spec.Unit) spec.RadixKey { return spec.RadixKey{Units: units} }

func insert(t *testing.T, tr spec.RadixTree, k spec.RadixKey, value []spec.SlotIdx, want int) {
	t.Helper()
	got, err := tr.Insert(k, value, 0)
	if err != nil || got != want {
		t.Fatalf("Insert(%v) = %d, %v; want %d", k.Units, got, err, want)
	}
	if err := CheckTreeState(tr.State()); err != nil {
		t.Fatal(err)
	}
}

func match(t *testing.T, tr spec.RadixTree, k spec.RadixKey, want []spec.SlotIdx, wantNode spec.NodeID) {
	t.Helper()
	got, err := tr.MatchPrefix(k)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(spec.MatchResult{Indices: want, LastNode: wantNode}, got); diff != "" {
		t.Fatalf("MatchPrefix(%v) (-want +got):\n%s", k.Units, diff)
	}
	if err := CheckTreeState(tr.State()); err != nil {
		t.Fatal(err)
	}
}

// workedTree builds the page-size-1 tree of docs/spec/radix-acks.md §1.4.
func workedTree(t *testing.T) spec.RadixTree {
	tr := newTree(t, spec.TreeConfig{PageSize: 1})
	insert(t, tr, key(1, 2, 3), []spec.SlotIdx{10, 11, 12}, 0)
	insert(t, tr, key(1, 2, 4), []spec.SlotIdx{20, 21, 22}, 2)
	insert(t, tr, key(5, 6), []spec.SlotIdx{30, 31}, 0)
	return tr
}

func TestMatchPrefixWorkedExamplePageSize1(t *testing.T) {
	tr := workedTree(t)
	match(t, tr, key(1, 2, 4), []spec.SlotIdx{10, 11, 22}, 3)
	match(t, tr, key(1, 2, 4, 9), []spec.SlotIdx{10, 11, 22}, 3)
	st := tr.State()
	if len(st.Nodes) != 5 || st.Nodes[2].ID != 2 || st.Nodes[2].Parent != 0 || st.Nodes[1].Parent != 2 {
		t.Fatalf("tree shape: %+v", st.Nodes)
	}
}

func TestMatchPrefixSplitsAtPageBoundaryWorkedExamplePageSize2(t *testing.T) {
	tr := newTree(t, spec.TreeConfig{PageSize: 2})
	insert(t, tr, key(1, 2, 3, 4), []spec.SlotIdx{10, 11, 12, 13}, 0)
	match(t, tr, key(1, 2, 3, 5, 6), []spec.SlotIdx{10, 11}, 2)
	insert(t, tr, key(1, 2, 3, 5, 7, 8), []spec.SlotIdx{30, 31, 32, 33, 34, 35}, 2)
	match(t, tr, key(1, 2, 3, 5, 7), []spec.SlotIdx{10, 11, 32, 33}, 4)
}

func TestNamespacesDoNotShare(t *testing.T) {
	tr := newTree(t, spec.TreeConfig{PageSize: 1})
	a, b := "A", "B"
	insert(t, tr, spec.RadixKey{Units: []spec.Unit{1, 2}, Extra: spec.ExtraKeyOf(&a, nil)}, nil, 0)
	match(t, tr, spec.RadixKey{Units: []spec.Unit{1, 2}, Extra: spec.ExtraKeyOf(&b, nil)}, []spec.SlotIdx{}, 0)
	match(t, tr, key(1, 2), []spec.SlotIdx{}, 0)
	salt, empty := "s", ""
	match(t, tr, spec.RadixKey{Units: []spec.Unit{1, 2}, Extra: spec.ExtraKeyOf(&a, &salt)}, []spec.SlotIdx{}, 0)
	match(t, tr, spec.RadixKey{Units: []spec.Unit{1, 2}, Extra: spec.ExtraKeyOf(&empty, nil)}, []spec.SlotIdx{}, 0)
	match(t, tr, spec.RadixKey{Units: []spec.Unit{1, 2}, Extra: spec.ExtraKeyOf(&a, nil)}, []spec.SlotIdx{1, 2}, 1)
	// An empty salt is no salt (§1.1 amendment): the same namespace as none.
	match(t, tr, spec.RadixKey{Units: []spec.Unit{1, 2}, Extra: spec.ExtraKeyOf(&a, &empty)}, []spec.SlotIdx{1, 2}, 1)
}

func TestReinsertOfPresentKeyCreatesNothing(t *testing.T) {
	tr := workedTree(t)
	before := tr.State().NextID
	insert(t, tr, key(1, 2, 3), []spec.SlotIdx{40, 41, 42}, 3)
	if tr.State().NextID != before {
		t.Fatal("re-insert created a node")
	}
}

func TestLockAndEvictWorkedExample(t *testing.T) {
	tr := workedTree(t)
	match(t, tr, key(1, 2, 4), []spec.SlotIdx{10, 11, 22}, 3)
	d, err := tr.IncLockRef(3)
	if err != nil || d != -3 || tr.EvictableSize() != 3 || tr.ProtectedSize() != 3 {
		t.Fatalf("IncLockRef(3) = %d, %v; sizes %d/%d", d, err, tr.EvictableSize(), tr.ProtectedSize())
	}
	wantEvict := func(n int, want spec.EvictResult) {
		t.Helper()
		got, err := tr.Evict(n)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("Evict(%d) (-want +got):\n%s", n, diff)
		}
		if err := CheckTreeState(tr.State()); err != nil {
			t.Fatal(err)
		}
	}
	wantEvict(1, spec.EvictResult{Evicted: 1, Freed: [][]spec.SlotIdx{{12}}, Victims: []spec.NodeID{1}})
	wantEvict(10, spec.EvictResult{Evicted: 2, Freed: [][]spec.SlotIdx{{30, 31}}, Victims: []spec.NodeID{4}})
	if d, err := tr.DecLockRef(3); err != nil || d != 3 {
		t.Fatalf("DecLockRef(3) = %d, %v", d, err)
	}
	wantEvict(3, spec.EvictResult{Evicted: 3, Freed: [][]spec.SlotIdx{{22}, {10, 11}}, Victims: []spec.NodeID{3, 2}})
	if tr.EvictableSize() != 0 || tr.ProtectedSize() != 0 || tr.TotalSize() != 0 {
		t.Fatal("sizes must end at 0")
	}
}

func TestUnlockUnderflowIsAtomic(t *testing.T) {
	tr := workedTree(t)
	if _, err := tr.IncLockRef(1); err != nil {
		t.Fatal(err)
	}
	before := tr.State()
	// node 3 hangs under node 2, which holds node 1's lock, but node 3 itself has 0.
	_, err := tr.DecLockRef(3)
	if !errors.Is(err, spec.ErrLockUnderflow) {
		t.Fatalf("DecLockRef(3) = %v, want ErrLockUnderflow", err)
	}
	if diff := cmp.Diff(before, tr.State()); diff != "" {
		t.Fatalf("a failed unlock changed the tree:\n%s", diff)
	}
}

func TestBadInputIsRejectedWithoutChange(t *testing.T) {
	tr := newTree(t, spec.TreeConfig{PageSize: 2})
	insert(t, tr, key(1, 2), nil, 0)
	before := tr.State()
	cases := []struct {
		name string
		run  func() error
		want *spec.Sentinel
	}{
		{"value-length", func() error { _, err := tr.Insert(key(1, 2), []spec.SlotIdx{1}, 0); return err }, spec.ErrValueLength},
		{"unaligned", func() error { _, err := tr.Insert(key(1, 2, 3), nil, 0); return err }, spec.ErrUnalignedKey},
		{"foreign-lock", func() error { _, err := tr.IncLockRef(9); return err }, spec.ErrForeignNode},
		{"foreign-unlock", func() error { _, err := tr.DecLockRef(9); return err }, spec.ErrForeignNode},
		{"negative-evict", func() error { _, err := tr.Evict(-1); return err }, spec.ErrNegativeCount},
	}
	for _, c := range cases {
		if err := c.run(); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %s", c.name, err, c.want.Code())
		}
	}
	if diff := cmp.Diff(before, tr.State()); diff != "" {
		t.Fatalf("rejected calls changed the tree:\n%s", diff)
	}
	if _, err := NewRadixTree(spec.TreeConfig{PageSize: 0}); !errors.Is(err, spec.ErrInvalidPageSize) {
		t.Fatalf("page size 0: %v", err)
	}
	if _, err := NewRadixTree(spec.TreeConfig{PageSize: 1, Policy: "random"}); !errors.Is(err, spec.ErrBadEnum) {
		t.Fatalf("policy random: %v", err)
	}
}

func TestEagleTreeKeysByBigramsAndAlignsAfterConversion(t *testing.T) {
	tr := newTree(t, spec.TreeConfig{PageSize: 2, Eagle: true})
	// 5 tokens → 4 bigrams, a whole number of pages; slots of the last token are not cached.
	insert(t, tr, key(5, 7, 7, 9, 1), []spec.SlotIdx{100, 101, 102, 103, 104}, 0)
	// 4 tokens → 3 bigrams, aligned to 2.
	match(t, tr, key(5, 7, 7, 8), []spec.SlotIdx{100, 101}, 2)
	if _, err := tr.Insert(key(5, 7, 7, 9), nil, 0); !errors.Is(err, spec.ErrUnalignedKey) {
		t.Fatalf("3 bigrams at page size 2: %v", err)
	}
	if _, err := tr.MatchPrefix(key(1 << 32)); !errors.Is(err, spec.ErrTokenRange) {
		t.Fatalf("token 2^32 in an Eagle tree: %v", err)
	}
}

func TestDisabledTreeNeitherCachesNorTicks(t *testing.T) {
	tr := newTree(t, spec.TreeConfig{PageSize: 1, Disable: true})
	insert(t, tr, key(1, 2), nil, 0)
	match(t, tr, key(1, 2), []spec.SlotIdx{}, 0)
	if st := tr.State(); st.Tick != 0 || len(st.Nodes) != 1 {
		t.Fatalf("disabled tree changed: %+v", st)
	}
}

func TestPrefixLenIsReadOnly(t *testing.T) {
	tr := newTree(t, spec.TreeConfig{PageSize: 2})
	insert(t, tr, key(1, 2, 3, 4), nil, 0)
	before := tr.State()
	if n, err := tr.PrefixLen(key(1, 2, 3, 5, 6)); err != nil || n != 2 {
		t.Fatalf("PrefixLen = %d, %v; want 2", n, err)
	}
	if diff := cmp.Diff(before, tr.State()); diff != "" {
		t.Fatalf("PrefixLen changed the tree:\n%s", diff)
	}
}

func TestMatchLenFloorsToPagesAndChecksNamespaces(t *testing.T) {
	if n, _ := MatchLen(key(1, 2, 3, 4), key(1, 2, 3, 5), 2); n != 2 {
		t.Fatalf("MatchLen = %d, want 2", n)
	}
	if n, _ := MatchLen(key(1, 2, 3), key(1, 2, 3), 2); n != 2 {
		t.Fatalf("unaligned equal keys: MatchLen = %d, want 2 (whole pages)", n)
	}
	a := "A"
	if _, err := MatchLen(key(1), spec.RadixKey{Units: []spec.Unit{1}, Extra: spec.ExtraKeyOf(&a, nil)}, 1); !errors.Is(err, spec.ErrExtraKeyMismatch) {
		t.Fatalf("namespaces: %v", err)
	}
}

func TestEvictionPoliciesBreakTiesByID(t *testing.T) {
	for _, tc := range []struct {
		policy spec.EvictPolicy
		want   []spec.NodeID
	}{
		{spec.PolicyLRU, []spec.NodeID{2, 1, 3}},
		{spec.PolicyFIFO, []spec.NodeID{1, 2, 3}},
		{spec.PolicyMRU, []spec.NodeID{3, 1, 2}},
		{spec.PolicyFILO, []spec.NodeID{3, 2, 1}},
		{spec.PolicyPriority, []spec.NodeID{3, 1, 2}},
	} {
		tr := newTree(t, spec.TreeConfig{PageSize: 1, Policy: tc.policy})
		insert(t, tr, key(1), nil, 0)
		tr.Insert(key(2), nil, 5)
		tr.Insert(key(3), nil, -1)
		tr.MatchPrefix(key(1)) // node 1 touched last but for node 3
		tr.MatchPrefix(key(3))
		got, err := tr.Evict(3)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, got.Victims); diff != "" {
			t.Errorf("%s victims (-want +got):\n%s", tc.policy, diff)
		}
	}
}

func TestCopiedUnitsCountOnlyStoredKeys(t *testing.T) {
	tr := newTree(t, spec.TreeConfig{PageSize: 1})
	// The §1.11 B1.a shape: a 4-node path of 4 units each, built by prefixes.
	for i := 1; i <= 4; i++ {
		k := make([]spec.Unit, 4*i)
		for j := range k {
			k[j] = spec.Unit(j)
		}
		insert(t, tr, spec.RadixKey{Units: k}, nil, 4*(i-1))
	}
	if got := tr.State().CopiedUnits; got != 16 {
		t.Fatalf("four 4-unit leaves stored %d units, want 16", got)
	}
	full := make([]spec.Unit, 16)
	for j := range full {
		full[j] = spec.Unit(j)
	}
	match(t, tr, spec.RadixKey{Units: full}, full16(), 4)
	if got := tr.State().CopiedUnits; got != 16 {
		t.Fatalf("a full-hit match copied %d units", got-16)
	}
	match(t, tr, spec.RadixKey{Units: full[:6]}, []spec.SlotIdx{0, 1, 2, 3, 4, 5}, 5)
	if got := tr.State().CopiedUnits; got != 20 {
		t.Fatalf("a match splitting a 4-unit node copied %d units, want 4", got-16)
	}
}

func full16() []spec.SlotIdx {
	v := make([]spec.SlotIdx, 16)
	for i := range v {
		v[i] = spec.SlotIdx(i)
	}
	return v
}

func TestUnlockMustReleaseALockOfTheNodeItself(t *testing.T) {
	tr := newTree(t, spec.TreeConfig{PageSize: 1})
	insert(t, tr, key(0), nil, 0)
	insert(t, tr, key(0, 0), nil, 1)
	if _, err := tr.IncLockRef(2); err != nil {
		t.Fatal(err)
	}
	before := tr.State()
	if _, err := tr.DecLockRef(1); !errors.Is(err, spec.ErrLockUnderflow) {
		t.Fatalf("unlocking the parent of the locked node: %v, want ErrLockUnderflow", err)
	}
	if diff := cmp.Diff(before, tr.State()); diff != "" {
		t.Fatal(diff)
	}
	if d, err := tr.DecLockRef(2); err != nil || d != 2 {
		t.Fatalf("DecLockRef(2) = %d, %v", d, err)
	}
}
