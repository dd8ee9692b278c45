package spec

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

// The worked examples of docs/spec/cp-layout.md §1.3 and §2.2.
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

// TestLayoutRejectsAGranuleOrLengthWhoseComputeRowsOverflow pins §1.5's
// Σ C_i >= 2^31 → ErrTooLarge for the sizes whose compute rows overflow
// int64 when formed naively: ceil(L/g) as (L+g−1)/g wraps for L or g near
// 2^63, and 2·cp·u·g wraps for g >= 2^63/(2·cp), either leaving a small or
// negative total that passed the bound and a layout that later ops indexed
// out of range (or looped over for ever). A granule whose 2·cp segments
// alone exceed the bound is named as the granule; a request whose valid
// length alone exceeds it, as that request.
func TestLayoutRejectsAGranuleOrLengthWhoseComputeRowsOverflow(t *testing.T) {
	const maxInt = 1<<63 - 1
	for _, c := range []struct {
		sp    LayoutSpec
		field string
		value int
	}{
		{LayoutSpec{CP: 2, Lens: []int{3, 9}, Granule: 1 << 61}, "granule", 1 << 61},
		{LayoutSpec{CP: 4, Lens: []int{3}, Granule: 1 << 61}, "granule", 1 << 61},
		{LayoutSpec{CP: 2, Lens: []int{3, 9}, Granule: maxInt}, "granule", maxInt},
		{LayoutSpec{CP: 2, Lens: []int{3}, Granule: MaxLayoutRows/4 + 1}, "granule", MaxLayoutRows/4 + 1},
		{LayoutSpec{CP: 2, Lens: []int{maxInt, 9}, Granule: 2}, "lens[0]", maxInt},
		{LayoutSpec{CP: 2, Lens: []int{3, maxInt}, Granule: 2}, "lens[1]", maxInt},
		{LayoutSpec{CP: 2, Lens: []int{5, maxInt}}, "lens[1]", maxInt},
		{LayoutSpec{CP: 2, Lens: []int{MaxLayoutRows + 1}}, "lens[0]", MaxLayoutRows + 1},
	} {
		_, err := c.sp.Build()
		ie, ok := AsInputError(err)
		if !ok || !errors.Is(err, ErrTooLarge) || ie.Field != c.field || ie.Value != any(c.value) || ie.Bound == "" {
			t.Errorf("%+v: got %v, want too_large at %s = %d with a bound", c.sp, err, c.field, c.value)
		}
	}
	// The largest granule the bound admits still builds when the batch fits.
	g := MaxLayoutRows / 4
	if lay := buildOK(t, LayoutSpec{CP: 2, Lens: []int{3}, Granule: g}); lay.ComputeLen(0) != 4*g {
		t.Errorf("granule %d: compute length %d, want %d", g, lay.ComputeLen(0), 4*g)
	}
}

// TestBuildWithinCountsTheLayoutAsAnOutput: S and V hold B·4·cp sizes, a
// number cp multiplies, so BuildWithin checks them against the limits like
// an output (field "cp", B·4·cp elements of 8 bytes) — after every §1.5
// check, so a bad spec is reported as before, and before allocating.
func TestBuildWithinCountsTheLayoutAsAnOutput(t *testing.T) {
	lim := Limits{MaxOutputBytes: 1 << 20}
	ones := func(n int) []int {
		lens := make([]int, n)
		for i := range lens {
			lens[i] = 1
		}
		return lens
	}
	// 4096 requests × 4·1024 sizes × 8 bytes = 128 MiB of sizes.
	big := LayoutSpec{CP: MaxCP, Lens: ones(4096), Granule: 1}
	_, err := big.BuildWithin(lim)
	if ie, ok := AsInputError(err); !ok || !errors.Is(err, ErrTooLarge) || ie.Field != "cp" || ie.Value != any(int64(4096*4*MaxCP)) {
		t.Errorf("cp %d × 4096 requests: got %v, want too_large at cp = %d", MaxCP, err, 4096*4*MaxCP)
	}
	bad := big
	bad.Lens = append(ones(4095), 0)
	if _, err := bad.BuildWithin(lim); !errors.Is(err, ErrBadLength) {
		t.Errorf("a bad length with a large layout: got %v, want bad_length first", err)
	}
	// 32 requests × 4·2 sizes × 8 bytes = 2 KiB: within the bound, and the
	// same layout Build builds.
	small := LayoutSpec{CP: 2, Lens: ones(32), Granule: 1}
	got, err := small.BuildWithin(Limits{MaxOutputBytes: 2 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(buildOK(t, small), got); diff != "" {
		t.Errorf("BuildWithin differs from Build (-Build +BuildWithin):\n%s", diff)
	}
	if _, err := small.BuildWithin(Limits{MaxOutputBytes: 2<<10 - 1}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("one byte below the layout's size: got %v, want too_large", err)
	}
}
