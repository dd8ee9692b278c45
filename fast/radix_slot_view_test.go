package fast_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/spec"
)

// viewTree is a fast tree of page size ps holding n random keys over a
// small alphabet (so they share prefixes and split nodes), each unit's
// slot a distinct number.
func viewTree(t *testing.T, rng *rand.Rand, ps, n int) (*fast.RadixTree, [][]spec.Unit) {
	t.Helper()
	tr, err := fast.NewRadixTree(spec.TreeConfig{PageSize: ps})
	if err != nil {
		t.Fatal(err)
	}
	var keys [][]spec.Unit
	slot := spec.SlotIdx(0)
	for range n {
		key := make([]spec.Unit, rng.IntN(7)*ps)
		for i := range key {
			key[i] = spec.Unit(rng.IntN(3))
		}
		value := make([]spec.SlotIdx, len(key))
		for i := range value {
			value[i] = slot
			slot++
		}
		if _, err := tr.Insert(spec.RadixKey{Units: key}, value, 0); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
	}
	return tr.(*fast.RadixTree), keys
}

// TestSlotViewHoldsTheSlotsMatchPrefixReturns: on random trees and
// queries (stored keys, their prefixes, and keys one unit off), a view's
// slots are exactly MatchPrefix's and its length PrefixLen's, and taking
// it changes nothing: the state before and after is the same.
func TestSlotViewHoldsTheSlotsMatchPrefixReturns(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var segs [][]spec.SlotIdx
	for i := range 300 {
		ps := 1 + i%3
		tr, keys := viewTree(t, rng, ps, 1+rng.IntN(8))
		q := slices.Clone(keys[rng.IntN(len(keys))])
		q = q[:rng.IntN(len(q)+1)] // any length: the walk floors it to whole pages
		if len(q) > 0 && rng.IntN(3) == 0 {
			q[rng.IntN(len(q))] = 7 // a unit no key holds
		}
		k := spec.RadixKey{Units: q}
		before := tr.State()
		v, err := tr.MatchPrefixView(segs, k)
		if err != nil {
			t.Fatal(err)
		}
		segs, _ = v.Segments()
		got, err := v.AppendTo(nil)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := tr.PrefixLen(k); v.Len() != n || len(got) != n {
			t.Fatalf("case %d: view of %d slots (%d appended), PrefixLen %d", i, v.Len(), len(got), n)
		}
		if after := tr.State(); !slices.EqualFunc(before.Nodes, after.Nodes, func(a, b spec.NodeState) bool { return a.ID == b.ID && len(a.Value) == len(b.Value) }) {
			t.Fatalf("case %d: taking a view changed the tree", i)
		}
		want, err := tr.MatchPrefix(k)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want.Indices) && !(len(got) == 0 && len(want.Indices) == 0) {
			t.Fatalf("case %d: view %v, MatchPrefix %v", i, got, want.Indices)
		}
	}
}

// TestSlotViewGoesStaleWhenTheTreeChangesShape: a view answers until the
// tree adds, splits or evicts a node, and ErrStaleView after; matches that
// split nothing, locks and unlocks leave it valid.
func TestSlotViewGoesStaleWhenTheTreeChangesShape(t *testing.T) {
	tr, err := fast.NewRadixTree(spec.TreeConfig{PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := tr.(*fast.RadixTree)
	key := func(u ...spec.Unit) spec.RadixKey { return spec.RadixKey{Units: u} }
	if _, err := f.Insert(key(1, 2, 3, 4), []spec.SlotIdx{10, 11, 12, 13}, 0); err != nil {
		t.Fatal(err)
	}
	view := func() fast.SlotView {
		v, err := f.MatchPrefixView(nil, key(1, 2, 3, 4))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	valid := func(v fast.SlotView, step string, want bool) {
		t.Helper()
		got, err := v.AppendTo(nil)
		switch {
		case want && (err != nil || !slices.Equal(got, []spec.SlotIdx{10, 11, 12, 13})):
			t.Errorf("after %s: %v, %v; want the four slots", step, got, err)
		case !want && !errors.Is(err, fast.ErrStaleView):
			t.Errorf("after %s: %v, %v; want ErrStaleView", step, got, err)
		}
	}
	v := view()
	m, err := f.MatchPrefix(key(1, 2, 3, 4)) // a full hit: no split
	if err != nil {
		t.Fatal(err)
	}
	valid(v, "a full-hit match", true)
	if _, err := f.IncLockRef(m.LastNode); err != nil {
		t.Fatal(err)
	}
	if _, err := f.DecLockRef(m.LastNode); err != nil {
		t.Fatal(err)
	}
	valid(v, "a lock and an unlock", true)
	if _, err := f.MatchPrefix(key(1, 2)); err != nil { // ends inside the node: a split
		t.Fatal(err)
	}
	valid(v, "a splitting match", false)
	v = view()
	if _, err := f.Insert(key(1, 2, 9), []spec.SlotIdx{10, 11, 20}, 0); err != nil {
		t.Fatal(err)
	}
	valid(v, "an insert", false)
	v = view()
	if _, err := f.Evict(1); err != nil {
		t.Fatal(err)
	}
	valid(v, "an eviction", false)
}

// TestSlotViewAllocatesNothingWhenItsSegmentsAreReused: the 64K-unit,
// 128-node full hit, the view's segments passed back in.
func TestSlotViewAllocatesNothingWhenItsSegmentsAreReused(t *testing.T) {
	tr, err := fast.NewRadixTree(spec.TreeConfig{PageSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	f := tr.(*fast.RadixTree)
	const n, nodes = 1 << 16, 128
	units, value := make([]spec.Unit, n), make([]spec.SlotIdx, n)
	for i := range units {
		units[i], value[i] = spec.Unit(i), spec.SlotIdx(i)
	}
	for i := 1; i <= nodes; i++ {
		if _, err := f.Insert(spec.RadixKey{Units: units[:n*i/nodes]}, value[:n*i/nodes], 0); err != nil {
			t.Fatal(err)
		}
	}
	k := spec.RadixKey{Units: units}
	v, _ := f.MatchPrefixView(nil, k)
	segs, _ := v.Segments()
	if allocs := testing.AllocsPerRun(20, func() {
		v, _ = f.MatchPrefixView(segs, k)
		segs, _ = v.Segments()
	}); allocs != 0 || v.Len() != n || len(segs) != nodes {
		t.Errorf("%v allocs, %d slots in %d segments; want 0, %d, %d", allocs, v.Len(), len(segs), n, nodes)
	}
}
