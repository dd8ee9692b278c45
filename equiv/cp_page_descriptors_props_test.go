package equiv_test

import (
	"slices"
	"testing"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestPageDescriptorPropertiesCatchWrongDescriptors: each §6.2 descriptor
// property holds on ref's descriptors and fails on descriptors broken the
// way it guards against.
func TestPageDescriptorPropertiesCatchWrongDescriptors(t *testing.T) {
	sp := equiv.CPPageDescriptors()
	lim := spec.DefaultLimits()
	in := spec.CPPageDescriptorsInput{Pages: [][]int64{{7, 3}, {3, 9}}}
	good, err := ref.CPPageDescriptors(lim, in)
	if err != nil {
		t.Fatal(err)
	}
	broken := map[string]spec.CPPageDescriptorsOutput{
		// A dense per-row table: one entry per logical page up to the largest id.
		"csr-size-is-pages": {RowPtr: []int32{0, 10, 20}, Page: make([]int64, 20), Slot: make([]int32, 20)},
		// Window order kept: binary search would miss page 3 in row A.
		"sorted-within-row": {RowPtr: []int32{0, 2, 4}, Page: []int64{7, 3, 3, 9}, Slot: []int32{0, 1, 2, 3}},
		// Row B's page 3 pointed at row A's slot: the §6.4 alias.
		"slot-is-window-position": {RowPtr: []int32{0, 2, 4}, Page: []int64{3, 7, 3, 9}, Slot: []int32{1, 0, 1, 3}},
	}
	for _, p := range sp.Props {
		if err := p.Holds(lim, in, good); err != nil {
			t.Errorf("%s fails on ref's descriptors: %v", p.Name, err)
		}
		bad, ok := broken[p.Name]
		if !ok {
			t.Errorf("no broken descriptors for property %s", p.Name)
			continue
		}
		if propHolds(t, sp.Props, p.Name, in, bad) == nil {
			t.Errorf("%s holds on broken descriptors %+v", p.Name, bad)
		}
	}
}

// TestRemapPropertiesCatchWrongRemaps: each §6.2 remap property holds on
// ref's result and fails on a result broken the way it guards against.
func TestRemapPropertiesCatchWrongRemaps(t *testing.T) {
	sp := equiv.CPRemapLocs()
	lim := spec.DefaultLimits()
	shared := spec.CPRemapLocsInput{PageSize: 2, Pages: [][]int64{{7, 3}, {3, 9}},
		Locs: []int64{7, 7, 14, -1}, RowIDs: []int32{0, 1, 0, 1}}
	disjoint := spec.CPRemapLocsInput{PageSize: 2, Pages: [][]int64{{7, 3}, {9}},
		Locs: []int64{7, 14, 19, -1}, RowIDs: []int32{0, 0, 1, 1}}
	result := func(in spec.CPRemapLocsInput, f func([]int64)) spec.CPRemapLocsOutput {
		out, err := ref.CPRemapLocs(lim, in)
		if err != nil {
			t.Fatal(err)
		}
		out.Locs = slices.Clone(out.Locs)
		f(out.Locs)
		return out
	}
	broken := map[string]struct {
		in  spec.CPRemapLocsInput
		out spec.CPRemapLocsOutput
	}{
		// §6.4's global inverse: row A's loc 7 lands in row B's slot (5, not 3).
		"naive-map-lookup": {shared, result(shared, func(l []int64) { l[0] = 5 })},
		// Row ids honoured but slots taken in another (sorted) order.
		"row-free-equals-global": {disjoint, result(disjoint, func(l []int64) { l[0], l[1] = 1, 2 })},
		// Padding remapped to row 0 of the compact buffer, aliasing loc 14.
		"per-row-injective-in-range": {shared, result(shared, func(l []int64) { l[3] = 0 })},
	}
	for _, p := range sp.Props {
		for _, in := range []spec.CPRemapLocsInput{shared, disjoint} {
			if err := p.Holds(lim, in, result(in, func([]int64) {})); err != nil {
				t.Errorf("%s fails on ref's remap: %v", p.Name, err)
			}
		}
		b, ok := broken[p.Name]
		if !ok {
			t.Errorf("no broken remap for property %s", p.Name)
			continue
		}
		if propHolds(t, sp.Props, p.Name, b.in, b.out) == nil {
			t.Errorf("%s holds on broken remap %v", p.Name, b.out.Locs)
		}
	}
}
