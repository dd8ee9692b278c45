package ref_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// localRows returns rank r's SplitLocal rows of the tokRows batch.
func localRows(t *testing.T, sp spec.LayoutSpec, r int) spec.Rows {
	t.Helper()
	x, err := ref.SplitLocal(spec.DefaultLimits(), mustLayout(t, sp), r, tokRows(sp.Lens...), pad)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// TestCPValidRowsWorkedExample pins docs/spec/cp-layout.md §2.2 (padded cp=2, g=2,
// L=[3,9]) and Appendix A2/A3.
func TestCPValidRowsWorkedExample(t *testing.T) {
	sp := spec.LayoutSpec{CP: 2, Lens: []int{3, 9}, Granule: 2}
	out, err := ref.CPValidRows(spec.DefaultLimits(), spec.CPValidRowsInput{Layout: sp, Rank: 1, X: localRows(t, sp, 1)})
	if err != nil {
		t.Fatal(err)
	}
	want := spec.CPValidRowsOutput{
		ComputeSplitsRankMajor: []int{2, 4, 2, 4, 2, 4, 2, 4},
		ValidSplitsRankMajor:   []int{2, 4, 0, 0, 1, 4, 0, 1},
		SplitList:              []int{2, 2, 2, 2, 4, 4, 4, 4},
		ValidSplitList:         []int{2, 1, 0, 0, 4, 4, 1, 0},
		ZigzagIndex:            []int{1, 5, 2, 6},
		ReverseIndex:           []int{0, 4, 6, 2, 1, 5, 7, 3},
		LaneSlots: []spec.Slot{
			{Lane: spec.LanePrev, Req: 0, Seg: 1, Off: 0, ComputeLen: 2, ValidLen: 1},
			{Lane: spec.LanePrev, Req: 1, Seg: 1, Off: 2, ComputeLen: 4, ValidLen: 4},
			{Lane: spec.LaneMirror, Req: 0, Seg: 2, Off: 6, ComputeLen: 2, ValidLen: 0},
			{Lane: spec.LaneMirror, Req: 1, Seg: 2, Off: 8, ComputeLen: 4, ValidLen: 1},
		},
		ValidMask:     []bool{true, false, true, true, true, true, false, false, true, false, false, false},
		LocalTokenIDs: []spec.TokenID{{Req: 0, T: 2}, {Req: 1, T: 4}, {Req: 1, T: 5}, {Req: 1, T: 6}, {Req: 1, T: 7}, {Req: 1, T: 8}},
		LastTokenRows: []spec.LastTokenRow{{Rank: 1, LocalRow: 0, GlobalValidRow: 2}, {Rank: 1, LocalRow: 8, GlobalValidRow: 11}},
		Selected:      spec.Rows{W: 2, B: []byte{'a', 2, 'b', 4, 'b', 5, 'b', 6, 'b', 7, 'b', 8}},
	}
	if d := cmp.Diff(want, out); d != "" {
		t.Errorf("§2.2 (-want +got):\n%s", d)
	}
}

// TestCPValidRowsSeedMinimals pins §2.5's minimal inputs with the fixed
// answers: the rank-0 mask of padded cp2 g1 L[3,4] is [1,1,0,1] (not the
// suffix form [1,1,1,0]), and L[3]'s last token is rank 1 row 1 (a2), not
// rank 0 row 1 (PAD).
func TestCPValidRowsSeedMinimals(t *testing.T) {
	sp := spec.LayoutSpec{CP: 2, Lens: []int{3, 4}, Granule: 1}
	out, err := ref.CPValidRows(spec.DefaultLimits(), spec.CPValidRowsInput{Layout: sp, X: localRows(t, sp, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]bool{true, true, false, true}, out.ValidMask); d != "" {
		t.Errorf("mask (-want +got):\n%s", d)
	}
	if got := names(out.Selected); got != "a0 b0 b3" {
		t.Errorf("selected %q, want a0 b0 b3", got)
	}
	last := ref.LastTokenRows(mustLayout(t, spec.LayoutSpec{CP: 2, Lens: []int{3}, Granule: 1}))
	if d := cmp.Diff([]spec.LastTokenRow{{Rank: 1, LocalRow: 1, GlobalValidRow: 2}}, last); d != "" {
		t.Errorf("last token (-want +got):\n%s", d)
	}
}

// TestCPValidRowsRejectsWrongContract pins §2.4: a row count other than
// R(r) is a contract violation even when it equals Rv(r), the count a
// caller holding already-selected valid rows would pass.
func TestCPValidRowsRejectsWrongContract(t *testing.T) {
	sp := spec.LayoutSpec{CP: 2, Lens: []int{3, 4}, Granule: 1}
	sel := spec.Rows{W: 2, B: []byte{'a', 0, 'b', 0, 'b', 3}} // Rv(0) = 3 rows, R(0) = 4
	cases := []struct {
		in    spec.CPValidRowsInput
		want  *spec.Sentinel
		field string
	}{
		{spec.CPValidRowsInput{Layout: sp, X: sel}, spec.ErrRowContract, "x"},
		{spec.CPValidRowsInput{Layout: sp, Rank: 2, X: sel}, spec.ErrRank, "rank"},
		{spec.CPValidRowsInput{Layout: sp, Rank: -1, X: sel}, spec.ErrRank, "rank"},
		{spec.CPValidRowsInput{Layout: sp, X: spec.Rows{W: 2, B: []byte{1, 2, 3}}}, spec.ErrRowCount, "x.b"},
		{spec.CPValidRowsInput{Layout: spec.LayoutSpec{CP: 2, Lens: []int{3}}, X: sel}, spec.ErrTooShortForZigzag, "layout.lens[0]"},
	}
	for _, c := range cases {
		_, err := ref.CPValidRows(spec.DefaultLimits(), c.in)
		ie, ok := spec.AsInputError(err)
		if !ok || !errors.Is(err, c.want) || ie.Field != c.field || ie.Bound == "" {
			t.Errorf("rank %d, %d rows: got %v, want %s on %s", c.in.Rank, c.in.X.N(), err, c.want.Code(), c.field)
		}
	}
}
