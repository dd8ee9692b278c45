package equiv_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// cpRowsOf returns n rows of width w whose bytes depend on their index,
// none equal to the 0xEE pad row.
func cpRowsOf(w, n int) spec.Rows {
	x := ref.NewRows(w, n)
	for i := range x.B {
		x.B[i] = byte(i*7 + i/w)
	}
	return x
}

func cloneRows(x spec.Rows) spec.Rows { return spec.Rows{W: x.W, B: bytes.Clone(x.B)} }

// swapRows swaps rows a and b of x in place.
func swapRows(x spec.Rows, a, b int) {
	ra, rb := bytes.Clone(x.Row(a)), x.Row(b)
	copy(x.Row(a), rb)
	copy(x.Row(b), ra)
}

// checkProps requires every property to hold on (in, good) and each to
// fail on the broken output listed under its name.
func checkProps[In, Out any](t *testing.T, props []equiv.Prop[In, Out], in In, good Out, broken map[string]func() (In, Out)) {
	t.Helper()
	for _, p := range props {
		if err := p.Holds(spec.DefaultLimits(), in, good); err != nil {
			t.Errorf("%s fails on ref's result: %v", p.Name, err)
		}
		mk, ok := broken[p.Name]
		if !ok {
			t.Errorf("no broken result for property %s", p.Name)
			continue
		}
		bin, bout := mk()
		if err := p.Holds(spec.DefaultLimits(), bin, bout); err == nil {
			t.Errorf("%s holds on a result broken the way it guards against", p.Name)
		}
	}
}

// TestCPSplitPropertiesCatchWrongSplits: §2.2's layout (padded cp=2, g=2,
// L=[3,9]) and §1.3's unpadded L=[10] for the bs=1 property.
func TestCPSplitPropertiesCatchWrongSplits(t *testing.T) {
	run := func(sp spec.LayoutSpec, prefix []int64) (spec.CPSplitInput, spec.CPSplitOutput) {
		n := 0
		for _, l := range sp.Lens {
			n += l
		}
		in := spec.CPSplitInput{Layout: sp, X: cpRowsOf(3, n), Pad: []byte{0xEE, 0xEE, 0xEE}, Prefix: prefix}
		out, err := ref.CPSplit(spec.DefaultLimits(), in)
		if err != nil {
			t.Fatal(err)
		}
		return in, out
	}
	in, good := run(spec.LayoutSpec{CP: 2, Lens: []int{3, 9}, Granule: 2}, []int64{0, 5})
	bs1, bs1Good := run(spec.LayoutSpec{CP: 2, Lens: []int{10}}, []int64{0})
	clone := func(o spec.CPSplitOutput) spec.CPSplitOutput {
		c := spec.CPSplitOutput{Ranks: slices.Clone(o.Ranks)}
		for r := range c.Ranks {
			c.Ranks[r].Rows, c.Ranks[r].Positions = cloneRows(o.Ranks[r].Rows), slices.Clone(o.Ranks[r].Positions)
		}
		return c
	}
	swapped := func() (spec.CPSplitInput, spec.CPSplitOutput) { // a0 <-> b0 on rank 0
		o := clone(good)
		swapRows(o.Ranks[0].Rows, 0, 2)
		return in, o
	}
	checkProps(t, equiv.CPSplit().Props, in, good, map[string]func() (spec.CPSplitInput, spec.CPSplitOutput){
		"layout-shape": func() (spec.CPSplitInput, spec.CPSplitOutput) {
			return in, spec.CPSplitOutput{Ranks: good.Ranks[:1]}
		},
		"partition": swapped,
		"pad-count": func() (spec.CPSplitInput, spec.CPSplitOutput) { // a PAD row replaced by a0
			o := clone(good)
			copy(o.Ranks[0].Rows.Row(6), in.X.Row(0))
			return in, o
		},
		"rerange-roundtrip": swapped,
		"upstream-bs1": func() (spec.CPSplitInput, spec.CPSplitOutput) {
			o := clone(bs1Good)
			swapRows(o.Ranks[0].Rows, 0, 1)
			return bs1, o
		},
		"positions-continue": func() (spec.CPSplitInput, spec.CPSplitOutput) {
			o := clone(good)
			o.Ranks[1].Positions[6]++
			return in, o
		},
	})
}

// TestCPValidRowsPropertiesCatchWrongMetadata: §2.2's rank 1.
func TestCPValidRowsPropertiesCatchWrongMetadata(t *testing.T) {
	sp := spec.LayoutSpec{CP: 2, Lens: []int{3, 9}, Granule: 2}
	in := spec.CPValidRowsInput{Layout: sp, Rank: 1, X: cpRowsOf(2, 12)}
	good, err := ref.CPValidRows(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	with := func(f func(o *spec.CPValidRowsOutput)) func() (spec.CPValidRowsInput, spec.CPValidRowsOutput) {
		return func() (spec.CPValidRowsInput, spec.CPValidRowsOutput) {
			o := good
			o.ValidSplitsRankMajor, o.ReverseIndex = slices.Clone(good.ValidSplitsRankMajor), slices.Clone(good.ReverseIndex)
			o.LaneSlots, o.ValidMask = slices.Clone(good.LaneSlots), slices.Clone(good.ValidMask)
			o.LastTokenRows, o.Selected = slices.Clone(good.LastTokenRows), cloneRows(good.Selected)
			f(&o)
			return in, o
		}
	}
	checkProps(t, equiv.CPValidRows().Props, in, good, map[string]func() (spec.CPValidRowsInput, spec.CPValidRowsOutput){
		"split-sums":    with(func(o *spec.CPValidRowsOutput) { o.ValidSplitsRankMajor[2]++ }),
		"mask-popcount": with(func(o *spec.CPValidRowsOutput) { o.ValidMask[1] = true }),
		"reverse-index": with(func(o *spec.CPValidRowsOutput) {
			o.ReverseIndex[0], o.ReverseIndex[1] = o.ReverseIndex[1], o.ReverseIndex[0]
		}),
		"lane-slots-tile":         with(func(o *spec.CPValidRowsOutput) { o.LaneSlots[1].Off++ }),
		"last-token-owned-once":   with(func(o *spec.CPValidRowsOutput) { o.LastTokenRows[1].LocalRow = 9 }), // a PAD
		"selected-are-token-rows": with(func(o *spec.CPValidRowsOutput) { swapRows(o.Selected, 0, 1) }),
	})
}

// TestCPRerangePropertiesCatchWrongOrder: §3.3 (padded, M=13 with a
// static row per rank) and §1.3's unpadded L=[8,9] for P3.4.
func TestCPRerangePropertiesCatchWrongOrder(t *testing.T) {
	run := func(sp spec.LayoutSpec, m int) (spec.CPRerangeInput, spec.CPRerangeOutput) {
		in := spec.CPRerangeInput{Layout: sp, G: cpRowsOf(2, 2*m), M: m}
		out, err := ref.CPRerange(spec.DefaultLimits(), in)
		if err != nil {
			t.Fatal(err)
		}
		return in, out
	}
	in, good := run(spec.LayoutSpec{CP: 2, Lens: []int{3, 9}, Granule: 2}, 13)
	un, unGood := run(spec.LayoutSpec{CP: 2, Lens: []int{8, 9}}, 9)
	swapped := func(in spec.CPRerangeInput, o spec.CPRerangeOutput) func() (spec.CPRerangeInput, spec.CPRerangeOutput) {
		return func() (spec.CPRerangeInput, spec.CPRerangeOutput) {
			rows := cloneRows(o.Rows)
			swapRows(rows, 2, 3)
			return in, spec.CPRerangeOutput{Rows: rows}
		}
	}
	checkProps(t, equiv.CPRerange().Props, in, good, map[string]func() (spec.CPRerangeInput, spec.CPRerangeOutput){
		"inverse-of-split":                 swapped(in, good),
		"source-map-reads-valid-rows-once": swapped(in, good),
		"upstream-reverse-index":           swapped(un, unGood),
	})
	for _, p := range equiv.CPRerange().Props {
		if err := p.Holds(spec.DefaultLimits(), un, unGood); err != nil {
			t.Errorf("%s fails on ref's unpadded result: %v", p.Name, err)
		}
	}
}

// TestCPCompactRestorePropertiesCatchSuffixCounts: §4.5's minimal input,
// each property failing on the scalar non-padded count's result.
func TestCPCompactRestorePropertiesCatchSuffixCounts(t *testing.T) {
	sp := spec.LayoutSpec{CP: 2, Lens: []int{3, 4}, Granule: 1}
	in := spec.CPCompactValidInput{Layout: sp, Rank: 0, X: cpRowsOf(2, 4)}
	good, err := ref.CPCompactValid(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	suffix := func() (spec.CPCompactValidInput, spec.CPCompactValidOutput) {
		return in, spec.CPCompactValidOutput{Rows: spec.Rows{W: 2, B: bytes.Clone(in.X.B[:6])}}
	}
	checkProps(t, equiv.CPCompactValid().Props, in, good, map[string]func() (spec.CPCompactValidInput, spec.CPCompactValidOutput){
		"no-pad-row-reaches-f": suffix,
		"row-wise-f-commutes":  suffix,
		"restore-then-compact-is-identity": func() (spec.CPCompactValidInput, spec.CPCompactValidOutput) {
			return in, spec.CPCompactValidOutput{Rows: spec.Rows{W: 2, B: bytes.Clone(good.Rows.B[:4])}}
		},
		"capacity-router-ignores-padding": suffix,
	})

	rin := spec.CPRestorePaddedInput{Layout: sp, Rank: 0, Y: cpRowsOf(3, 3)}
	rgood, err := ref.CPRestorePadded(spec.DefaultLimits(), rin)
	if err != nil {
		t.Fatal(err)
	}
	rsuffix := func() (spec.CPRestorePaddedInput, spec.CPRestorePaddedOutput) {
		rows := ref.NewRows(3, 4)
		copy(rows.B, rin.Y.B)
		return rin, spec.CPRestorePaddedOutput{Rows: rows}
	}
	checkProps(t, equiv.CPRestorePadded().Props, rin, rgood, map[string]func() (spec.CPRestorePaddedInput, spec.CPRestorePaddedOutput){
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
	lay, err := spec.LayoutSpec{CP: 2, Lens: []int{3, 5}, Granule: 2}.Build()
	if err != nil {
		t.Fatal(err)
	}
	lim, x := spec.DefaultLimits(), cpRowsOf(4, lay.R(0))
	identity := func(y spec.Rows) (spec.Rows, error) { return y, nil }
	if _, err := ref.MoEWithCompaction(lim, lay, 0, x, identity); err != nil {
		t.Fatalf("identity MoE: %v", err)
	}
	failed := spec.Reject(spec.ErrShape, "f", 0, "a working MoE")
	for name, c := range map[string]struct {
		r    int
		x    spec.Rows
		f    func(spec.Rows) (spec.Rows, error)
		want error
	}{
		"f-fails":          {0, x, func(spec.Rows) (spec.Rows, error) { return spec.Rows{}, failed }, spec.ErrShape},
		"f-ragged":         {0, x, func(y spec.Rows) (spec.Rows, error) { return spec.Rows{W: y.W, B: append(slices.Clone(y.B), 1)}, nil }, spec.ErrRowCount},
		"f-drops-a-row":    {0, x, func(y spec.Rows) (spec.Rows, error) { return spec.Rows{W: y.W, B: y.B[y.W:]}, nil }, spec.ErrMoEShape},
		"x-not-local-rows": {0, cpRowsOf(4, lay.R(0)+1), identity, spec.ErrRowContract},
		"rank-past-cp":     {2, x, identity, spec.ErrRank},
	} {
		if _, err := ref.MoEWithCompaction(lim, lay, c.r, c.x, c.f); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", name, err, c.want)
		}
	}
}
