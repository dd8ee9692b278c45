package equiv_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/ref"
)

// cpRowsOf returns n rows of width w whose bytes depend on their index,
// none equal to the 0xEE pad row.
func cpRowsOf(w, n int) ref.Rows {
	x := ref.NewRows(w, n)
	for i := range x.B {
		x.B[i] = byte(i*7 + i/w)
	}
	return x
}

func cloneRows(x ref.Rows) ref.Rows { return ref.Rows{W: x.W, B: bytes.Clone(x.B)} }

// swapRows swaps rows a and b of x in place.
func swapRows(x ref.Rows, a, b int) {
	ra, rb := bytes.Clone(x.Row(a)), x.Row(b)
	copy(x.Row(a), rb)
	copy(x.Row(b), ra)
}

// checkProps requires every property to hold on (in, good) and each to
// fail on the broken output listed under its name.
func checkProps[In, Out any](t *testing.T, props []equiv.Prop[In, Out], in In, good Out, broken map[string]func() (In, Out)) {
	t.Helper()
	for _, p := range props {
		if err := p.Holds(ref.DefaultLimits(), in, good); err != nil {
			t.Errorf("%s fails on ref's result: %v", p.Name, err)
		}
		mk, ok := broken[p.Name]
		if !ok {
			t.Errorf("no broken result for property %s", p.Name)
			continue
		}
		bin, bout := mk()
		if err := p.Holds(ref.DefaultLimits(), bin, bout); err == nil {
			t.Errorf("%s holds on a result broken the way it guards against", p.Name)
		}
	}
}

// TestCPSplitPropertiesCatchWrongSplits: §2.2's layout (padded cp=2, g=2,
// L=[3,9]) and §1.3's unpadded L=[10] for the bs=1 property.
func TestCPSplitPropertiesCatchWrongSplits(t *testing.T) {
	run := func(sp ref.LayoutSpec, prefix []int64) (ref.CPSplitInput, ref.CPSplitOutput) {
		n := 0
		for _, l := range sp.Lens {
			n += l
		}
		in := ref.CPSplitInput{Layout: sp, X: cpRowsOf(3, n), Pad: []byte{0xEE, 0xEE, 0xEE}, Prefix: prefix}
		out, err := ref.CPSplit(ref.DefaultLimits(), in)
		if err != nil {
			t.Fatal(err)
		}
		return in, out
	}
	in, good := run(ref.LayoutSpec{CP: 2, Lens: []int{3, 9}, Granule: 2}, []int64{0, 5})
	bs1, bs1Good := run(ref.LayoutSpec{CP: 2, Lens: []int{10}}, []int64{0})
	clone := func(o ref.CPSplitOutput) ref.CPSplitOutput {
		c := ref.CPSplitOutput{Ranks: slices.Clone(o.Ranks)}
		for r := range c.Ranks {
			c.Ranks[r].Rows, c.Ranks[r].Positions = cloneRows(o.Ranks[r].Rows), slices.Clone(o.Ranks[r].Positions)
		}
		return c
	}
	swapped := func() (ref.CPSplitInput, ref.CPSplitOutput) { // a0 <-> b0 on rank 0
		o := clone(good)
		swapRows(o.Ranks[0].Rows, 0, 2)
		return in, o
	}
	checkProps(t, equiv.CPSplit().Props, in, good, map[string]func() (ref.CPSplitInput, ref.CPSplitOutput){
		"layout-shape": func() (ref.CPSplitInput, ref.CPSplitOutput) {
			return in, ref.CPSplitOutput{Ranks: good.Ranks[:1]}
		},
		"partition": swapped,
		"pad-count": func() (ref.CPSplitInput, ref.CPSplitOutput) { // a PAD row replaced by a0
			o := clone(good)
			copy(o.Ranks[0].Rows.Row(6), in.X.Row(0))
			return in, o
		},
		"rerange-roundtrip": swapped,
		"upstream-bs1": func() (ref.CPSplitInput, ref.CPSplitOutput) {
			o := clone(bs1Good)
			swapRows(o.Ranks[0].Rows, 0, 1)
			return bs1, o
		},
		"positions-continue": func() (ref.CPSplitInput, ref.CPSplitOutput) {
			o := clone(good)
			o.Ranks[1].Positions[6]++
			return in, o
		},
	})
}

// TestCPValidRowsPropertiesCatchWrongMetadata: §2.2's rank 1.
func TestCPValidRowsPropertiesCatchWrongMetadata(t *testing.T) {
	sp := ref.LayoutSpec{CP: 2, Lens: []int{3, 9}, Granule: 2}
	in := ref.CPValidRowsInput{Layout: sp, Rank: 1, X: cpRowsOf(2, 12)}
	good, err := ref.CPValidRows(ref.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	with := func(f func(o *ref.CPValidRowsOutput)) func() (ref.CPValidRowsInput, ref.CPValidRowsOutput) {
		return func() (ref.CPValidRowsInput, ref.CPValidRowsOutput) {
			o := good
			o.ValidSplitsRankMajor, o.ReverseIndex = slices.Clone(good.ValidSplitsRankMajor), slices.Clone(good.ReverseIndex)
			o.LaneSlots, o.ValidMask = slices.Clone(good.LaneSlots), slices.Clone(good.ValidMask)
			o.LastTokenRows, o.Selected = slices.Clone(good.LastTokenRows), cloneRows(good.Selected)
			f(&o)
			return in, o
		}
	}
	checkProps(t, equiv.CPValidRows().Props, in, good, map[string]func() (ref.CPValidRowsInput, ref.CPValidRowsOutput){
		"split-sums":    with(func(o *ref.CPValidRowsOutput) { o.ValidSplitsRankMajor[2]++ }),
		"mask-popcount": with(func(o *ref.CPValidRowsOutput) { o.ValidMask[1] = true }),
		"reverse-index": with(func(o *ref.CPValidRowsOutput) {
			o.ReverseIndex[0], o.ReverseIndex[1] = o.ReverseIndex[1], o.ReverseIndex[0]
		}),
		"lane-slots-tile":         with(func(o *ref.CPValidRowsOutput) { o.LaneSlots[1].Off++ }),
		"last-token-owned-once":   with(func(o *ref.CPValidRowsOutput) { o.LastTokenRows[1].LocalRow = 9 }), // a PAD
		"selected-are-token-rows": with(func(o *ref.CPValidRowsOutput) { swapRows(o.Selected, 0, 1) }),
	})
}

// TestCPRerangePropertiesCatchWrongOrder: §3.3 (padded, M=13 with a
// static row per rank) and §1.3's unpadded L=[8,9] for P3.4.
func TestCPRerangePropertiesCatchWrongOrder(t *testing.T) {
	run := func(sp ref.LayoutSpec, m int) (ref.CPRerangeInput, ref.CPRerangeOutput) {
		in := ref.CPRerangeInput{Layout: sp, G: cpRowsOf(2, 2*m), M: m}
		out, err := ref.CPRerange(ref.DefaultLimits(), in)
		if err != nil {
			t.Fatal(err)
		}
		return in, out
	}
	in, good := run(ref.LayoutSpec{CP: 2, Lens: []int{3, 9}, Granule: 2}, 13)
	un, unGood := run(ref.LayoutSpec{CP: 2, Lens: []int{8, 9}}, 9)
	swapped := func(in ref.CPRerangeInput, o ref.CPRerangeOutput) func() (ref.CPRerangeInput, ref.CPRerangeOutput) {
		return func() (ref.CPRerangeInput, ref.CPRerangeOutput) {
			rows := cloneRows(o.Rows)
			swapRows(rows, 2, 3)
			return in, ref.CPRerangeOutput{Rows: rows}
		}
	}
	checkProps(t, equiv.CPRerange().Props, in, good, map[string]func() (ref.CPRerangeInput, ref.CPRerangeOutput){
		"inverse-of-split":                 swapped(in, good),
		"source-map-reads-valid-rows-once": swapped(in, good),
		"upstream-reverse-index":           swapped(un, unGood),
	})
	for _, p := range equiv.CPRerange().Props {
		if err := p.Holds(ref.DefaultLimits(), un, unGood); err != nil {
			t.Errorf("%s fails on ref's unpadded result: %v", p.Name, err)
		}
	}
}

// TestCPCompactRestorePropertiesCatchSuffixCounts: §4.5's minimal input,
// each property failing on the scalar non-padded count's result.
func TestCPCompactRestorePropertiesCatchSuffixCounts(t *testing.T) {
	sp := ref.LayoutSpec{CP: 2, Lens: []int{3, 4}, Granule: 1}
	in := ref.CPCompactValidInput{Layout: sp, Rank: 0, X: cpRowsOf(2, 4)}
	good, err := ref.CPCompactValid(ref.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	suffix := func() (ref.CPCompactValidInput, ref.CPCompactValidOutput) {
		return in, ref.CPCompactValidOutput{Rows: ref.Rows{W: 2, B: bytes.Clone(in.X.B[:6])}}
	}
	checkProps(t, equiv.CPCompactValid().Props, in, good, map[string]func() (ref.CPCompactValidInput, ref.CPCompactValidOutput){
		"no-pad-row-reaches-f": suffix,
		"row-wise-f-commutes":  suffix,
		"restore-then-compact-is-identity": func() (ref.CPCompactValidInput, ref.CPCompactValidOutput) {
			return in, ref.CPCompactValidOutput{Rows: ref.Rows{W: 2, B: bytes.Clone(good.Rows.B[:4])}}
		},
		"capacity-router-ignores-padding": suffix,
	})

	rin := ref.CPRestorePaddedInput{Layout: sp, Rank: 0, Y: cpRowsOf(3, 3)}
	rgood, err := ref.CPRestorePadded(ref.DefaultLimits(), rin)
	if err != nil {
		t.Fatal(err)
	}
	rsuffix := func() (ref.CPRestorePaddedInput, ref.CPRestorePaddedOutput) {
		rows := ref.NewRows(3, 4)
		copy(rows.B, rin.Y.B)
		return rin, ref.CPRestorePaddedOutput{Rows: rows}
	}
	checkProps(t, equiv.CPRestorePadded().Props, rin, rgood, map[string]func() (ref.CPRestorePaddedInput, ref.CPRestorePaddedOutput){
		"shape-and-zero-padding":  rsuffix,
		"compact-inverts-restore": rsuffix,
		"row-wise-f-commutes":     rsuffix,
	})
}

// TestMoEWithCompactionRejectsABrokenMoE: the moe-compaction property runs
// its MoE through ref.MoEWithCompaction, so that helper must refuse what
// §4.4 calls a shape error rather than restore a wrong buffer: an f that
// fails, returns a malformed buffer or changes the row count, and rows
// that are not the rank's R(r) local rows, or a rank outside [0, cp).
func TestMoEWithCompactionRejectsABrokenMoE(t *testing.T) {
	lay, err := ref.LayoutSpec{CP: 2, Lens: []int{3, 5}, Granule: 2}.Build()
	if err != nil {
		t.Fatal(err)
	}
	lim, x := ref.DefaultLimits(), cpRowsOf(4, lay.R(0))
	identity := func(y ref.Rows) (ref.Rows, error) { return y, nil }
	if _, err := ref.MoEWithCompaction(lim, lay, 0, x, identity); err != nil {
		t.Fatalf("identity MoE: %v", err)
	}
	failed := ref.Reject(ref.ErrShape, "f", 0, "a working MoE")
	for name, c := range map[string]struct {
		r    int
		x    ref.Rows
		f    func(ref.Rows) (ref.Rows, error)
		want error
	}{
		"f-fails":          {0, x, func(ref.Rows) (ref.Rows, error) { return ref.Rows{}, failed }, ref.ErrShape},
		"f-ragged":         {0, x, func(y ref.Rows) (ref.Rows, error) { return ref.Rows{W: y.W, B: append(slices.Clone(y.B), 1)}, nil }, ref.ErrRowCount},
		"f-drops-a-row":    {0, x, func(y ref.Rows) (ref.Rows, error) { return ref.Rows{W: y.W, B: y.B[y.W:]}, nil }, ref.ErrMoEShape},
		"x-not-local-rows": {0, cpRowsOf(4, lay.R(0)+1), identity, ref.ErrRowContract},
		"rank-past-cp":     {2, x, identity, ref.ErrRank},
	} {
		if _, err := ref.MoEWithCompaction(lim, lay, c.r, c.x, c.f); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", name, err, c.want)
		}
	}
}
