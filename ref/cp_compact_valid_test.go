package ref_test

import (
	"errors"
	"testing"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// firstThreeRows is §4.3's capacity router with one expert (E=1) of
// capacity c=3: the first three rows are admitted and come back XOR 1, any
// later row comes back zero.
func firstThreeRows(x spec.Rows) (spec.Rows, error) {
	out := ref.NewRows(x.W, x.N())
	for p := range min(3, x.N()) {
		for b, v := range x.Row(p) {
			out.Row(p)[b] = v ^ 1
		}
	}
	return out, nil
}

// TestMoEWithCompactionSeedMinimal pins docs/spec/cp-layout.md §4.5 / Appendix A4:
// rank 0 of padded cp2 g1 L[3,4] holds [a0 b0 P b3]; under the capacity
// router with E=1, c=3 the compacted rows a0 b0 b3 are all admitted, so b3
// is processed (XOR 1) and the pad row comes back zero.
func TestMoEWithCompactionSeedMinimal(t *testing.T) {
	sp := spec.LayoutSpec{CP: 2, Lens: []int{3, 4}, Granule: 1}
	x := localRows(t, sp, 0)
	y, err := ref.MoEWithCompaction(spec.DefaultLimits(), mustLayout(t, sp), 0, x, firstThreeRows)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{'a' ^ 1, 0 ^ 1, 'b' ^ 1, 0 ^ 1, 0, 0, 'b' ^ 1, 3 ^ 1}
	if string(y.B) != string(want) {
		t.Errorf("got %v, want %v", y.B, want)
	}
	// Without compaction the router admits a0 b0 PAD and drops b3.
	raw, _ := firstThreeRows(x)
	if raw.Row(3)[0] != 0 {
		t.Errorf("uncompacted run admitted b3: the minimal input does not show the bug")
	}
}

// TestCPCompactRestoreOps pins the two ops on §2.2's rank 1 and their
// bad-input table (§4.4).
func TestCPCompactRestoreOps(t *testing.T) {
	sp := spec.LayoutSpec{CP: 2, Lens: []int{3, 9}, Granule: 2}
	c, err := ref.CPCompactValid(spec.DefaultLimits(), spec.CPCompactValidInput{Layout: sp, Rank: 1, X: localRows(t, sp, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(c.Rows); got != "a2 b4 b5 b6 b7 b8" {
		t.Errorf("compact: %s", got)
	}
	y := spec.Rows{W: 1, B: []byte{1, 2, 3, 4, 5, 6}}
	r, err := ref.CPRestorePadded(spec.DefaultLimits(), spec.CPRestorePaddedInput{Layout: sp, Rank: 1, Y: y})
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{1, 0, 2, 3, 4, 5, 0, 0, 6, 0, 0, 0}; string(r.Rows.B) != string(want) {
		t.Errorf("restore: got %v, want %v", r.Rows.B, want)
	}
	if _, err := ref.CPCompactValid(spec.DefaultLimits(), spec.CPCompactValidInput{Layout: sp, Rank: 1, X: c.Rows}); !errors.Is(err, spec.ErrRowContract) {
		t.Errorf("compact of already-compacted rows: got %v, want row_contract", err)
	}
	if _, err := ref.CPRestorePadded(spec.DefaultLimits(), spec.CPRestorePaddedInput{Layout: sp, Rank: 1, Y: localRows(t, sp, 1)}); !errors.Is(err, spec.ErrRowCount) {
		t.Errorf("restore of R(r) rows: got %v, want row_count", err)
	}
	if _, err := ref.CPRestorePadded(spec.DefaultLimits(), spec.CPRestorePaddedInput{Layout: sp, Rank: 3, Y: y}); !errors.Is(err, spec.ErrRank) {
		t.Errorf("restore on rank 3: got %v, want rank", err)
	}
	big := spec.LayoutSpec{CP: 2, Lens: []int{3}, Granule: 1 << 20}
	if _, err := ref.CPRestorePadded(spec.Limits{MaxOutputBytes: 1 << 20}, spec.CPRestorePaddedInput{Layout: big, Y: spec.Rows{W: 2, B: make([]byte, 6)}}); !errors.Is(err, spec.ErrTooLarge) {
		t.Errorf("restore to 2^21 rows under 1 MiB: got %v, want too_large", err)
	}
	bad := func(spec.Rows) (spec.Rows, error) { return spec.Rows{W: 2, B: []byte{}}, nil }
	if _, err := ref.MoEWithCompaction(spec.DefaultLimits(), mustLayout(t, sp), 1, localRows(t, sp, 1), bad); !errors.Is(err, spec.ErrMoEShape) {
		t.Errorf("f dropping rows: got %v, want moe_shape", err)
	}
}
