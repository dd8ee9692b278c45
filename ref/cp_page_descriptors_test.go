package ref_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestPageDescriptorsSpecExample pins docs/spec/cp-layout.md §6.4's rows A: [7, 3],
// B: [3, 9]: slots A:7→0, A:3→1, B:3→2, B:9→3, sorted by page per row.
func TestPageDescriptorsSpecExample(t *testing.T) {
	got, err := ref.CPPageDescriptors(spec.DefaultLimits(), spec.CPPageDescriptorsInput{Pages: [][]int64{{7, 3}, {3, 9}}})
	if err != nil {
		t.Fatal(err)
	}
	want := spec.CPPageDescriptorsOutput{RowPtr: []int32{0, 2, 4}, Page: []int64{3, 7, 3, 9}, Slot: []int32{1, 0, 2, 3}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestCPRemapLocsSpecExample pins §6.4 / Appendix A6: loc 7 (page 3, offset
// 1) of row A remaps to 1·2+1 = 3 (the global inverse's 5 is the bug); the
// same loc of row B to 2·2+1 = 5; −1 passes through; and the legacy global
// path refuses the batch, whose rows share page 3.
func TestCPRemapLocsSpecExample(t *testing.T) {
	in := spec.CPRemapLocsInput{PageSize: 2, Pages: [][]int64{{7, 3}, {3, 9}},
		Locs: []int64{7, 7, 14, 19, -1}, RowIDs: []int32{0, 1, 0, 1, 1}}
	got, err := ref.CPRemapLocs(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	want := spec.CPRemapLocsOutput{Locs: []int64{3, 5, 0, 7, -1}, CompactRows: 8}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	in.Global, in.RowIDs = true, nil
	if _, err := ref.CPRemapLocs(spec.DefaultLimits(), in); !errors.Is(err, spec.ErrAmbiguousGlobalInverse) {
		t.Errorf("global remap of rows sharing page 3: got %v, want ambiguous_global_inverse", err)
	}
	in.Pages = [][]int64{{7, 3}, {9}}
	got, err = ref.CPRemapLocs(spec.DefaultLimits(), in)
	if want := []int64{3, 3, 0, 5, -1}; err != nil || !cmp.Equal(want, got.Locs) {
		t.Errorf("global remap without shared pages: got %v, %v; want %v", got.Locs, err, want)
	}
}

// TestCPRemapLocsRejectsBadInputNamingFieldAndBound pins §6.3 in its check
// order.
func TestCPRemapLocsRejectsBadInputNamingFieldAndBound(t *testing.T) {
	ok := func() spec.CPRemapLocsInput {
		return spec.CPRemapLocsInput{PageSize: 2, Pages: [][]int64{{7, 3}, {3, 9}}, Locs: []int64{7, -1}, RowIDs: []int32{0, 1}}
	}
	with := func(f func(*spec.CPRemapLocsInput)) spec.CPRemapLocsInput { in := ok(); f(&in); return in }
	cases := []struct {
		in    spec.CPRemapLocsInput
		want  *spec.Sentinel
		field string
	}{
		{with(func(in *spec.CPRemapLocsInput) { in.PageSize = 0 }), spec.ErrBadLoc, "page_size"},
		{with(func(in *spec.CPRemapLocsInput) { in.Pages[1] = []int64{3, -9} }), spec.ErrNegative, "pages[1][1]"},
		{with(func(in *spec.CPRemapLocsInput) { in.Pages[1] = []int64{3, 9, 3} }), spec.ErrDuplicatePageInRow, "pages[1][2]"},
		{with(func(in *spec.CPRemapLocsInput) { in.PageSize = 1 << 62 }), spec.ErrOverflow, "page_size"},
		{with(func(in *spec.CPRemapLocsInput) { in.RowIDs = []int32{0} }), spec.ErrRowCount, "row_ids"},
		{with(func(in *spec.CPRemapLocsInput) { in.Global = true }), spec.ErrRowCount, "row_ids"},
		{with(func(in *spec.CPRemapLocsInput) { in.Global, in.RowIDs = true, nil }), spec.ErrAmbiguousGlobalInverse, "pages[1][0]"},
		{with(func(in *spec.CPRemapLocsInput) { in.Locs[1] = -2 }), spec.ErrBadLoc, "locs[1]"},
		{with(func(in *spec.CPRemapLocsInput) { in.RowIDs[1] = 2 }), spec.ErrRowOutOfRange, "row_ids[1]"},
		{with(func(in *spec.CPRemapLocsInput) { in.RowIDs[0] = -1 }), spec.ErrRowOutOfRange, "row_ids[0]"},
		{with(func(in *spec.CPRemapLocsInput) { in.Locs[0] = 18 }), spec.ErrPageNotInRow, "locs[0]"},
		{with(func(in *spec.CPRemapLocsInput) {
			in.Global, in.RowIDs, in.Pages[1] = true, nil, []int64{9}
			in.Locs[0] = 8
		}), spec.ErrPageNotInRow, "locs[0]"},
	}
	for _, c := range cases {
		_, err := ref.CPRemapLocs(spec.DefaultLimits(), c.in)
		ie, isInput := spec.AsInputError(err)
		if !isInput || !errors.Is(err, c.want) || ie.Field != c.field || ie.Bound == "" {
			t.Errorf("%+v: got %v, want %s on field %s with a bound", c.in, err, c.want.Code(), c.field)
		}
	}
}
