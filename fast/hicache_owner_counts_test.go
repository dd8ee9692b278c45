package fast_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

func insertUnits(t testing.TB, tr spec.RadixTree, units ...spec.Unit) {
	t.Helper()
	if _, err := tr.Insert(spec.RadixKey{Units: units}, nil, 0); err != nil {
		t.Fatal(err)
	}
}

// faultyTree is fast.NewRadixTree(cfg) with the radix faults f, reached as the
// bug zoo reaches it: through the hook table fast installs in internal/fault.
func faultyTree(tb testing.TB, cfg spec.TreeConfig, f fault.Radix) *fast.RadixTree {
	tb.Helper()
	tr, err := fault.Installed().NewRadixTree(cfg, f)
	if err != nil {
		tb.Fatal(err)
	}
	return tr.(*fast.RadixTree)
}

// planTree is §4.4's worked-example tree (ref/hicache_owner_counts_test.go) on a fast
// tree built with faults f.
func planTree(t testing.TB, f fault.Radix) *fast.RadixTree {
	tr := faultyTree(t, spec.TreeConfig{PageSize: 1, CPSize: 2}, f)
	for _, k := range [][]spec.Unit{{10, 11}, {10, 11, 12}, {20, 21, 22, 23}, {20, 21, 22, 23, 24, 25}, {30, 31, 32, 33}, {30, 31, 32, 33, 34, 35, 36}} {
		insertUnits(t, tr, k...)
	}
	for _, id := range []spec.NodeID{1, 3, 5} {
		if _, err := tr.IncLockRef(id); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

// TestOwnerCountsFromMetadataAllocateNothing: the fast planner's count
// lookup is the stored metadata — no allocation, no recount, no miss.
func TestOwnerCountsFromMetadataAllocateNothing(t *testing.T) {
	tr := tree(t, spec.TreeConfig{PageSize: 64, CPSize: 8})
	k, _ := benchKey(65536)
	insertUnits(t, tr, k.Units...)
	allocs := testing.AllocsPerRun(100, func() {
		if c, err := tr.OwnerCounts(1, 8); err != nil || c[0] != 128 {
			t.Fatalf("counts %v, %v", c, err)
		}
	})
	st := tr.State()
	if allocs != 0 || st.OwnerCountRecomputations != 0 || st.MetaMisses != 0 {
		t.Fatalf("%v allocs/lookup, %d recounts, %d misses; want 0, 0, 0", allocs, st.OwnerCountRecomputations, st.MetaMisses)
	}
}

// TestPlanReadsMetadata: planning §4.4's [3,0] deficit scans three leaves;
// the fixed tree recounts none, the B4.a fault recounts each.
func TestPlanReadsMetadata(t *testing.T) {
	req := spec.OwnerPlanRequest{Need: []int{3, 0}, Free: []int{0, 0}, DryRun: true}
	for _, c := range []struct {
		f    fault.Radix
		want int64
	}{{fault.Radix{}, 0}, {fault.Radix{RecountOwners: true}, 3}} {
		tr := planTree(t, c.f)
		p, err := tr.EvictOwnerLanes(req)
		if err != nil || !slices.Equal(p.Victims, []spec.NodeID{2, 4, 6}) {
			t.Fatalf("%+v: plan %+v, %v", c.f, p, err)
		}
		if got := tr.State().OwnerCountRecomputations; got != c.want {
			t.Errorf("%+v: %d recomputations, want %d", c.f, got, c.want)
		}
	}
}

// TestStaleMetadataFailsFast: under the B4.b fault the suffix of a split
// keeps [2,2] for 3 pages; the planner rejects it with ErrMetadataStale
// and the tree, counters included, is unchanged.
func TestStaleMetadataFailsFast(t *testing.T) {
	tr := faultyTree(t, spec.TreeConfig{PageSize: 1, CPSize: 2}, fault.Radix{SplitKeepsOwnerCounts: true})
	insertUnits(t, tr, 1, 2, 3, 4)
	if _, err := tr.MatchPrefix(spec.RadixKey{Units: []spec.Unit{1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.IncLockRef(2); err != nil {
		t.Fatal(err)
	}
	before := tr.State()
	_, err := tr.EvictOwnerLanes(spec.OwnerPlanRequest{Need: []int{2, 0}, Free: []int{0, 0}, Locked: 2})
	if ie, ok := spec.AsInputError(err); !errors.Is(err, spec.ErrMetadataStale) || !ok || ie.Value != spec.NodeID(1) {
		t.Fatalf("plan over a stale suffix: %v, want metadata_stale on node 1", err)
	}
	if diff := cmp.Diff(before, tr.State()); diff != "" {
		t.Fatalf("a rejected plan changed the tree:\n%s", diff)
	}
	if tr.CheckInvariants() == nil {
		t.Fatal("the invariant walk misses the unsplit metadata")
	}
}

// TestRejectedPlansChangeNothing: every bad request leaves the fast tree
// deep-equal to before, with the reference's error.
func TestRejectedPlansChangeNothing(t *testing.T) {
	for _, req := range []spec.OwnerPlanRequest{
		{CPSize: -1}, {Need: []int{1}, Free: []int{0, 0}}, {Need: []int{1, 0}, Free: []int{0}},
		{Need: []int{-1, 0}, Free: []int{0, 0}}, {Need: []int{9, 9}, Free: []int{0, 0}, Locked: 42},
	} {
		tr := planTree(t, fault.Radix{})
		_, refErr := planRefTree(t).EvictOwnerLanes(req)
		want := spec.ErrorObjectOf(refErr)
		before := tr.State()
		_, err := tr.EvictOwnerLanes(req)
		if err == nil || !cmp.Equal(spec.ErrorObjectOf(err), want) {
			t.Errorf("%+v: %v, ref says %+v", req, err, want)
		}
		if diff := cmp.Diff(before, tr.State()); diff != "" {
			t.Errorf("%+v changed the tree:\n%s", req, diff)
		}
	}
}

// planRefTree is planTree on the reference tree.
func planRefTree(t *testing.T) spec.RadixTree {
	tr := must(ref.NewRadixTree(spec.TreeConfig{PageSize: 1, CPSize: 2}))
	for _, k := range [][]spec.Unit{{10, 11}, {10, 11, 12}, {20, 21, 22, 23}, {20, 21, 22, 23, 24, 25}, {30, 31, 32, 33}, {30, 31, 32, 33, 34, 35, 36}} {
		insertUnits(t, tr, k...)
	}
	for _, id := range []spec.NodeID{1, 3, 5} {
		if _, err := tr.IncLockRef(id); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

func must(tr spec.RadixTree, err error) spec.RadixTree {
	if err != nil {
		panic(err)
	}
	return tr
}

// zigzag is another owner rule (docs/spec/radix-acks.md §6 item 1's "zigzag at page
// granularity"): positions 0..N−1 go up the ranks, N..2N−1 come back down.
type zigzag struct{}

func (zigzag) Owner(q, n int) int {
	if r := q % (2 * n); r < n {
		return r
	} else {
		return 2*n - 1 - r
	}
}

// TestPluggedOwnerRuleNeedsNoPlannerChange: with the zigzag rule plugged
// into both twins, metadata and plans follow the rule and the twins agree
// step by step — the planner only ever asks the OwnerFn.
func TestPluggedOwnerRuleNeedsNoPlannerChange(t *testing.T) {
	cfg := spec.TreeConfig{PageSize: 1, CPSize: 2, CPDraftSize: 3}
	r := must(ref.NewRadixTreeOwned(cfg, zigzag{}))
	f, err := fast.NewRadixTreeOwned(cfg, zigzag{})
	if err != nil {
		t.Fatal(err)
	}
	steps := []func(spec.RadixTree) (any, error){
		func(tr spec.RadixTree) (any, error) {
			return tr.Insert(spec.RadixKey{Units: []spec.Unit{1, 2, 3, 4, 5, 6}}, nil, 0)
		},
		func(tr spec.RadixTree) (any, error) {
			return tr.Insert(spec.RadixKey{Units: []spec.Unit{1, 2, 3, 9}}, nil, 0)
		},
		func(tr spec.RadixTree) (any, error) { return tr.MatchPrefix(spec.RadixKey{Units: []spec.Unit{1}}) },
		func(tr spec.RadixTree) (any, error) {
			return tr.EvictOwnerLanes(spec.OwnerPlanRequest{CPSize: 3, Need: []int{0, 0, 2}, Free: []int{0, 0, 0}, DryRun: true})
		},
		func(tr spec.RadixTree) (any, error) {
			return tr.EvictOwnerLanes(spec.OwnerPlanRequest{CPSize: 5, Need: []int{0, 0, 0, 0, 1}, Free: []int{0, 0, 0, 0, 0}, DryRun: true})
		},
		func(tr spec.RadixTree) (any, error) {
			return tr.EvictOwnerLanes(spec.OwnerPlanRequest{Need: []int{2, 1}, Free: []int{0, 0}})
		},
	}
	for i, step := range steps {
		ro, rerr := step(r)
		fo, ferr := step(f)
		if diff := cmp.Diff(ro, fo); diff != "" || (rerr == nil) != (ferr == nil) {
			t.Fatalf("step %d: results differ (-ref +fast):\n%s\n%v / %v", i, diff, rerr, ferr)
		}
		if diff := cmp.Diff(r.State(), f.State()); diff != "" {
			t.Fatalf("step %d: states differ (-ref +fast):\n%s", i, diff)
		}
	}
	// The suffix [4 5 6] of node 1 sits at pages 3..5: zigzag owners 1, 1, 0
	// for N = 2 (round-robin would say 1, 0, 1).
	for _, n := range r.State().Nodes {
		if n.ID == 1 && !slices.Equal(n.CP.PageOwners, []uint16{1, 1, 0}) {
			t.Fatalf("node 1 owners %v under zigzag", n.CP.PageOwners)
		}
	}
}
