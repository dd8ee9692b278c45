package ref

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func buildOK(t *testing.T, sp LayoutSpec) Layout {
	t.Helper()
	lay, err := sp.Build()
	if err != nil {
		t.Fatal(err)
	}
	if err := lay.Validate(); err != nil {
		t.Fatalf("%+v: %v", sp, err)
	}
	return lay
}

// The worked examples of cp-layout.md §1.3 and §2.2.
func TestLayoutBuildersMatchTheWorkedExamples(t *testing.T) {
	for _, c := range []struct {
		sp   LayoutSpec
		s, v [][]int
		r    []int
		rv   []int
	}{
		{LayoutSpec{CP: 2, Lens: []int{10}}, [][]int{{3, 3, 2, 2}}, [][]int{{3, 3, 2, 2}}, []int{5, 5}, []int{5, 5}},
		{LayoutSpec{CP: 2, Lens: []int{8, 9}}, [][]int{{2, 2, 2, 2}, {3, 2, 2, 2}}, [][]int{{2, 2, 2, 2}, {3, 2, 2, 2}}, []int{9, 8}, []int{9, 8}},
		{LayoutSpec{CP: 2, Lens: []int{3, 4}, Granule: 1}, [][]int{{1, 1, 1, 1}, {1, 1, 1, 1}}, [][]int{{1, 1, 1, 0}, {1, 1, 1, 1}}, []int{4, 4}, []int{3, 4}},
		{LayoutSpec{CP: 2, Lens: []int{3, 9}, Granule: 2}, [][]int{{2, 2, 2, 2}, {4, 4, 4, 4}}, [][]int{{2, 1, 0, 0}, {4, 4, 1, 0}}, []int{12, 12}, []int{6, 6}},
		{LayoutSpec{CP: 2, Lens: []int{3}, Granule: 64}, [][]int{{64, 64, 64, 64}}, [][]int{{3, 0, 0, 0}}, []int{128, 128}, []int{3, 0}},
	} {
		lay := buildOK(t, c.sp)
		if diff := cmp.Diff(Layout{CP: c.sp.CP, L: c.sp.Lens, S: c.s, V: c.v}, lay); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", c.sp, diff)
		}
		for r := range lay.CP {
			if lay.R(r) != c.r[r] || lay.Rv(r) != c.rv[r] {
				t.Errorf("%+v rank %d: R=%d Rv=%d, want %d %d", c.sp, r, lay.R(r), lay.Rv(r), c.r[r], c.rv[r])
			}
		}
	}
}

func TestLaneSlotOffsetsFollowPrevThenMirror(t *testing.T) {
	lay := buildOK(t, LayoutSpec{CP: 2, Lens: []int{3, 9}, Granule: 2})
	// §2.2: request b's mirror slot on rank 1 starts at (2+4) + 2 = 8.
	if got := lay.SlotOff(1, LaneMirror, 1); got != 8 {
		t.Fatalf("SlotOff(1, mirror, 1) = %d, want 8", got)
	}
	if got := lay.SlotOff(0, LanePrev, 1); got != 2 {
		t.Fatalf("SlotOff(0, prev, 1) = %d, want 2", got)
	}
	if lay.Owner(3) != 0 || lay.Owner(2) != 1 || lay.LaneOf(2) != LaneMirror || lay.Mirror(0) != 3 {
		t.Fatal("owner/lane/mirror arithmetic")
	}
}

func TestLayoutRejectsBadBatches(t *testing.T) {
	for _, c := range []struct {
		sp   LayoutSpec
		want *Sentinel
	}{
		{LayoutSpec{CP: 1, Lens: []int{4}}, ErrInvalidCPSize},
		{LayoutSpec{CP: MaxCP + 1, Lens: []int{4}, Granule: 1}, ErrInvalidCPSize},
		{LayoutSpec{CP: 2}, ErrEmptyBatch},
		{LayoutSpec{CP: 2, Lens: []int{4, 0}, Granule: 1}, ErrBadLength},
		{LayoutSpec{CP: 2, Lens: []int{3}}, ErrTooShortForZigzag},
		{LayoutSpec{CP: 2, Lens: []int{3}, Granule: -1}, ErrInvalidGranule},
		{LayoutSpec{CP: 2, Lens: []int{1 << 30, 1 << 30}, Granule: 1}, ErrTooLarge},
	} {
		if _, err := c.sp.Build(); !errors.Is(err, c.want) {
			t.Errorf("%+v: %v, want %s", c.sp, err, c.want.Code())
		}
	}
	lay := buildOK(t, LayoutSpec{CP: 2, Lens: []int{3, 4}, Granule: 1})
	lay.V[0][3] = 1 // valid rows past L: no longer a prefix
	if err := lay.Validate(); !errors.Is(err, ErrLayoutMismatch) {
		t.Fatalf("broken V: %v", err)
	}
	if err := lay.CheckRank("rank", 2); !errors.Is(err, ErrRank) {
		t.Fatalf("rank 2 of cp 2: %v", err)
	}
}
