package ref_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// tokRows builds the global valid rows of a batch whose requests are named
// by consecutive letters: request i's token t is the 2-byte row {'a'+i, t}.
func tokRows(lens ...int) spec.Rows {
	x := spec.Rows{W: 2, B: []byte{}}
	for i, l := range lens {
		for t := range l {
			x.B = append(x.B, byte('a'+i), byte(t))
		}
	}
	return x
}

// pad is the pad row the worked examples write as P.
var pad = []byte{'P', 'P'}

// names renders rows built by tokRows as "a0 b1 P …".
func names(x spec.Rows) string {
	var s []string
	for p := range x.N() {
		row := x.Row(p)
		if row[0] == 'P' {
			s = append(s, "P")
			continue
		}
		s = append(s, fmt.Sprintf("%c%d", row[0], row[1]))
	}
	return strings.Join(s, " ")
}

// TestCPSplitWorkedExamples pins docs/spec/cp-layout.md §1.3 (the lane bar dropped).
func TestCPSplitWorkedExamples(t *testing.T) {
	cases := []struct {
		name string
		sp   spec.LayoutSpec
		want []string
	}{
		{"unpadded cp2 L[10]", spec.LayoutSpec{CP: 2, Lens: []int{10}},
			[]string{"a0 a1 a2 a8 a9", "a3 a4 a5 a6 a7"}},
		{"unpadded cp2 L[8,9]", spec.LayoutSpec{CP: 2, Lens: []int{8, 9}},
			[]string{"a0 a1 b0 b1 b2 a6 a7 b7 b8", "a2 a3 b3 b4 a4 a5 b5 b6"}},
		{"padded cp2 g1 L[3,4]", spec.LayoutSpec{CP: 2, Lens: []int{3, 4}, Granule: 1},
			[]string{"a0 b0 P b3", "a1 b1 a2 b2"}},
		{"padded cp2 g2 L[3,9]", spec.LayoutSpec{CP: 2, Lens: []int{3, 9}, Granule: 2},
			[]string{"a0 a1 b0 b1 b2 b3 P P P P P P", "a2 P b4 b5 b6 b7 P P b8 P P P"}},
	}
	for _, c := range cases {
		in := spec.CPSplitInput{Layout: c.sp, X: tokRows(c.sp.Lens...), Pad: pad, Prefix: make([]int64, len(c.sp.Lens))}
		out, err := ref.CPSplit(spec.DefaultLimits(), in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []string
		for _, rk := range out.Ranks {
			got = append(got, names(rk.Rows))
		}
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, d)
		}
	}
}

// TestCPSplitTinyExtendAndPositions pins §1.3's g=64 tiny extend (S=64,
// C=256, V=[3,0,0,0]) and PositionsLocal's continuing positions P_i + c.
func TestCPSplitTinyExtendAndPositions(t *testing.T) {
	lay, err := spec.BuildLayoutPadded(2, []int{3}, 64)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([][]int{{64, 64, 64, 64}}, lay.S); d != "" {
		t.Errorf("S (-want +got):\n%s", d)
	}
	if d := cmp.Diff([][]int{{3, 0, 0, 0}}, lay.V); d != "" {
		t.Errorf("V (-want +got):\n%s", d)
	}
	pos, err := ref.PositionsLocal(lay, 1, []int64{100})
	if err != nil {
		t.Fatal(err)
	}
	// Rank 1: segment 1 (compute 64..127) then segment 2 (128..191).
	if pos[0] != 164 || pos[63] != 227 || pos[64] != 228 || pos[127] != 291 {
		t.Errorf("rank 1 positions %v…, want 164..227 then 228..291", pos[:3])
	}
}

// TestCPSplitRejectsBadInput pins §1.5: sentinel, JSON path, bound.
func TestCPSplitRejectsBadInput(t *testing.T) {
	ok := func() spec.CPSplitInput {
		return spec.CPSplitInput{Layout: spec.LayoutSpec{CP: 2, Lens: []int{3, 4}, Granule: 1}, X: tokRows(3, 4), Pad: pad, Prefix: []int64{0, 5}}
	}
	with := func(f func(*spec.CPSplitInput)) spec.CPSplitInput { in := ok(); f(&in); return in }
	cases := []struct {
		in    spec.CPSplitInput
		want  *spec.Sentinel
		field string
	}{
		{with(func(in *spec.CPSplitInput) { in.Layout.CP = 1 }), spec.ErrInvalidCPSize, "layout.cp"},
		{with(func(in *spec.CPSplitInput) { in.Layout.Lens = []int{} }), spec.ErrEmptyBatch, "layout.lens"},
		{with(func(in *spec.CPSplitInput) { in.Layout.Lens = []int{3, 0} }), spec.ErrBadLength, "layout.lens[1]"},
		{with(func(in *spec.CPSplitInput) { in.Layout.Granule = 0 }), spec.ErrTooShortForZigzag, "layout.lens[0]"},
		{with(func(in *spec.CPSplitInput) { in.Layout.Granule = -1 }), spec.ErrInvalidGranule, "layout.granule"},
		{with(func(in *spec.CPSplitInput) { in.Layout.Lens = []int{1 << 30, 1 << 30} }), spec.ErrTooLarge, "layout.lens"},
		{with(func(in *spec.CPSplitInput) { in.Prefix = []int64{0} }), spec.ErrLengthMismatch, "prefix"},
		{with(func(in *spec.CPSplitInput) { in.Prefix[1] = -1 }), spec.ErrNegative, "prefix[1]"},
		{with(func(in *spec.CPSplitInput) { in.Prefix[0] = 1<<63 - 2 }), spec.ErrOverflow, "prefix[0]"},
		{with(func(in *spec.CPSplitInput) { in.X = tokRows(3, 3) }), spec.ErrRowCount, "x"},
		{with(func(in *spec.CPSplitInput) { in.X.B = in.X.B[:13] }), spec.ErrRowCount, "x.b"},
		{with(func(in *spec.CPSplitInput) { in.X.W = 0 }), spec.ErrRowCount, "x.w"},
		{with(func(in *spec.CPSplitInput) { in.Pad = []byte{1} }), spec.ErrRowCount, "pad"},
	}
	for _, c := range cases {
		_, err := ref.CPSplit(spec.DefaultLimits(), c.in)
		ie, isInput := spec.AsInputError(err)
		if !isInput || !errors.Is(err, c.want) || ie.Field != c.field || ie.Bound == "" {
			t.Errorf("%+v: got %v, want %s on field %s with a bound", c.in.Layout, err, c.want.Code(), c.field)
		}
	}
	small := spec.Limits{MaxOutputBytes: 1 << 20}
	if _, err := ref.CPSplit(small, with(func(in *spec.CPSplitInput) { in.Layout.Granule = 1 << 20 })); !errors.Is(err, spec.ErrTooLarge) {
		t.Errorf("granule 2^20 under a 1 MiB limit: got %v, want too_large before allocating", err)
	}
	if _, err := ref.SplitLocal(spec.DefaultLimits(), mustLayout(t, ok().Layout), 2, tokRows(3, 4), pad); !errors.Is(err, spec.ErrRank) {
		t.Errorf("SplitLocal rank 2 of cp 2: got %v, want rank", err)
	}
}

func mustLayout(t *testing.T, sp spec.LayoutSpec) spec.Layout {
	t.Helper()
	lay, err := sp.Build()
	if err != nil {
		t.Fatal(err)
	}
	return lay
}

// TestCPSplitRejectsAGranuleWhoseSegmentsOverflow is the hostile-input
// harness's finding on cp.split: with cp=4 a granule of 2^61 made the 2·cp
// segments' 2^64 compute rows wrap to 0, so the layout passed the row bound
// and the split then sized its rows (and loops) by the granule.
func TestCPSplitRejectsAGranuleWhoseSegmentsOverflow(t *testing.T) {
	in := spec.CPSplitInput{Layout: spec.LayoutSpec{CP: 4, Lens: []int{3}, Granule: 1 << 61}, X: tokRows(3), Pad: pad, Prefix: []int64{0}}
	_, err := ref.CPSplit(spec.DefaultLimits(), in)
	if ie, ok := spec.AsInputError(err); !ok || !errors.Is(err, spec.ErrTooLarge) || ie.Field != "layout.granule" {
		t.Fatalf("got %v, want too_large at layout.granule", err)
	}
}
