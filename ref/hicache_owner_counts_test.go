package ref

import (
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kvtwin/kvtwin/spec"
)

func closed(s, n, cp int) []int32 {
	c := make([]int32, cp)
	ClosedFormCounts(s, n, cp, c)
	return c
}

// TestOwnerCountsWorkedExamples are the examples of docs/spec/radix-acks.md §4.2.
func TestOwnerCountsWorkedExamples(t *testing.T) {
	for _, c := range []struct {
		name        string
		cp, s, n    int
		owners      []uint16
		counts      []int32
		wantZeroOwn []int
	}{
		{"N=4 s=3 n=6", 4, 3, 6, []uint16{3, 0, 1, 2, 3, 0}, []int32{2, 1, 1, 2}, nil},
		{"split whole node", 2, 0, 4, []uint16{0, 1, 0, 1}, []int32{2, 2}, nil},
		{"split prefix", 2, 0, 1, []uint16{0}, []int32{1, 0}, []int{1}},
		{"split suffix", 2, 1, 3, []uint16{1, 0, 1}, []int32{1, 2}, nil},
		{"zero-owned ranks 3..7", 8, 0, 3, []uint16{0, 1, 2}, []int32{1, 1, 1, 0, 0, 0, 0, 0}, []int{3, 4, 5, 6, 7}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := pageOwnersOf(RoundRobin{}, c.s, c.n, c.cp); !slices.Equal(got, c.owners) {
				t.Errorf("owners %v, want %v", got, c.owners)
			}
			enumerated := EnumerateOwnerCounts(RoundRobin{}, c.s, c.n, 1, c.cp)
			if got := closed(c.s, c.n, c.cp); !slices.Equal(got, c.counts) || !slices.Equal(enumerated, c.counts) {
				t.Errorf("closed form %v, enumerated %v, want %v", got, enumerated, c.counts)
			}
			var zero []int
			for r, v := range c.counts {
				if v == 0 {
					zero = append(zero, r)
				}
			}
			if !slices.Equal(zero, c.wantZeroOwn) {
				t.Errorf("zero-owned ranks %v, want %v", zero, c.wantZeroOwn)
			}
		})
	}
}

// TestThreeComputationsAgreeExhaustively is O1 over every small node:
// enumeration from the token depth (with page padding), the closed form
// and the generic range count agree for s < 3N, n <= 3N, N <= 9, ps in
// {1, 4}.
func TestThreeComputationsAgreeExhaustively(t *testing.T) {
	for cp := 1; cp <= 9; cp++ {
		for s := range 3 * cp {
			for n := 0; n <= 3*cp; n++ {
				for _, ps := range []int{1, 4} {
					e := EnumerateOwnerCounts(RoundRobin{}, s*ps, n*ps, ps, cp)
					g := make([]int32, cp)
					CountRange(pageWalk{}, s, n, cp, g)
					if c := closed(s, n, cp); !slices.Equal(e, c) || !slices.Equal(e, g) {
						t.Fatalf("N=%d s=%d n=%d ps=%d: enumerated %v, closed %v, walked %v", cp, s, n, ps, e, c, g)
					}
				}
			}
		}
	}
}

// pageWalk is round-robin without a range count, so CountRange walks.
type pageWalk struct{}

func (pageWalk) Owner(q, n int) int { return q % n }

// TestEnumerationPadsPartialPages: the old path padded the node's slot
// tensor to whole pages, so a partial last page counts as a page.
func TestEnumerationPadsPartialPages(t *testing.T) {
	if got := EnumerateOwnerCounts(RoundRobin{}, 8, 5, 4, 2); !slices.Equal(got, []int32{1, 1}) {
		t.Fatalf("5 tokens at depth 8, ps 4, N 2: %v, want pages 2 and 3 → [1 1]", got)
	}
}

// TestTreeStateCarriesOwnerMetadata: with CP on, every node's state has the
// metadata of §4.2 for each configured size; with CP off none has.
func TestTreeStateCarriesOwnerMetadata(t *testing.T) {
	tr := newTree(t, spec.TreeConfig{PageSize: 2, CPSize: 4, CPDraftSize: 3})
	insert(t, tr, key(1, 2, 3, 4, 5, 6), nil, 0)
	insert(t, tr, key(1, 2, 3, 4, 7, 8, 9, 9), nil, 4)
	st := tr.State()
	if err := CheckOwnerState(st); err != nil {
		t.Fatal(err)
	}
	want := &spec.NodeCP{StartPage: 2, NumPages: 2, PageOwners: []uint16{2, 3},
		OwnerCounts: []spec.CPCounts{{CPSize: 4, Counts: []int32{0, 0, 1, 1}}, {CPSize: 3, Counts: []int32{1, 0, 1}}}}
	if diff := cmp.Diff(want, st.Nodes[3].CP); diff != "" {
		t.Fatalf("leaf 3 (-want +got):\n%s", diff)
	}
	off := newTree(t, spec.TreeConfig{PageSize: 1})
	insert(t, off, key(1), nil, 0)
	for _, n := range off.State().Nodes {
		if n.CP != nil {
			t.Fatalf("node %d has metadata with CP off", n.ID)
		}
	}
}

// TestCheckOwnerStateCatchesEachLie: the state checker fails on metadata
// broken each way §4.3 guards against.
func TestCheckOwnerStateCatchesEachLie(t *testing.T) {
	tr := newTree(t, spec.TreeConfig{PageSize: 1, CPSize: 2})
	insert(t, tr, key(1, 2, 3, 4), nil, 0)
	match(t, tr, key(1), []spec.SlotIdx{1}, 2)
	for name, breakIt := range map[string]func(*spec.TreeState){
		"start page":    func(st *spec.TreeState) { st.Nodes[1].CP.StartPage = 0 },
		"page count":    func(st *spec.TreeState) { st.Nodes[1].CP.NumPages = 4 },
		"page owner":    func(st *spec.TreeState) { st.Nodes[1].CP.PageOwners[0] = 0 },
		"unsplit count": func(st *spec.TreeState) { st.Nodes[1].CP.OwnerCounts[0].Counts = []int32{2, 2} },
		"missing":       func(st *spec.TreeState) { st.Nodes[2].CP = nil },
		"size":          func(st *spec.TreeState) { st.Nodes[2].CP.OwnerCounts[0].CPSize = 3 },
	} {
		st := tr.State()
		breakIt(&st)
		if CheckOwnerState(st) == nil {
			t.Errorf("%s: a broken state passes", name)
		}
	}
}

// workedPlanTree is the tree of §4.4's worked example (N = 2, ps = 1):
// leaves L3 = node 2 ([1,0]), L1 = node 4 ([1,1]), L2 = node 6 ([2,1]) in
// LRU order, their parents 1, 3, 5 locked by other requests.
func workedPlanTree(t *testing.T, newTree spec.NewRadixTreeFunc) spec.RadixTree {
	tr, err := newTree(spec.TreeConfig{PageSize: 1, CPSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range [][]spec.Unit{{10, 11}, {10, 11, 12}, {20, 21, 22, 23}, {20, 21, 22, 23, 24, 25}, {30, 31, 32, 33}, {30, 31, 32, 33, 34, 35, 36}} {
		if _, err := tr.Insert(key(k...), nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []spec.NodeID{1, 3, 5} {
		if _, err := tr.IncLockRef(id); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

// TestOwnerPlanWorkedExample is docs/spec/radix-acks.md §4.4's worked example.
func TestOwnerPlanWorkedExample(t *testing.T) {
	tr := workedPlanTree(t, NewRadixTree)
	for _, c := range []struct {
		need      []int
		victims   []spec.NodeID
		remaining []int
	}{
		{[]int{0, 1}, []spec.NodeID{4}, []int{0, 0}},       // L3 skipped, L1 taken
		{[]int{3, 0}, []spec.NodeID{2, 4, 6}, []int{0, 0}}, // L3, L1, L2
		{[]int{0, 5}, []spec.NodeID{4, 6}, []int{0, 3}},    // refused
	} {
		p, err := tr.EvictOwnerLanes(spec.OwnerPlanRequest{Need: c.need, Free: []int{0, 0}, DryRun: true})
		if err != nil || !slices.Equal(p.Victims, c.victims) || !slices.Equal(p.Remaining, c.remaining) || p.Admitted != (c.remaining[1] == 0) {
			t.Errorf("deficit %v: %+v, %v; want victims %v remaining %v", c.need, p, err, c.victims, c.remaining)
		}
	}
	before := tr.State()
	p, _ := tr.EvictOwnerLanes(spec.OwnerPlanRequest{Need: []int{0, 5}, Free: []int{0, 0}})
	after := tr.State()
	if p.Admitted || len(p.Freed) != 0 || after.LoadRefusals != 1 || len(after.Nodes) != len(before.Nodes) {
		t.Fatalf("a refused plan must evict nothing and count one refusal: %+v, refusals %d", p, after.LoadRefusals)
	}
	p, _ = tr.EvictOwnerLanes(spec.OwnerPlanRequest{Need: []int{0, 1}, Free: []int{0, 0}})
	if !p.Admitted || p.Evicted != 2 || !cmp.Equal(p.Freed, [][]spec.SlotIdx{{24, 25}}) || tr.EvictableSize() != 4 {
		t.Fatalf("an admitted plan evicts L1: %+v, evictable %d", p, tr.EvictableSize())
	}
}

// TestOwnerPlanBadInput: each bad request is rejected with its sentinel,
// field and bound, in validation order, and changes nothing.
func TestOwnerPlanBadInput(t *testing.T) {
	tr := workedPlanTree(t, NewRadixTree)
	off := newTree(t, spec.TreeConfig{PageSize: 1})
	for _, c := range []struct {
		name  string
		tree  spec.RadixTree
		req   spec.OwnerPlanRequest
		want  *spec.Sentinel
		field string
	}{
		{"negative cp_size", tr, spec.OwnerPlanRequest{CPSize: -1, Need: []int{1}, Free: []int{0}}, spec.ErrBadCPSize, "cp_size"},
		{"cp_size too large", tr, spec.OwnerPlanRequest{CPSize: spec.MaxCPSize + 1}, spec.ErrBadCPSize, "cp_size"},
		{"no size to default to", off, spec.OwnerPlanRequest{Need: []int{1}, Free: []int{0}}, spec.ErrBadCPSize, "cp_size"},
		{"need too short", tr, spec.OwnerPlanRequest{Need: []int{1}, Free: []int{0}}, spec.ErrLengthMismatch, "need"},
		{"free too long", tr, spec.OwnerPlanRequest{Need: []int{1, 0}, Free: []int{0, 0, 0}}, spec.ErrLengthMismatch, "free"},
		{"negative need", tr, spec.OwnerPlanRequest{Need: []int{1, -1}, Free: []int{-1, 0}}, spec.ErrNegative, "need[1]"},
		{"negative free", tr, spec.OwnerPlanRequest{Need: []int{1, 1}, Free: []int{0, -3}}, spec.ErrNegative, "free[1]"},
		{"unknown load node", tr, spec.OwnerPlanRequest{Need: []int{1, 1}, Free: []int{0, 0}, Locked: 99}, spec.ErrForeignNode, "node"},
	} {
		before := c.tree.State()
		_, err := c.tree.EvictOwnerLanes(c.req)
		ie, ok := spec.AsInputError(err)
		if !errors.Is(err, c.want) || !ok || ie.Field != c.field || ie.Bound == "" {
			t.Errorf("%s: %v, want %s on %s", c.name, err, c.want.Code(), c.field)
		}
		if diff := cmp.Diff(before, c.tree.State()); diff != "" {
			t.Errorf("%s: a rejected plan changed the tree:\n%s", c.name, diff)
		}
	}
}

// TestTreeConfigCPSizes: CP sizes outside [1, MaxCPSize], a draft size
// without a main one and a draft equal to the main one are ErrBadCPSize.
func TestTreeConfigCPSizes(t *testing.T) {
	for _, c := range []struct {
		cfg   spec.TreeConfig
		field string
	}{
		{spec.TreeConfig{PageSize: 1, CPSize: -1}, "cp_size"},
		{spec.TreeConfig{PageSize: 1, CPSize: spec.MaxCPSize + 1}, "cp_size"},
		{spec.TreeConfig{PageSize: 1, CPDraftSize: 2}, "cp_draft_size"},
		{spec.TreeConfig{PageSize: 1, CPSize: 2, CPDraftSize: 2}, "cp_draft_size"},
		{spec.TreeConfig{PageSize: 1, CPSize: 2, CPDraftSize: -4}, "cp_draft_size"},
	} {
		err := c.cfg.Validate()
		if ie, ok := spec.AsInputError(err); !errors.Is(err, spec.ErrBadCPSize) || !ok || ie.Field != c.field {
			t.Errorf("%+v: %v, want bad_cp_size on %s", c.cfg, err, c.field)
		}
	}
	if err := (spec.TreeConfig{PageSize: 1, CPSize: spec.MaxCPSize, CPDraftSize: 1}).Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestOwnerCountsOpBadInput is hicache.owner_counts's bad-input table.
func TestOwnerCountsOpBadInput(t *testing.T) {
	for _, c := range []struct {
		in    spec.HiCacheOwnerCountsInput
		want  *spec.Sentinel
		field string
	}{
		{spec.HiCacheOwnerCountsInput{CPSize: 2, PageSize: 0}, spec.ErrInvalidPageSize, "page_size"},
		{spec.HiCacheOwnerCountsInput{CPSize: 0, PageSize: 1}, spec.ErrBadCPSize, "cp_size"},
		{spec.HiCacheOwnerCountsInput{CPSize: spec.MaxCPSize + 1, PageSize: 1}, spec.ErrBadCPSize, "cp_size"},
		{spec.HiCacheOwnerCountsInput{CPSize: 2, PageSize: 1, TokenDepth: -1}, spec.ErrNegative, "token_depth"},
		{spec.HiCacheOwnerCountsInput{CPSize: 2, PageSize: 1, Tokens: -1}, spec.ErrNegative, "tokens"},
		{spec.HiCacheOwnerCountsInput{CPSize: 2, PageSize: 4, TokenDepth: 6}, spec.ErrUnalignedKey, "token_depth"},
		{spec.HiCacheOwnerCountsInput{CPSize: 2, PageSize: 4, Tokens: 6}, spec.ErrUnalignedKey, "tokens"},
		{spec.HiCacheOwnerCountsInput{CPSize: 2, PageSize: 1, TokenDepth: 1 << 62, Tokens: 1 << 62}, spec.ErrOverflow, "tokens"},
		{spec.HiCacheOwnerCountsInput{CPSize: 2, PageSize: 1, Tokens: 1 << 40}, spec.ErrTooLarge, "tokens"},
	} {
		_, err := HiCacheOwnerCounts(spec.DefaultLimits(), c.in)
		if ie, ok := spec.AsInputError(err); !errors.Is(err, c.want) || !ok || ie.Field != c.field {
			t.Errorf("%+v: %v, want %s on %s", c.in, err, c.want.Code(), c.field)
		}
	}
}
