package equiv

import (
	"bytes"
	"fmt"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// CPCompactValid is the differential spec of cp.compact_valid (docs/spec/cp-layout.md §4).
func CPCompactValid() *Spec[spec.CPCompactValidInput, spec.CPCompactValidOutput] {
	bnd, rejects := localBoundary(func(sp spec.LayoutSpec, r int, x spec.Rows) spec.CPCompactValidInput {
		return spec.CPCompactValidInput{Layout: sp, Rank: r, X: x}
	})
	return &Spec[spec.CPCompactValidInput, spec.CPCompactValidOutput]{
		Op: catalog.CPCompactValid(),
		Valid: rapid.Custom(func(t *rapid.T) spec.CPCompactValidInput {
			sp, r, x := localValid(t)
			return spec.CPCompactValidInput{Layout: sp, Rank: r, X: x}
		}),
		Invalid: rapid.Custom(func(t *rapid.T) Bad[spec.CPCompactValidInput] {
			sp, r, x, want := localInvalid(t)
			return Bad[spec.CPCompactValidInput]{spec.CPCompactValidInput{Layout: sp, Rank: r, X: x}, want}
		}),
		Boundary:    bnd,
		Regressions: compactRegressions(),
		Rejects:     rejects,
		Props: []Prop[spec.CPCompactValidInput, spec.CPCompactValidOutput]{
			{"no-pad-row-reaches-f", compactNoPad},
			{"row-wise-f-commutes", compactRowWise},
			{"restore-then-compact-is-identity", compactRoundtrip},
			{"capacity-router-ignores-padding", compactCapacityRouter},
		},
	}
}

// CPRestorePadded is the differential spec of cp.restore_padded (docs/spec/cp-layout.md §4).
func CPRestorePadded() *Spec[spec.CPRestorePaddedInput, spec.CPRestorePaddedOutput] {
	bnd, rejects := localBoundary(func(sp spec.LayoutSpec, r int, x spec.Rows) spec.CPRestorePaddedInput {
		y := spec.Rows{W: 3, B: []byte{}}
		if x.N() > 1 || len(x.B) != 2 {
			y = catalog.SeededRows(3, mustCPLayout(sp).Rv(r), 17)
		}
		return spec.CPRestorePaddedInput{Layout: sp, Rank: r, Y: y}
	})
	return &Spec[spec.CPRestorePaddedInput, spec.CPRestorePaddedOutput]{
		Op:          catalog.CPRestorePadded(),
		Valid:       rapid.Custom(restoreValid),
		Invalid:     rapid.Custom(restoreInvalid),
		Boundary:    bnd,
		Regressions: restoreRegressions(),
		Rejects:     rejects,
		Props: []Prop[spec.CPRestorePaddedInput, spec.CPRestorePaddedOutput]{
			{"shape-and-zero-padding", restoreShape},
			{"compact-inverts-restore", restoreRoundtrip},
			{"row-wise-f-commutes", restoreRowWise},
		},
	}
}

func restoreValid(t *rapid.T) spec.CPRestorePaddedInput {
	sp := cpLayout(t)
	r := rapid.IntRange(0, sp.CP-1).Draw(t, "rank")
	return spec.CPRestorePaddedInput{Layout: sp, Rank: r, Y: cpRows(t, mustCPLayout(sp).Rv(r))}
}

func restoreInvalid(t *rapid.T) Bad[spec.CPRestorePaddedInput] {
	in := restoreValid(t)
	lay := mustCPLayout(in.Layout)
	switch rapid.IntRange(0, 3).Draw(t, "violation") {
	case 0:
		sp, want := badLayout(t, in.Layout)
		in.Layout = sp
		return Bad[spec.CPRestorePaddedInput]{in, want}
	case 1:
		in.Rank = rapid.SampledFrom([]int{-1, in.Layout.CP, in.Layout.CP + 3}).Draw(t, "bad_rank")
		return Bad[spec.CPRestorePaddedInput]{in, spec.ErrRank}
	case 2:
		// The compute-padded count (R(r)) where it differs, else one off:
		// an f that changed the row count.
		n := lay.R(in.Rank)
		if n == lay.Rv(in.Rank) {
			n += rapid.SampledFrom([]int{-1, 1}).Draw(t, "off_by")
		}
		in.Y = catalog.SeededRows(in.Y.W, n, 21)
		return Bad[spec.CPRestorePaddedInput]{in, spec.ErrRowCount}
	default:
		in.Y = raggedRows(t, in.Y)
		return Bad[spec.CPRestorePaddedInput]{in, spec.ErrRowCount}
	}
}

// compactRegressions: §4.5 / Appendix A4, padded cp=2, g=1, L=[3,4],
// rank 0 = [a0 b0 PAD b3]: compaction keeps a0 b0 b3; the scalar
// non-padded count (3) keeps a0 b0 PAD, and under the capacity router
// (E=1, c=3) b3 is never processed.
func compactRegressions() []Case[spec.CPCompactValidInput] {
	sp := spec.LayoutSpec{CP: 2, Lens: []int{3, 4}, Granule: 1}
	return []Case[spec.CPCompactValidInput]{{"moe-suffix-count", spec.CPCompactValidInput{Layout: sp, Rank: 0, X: tokenRank(sp, 0)}}}
}

// restoreRegressions: the same minimal input after the MoE, three rows of
// output for a0 b0 b3: the fixed restore puts the third at row 3 (b3) and
// zeroes row 2 (the PAD); the suffix form writes rows 0..2.
func restoreRegressions() []Case[spec.CPRestorePaddedInput] {
	sp := spec.LayoutSpec{CP: 2, Lens: []int{3, 4}, Granule: 1}
	return []Case[spec.CPRestorePaddedInput]{{"restore-suffix-count", spec.CPRestorePaddedInput{Layout: sp, Rank: 0, Y: tagged(3, 1)}}}
}

// xorRows is a row-wise test f: every byte XOR 0x5A.
func xorRows(x spec.Rows) spec.Rows {
	y := spec.Rows{W: x.W, B: bytes.Clone(x.B)}
	if y.B == nil {
		y.B = []byte{}
	}
	for i := range y.B {
		y.B[i] ^= 0x5A
	}
	return y
}

// withPadding returns x with every padding row of rank r replaced by fill.
func withPadding(lay spec.Layout, r int, x spec.Rows, fill byte) spec.Rows {
	y := spec.Rows{W: x.W, B: bytes.Clone(x.B)}
	for p, v := range ref.ValidMask(lay, r) {
		if !v {
			for b := range y.Row(p) {
				y.Row(p)[b] = fill
			}
		}
	}
	return y
}

// compactNoPad is P4.1: the compacted rows hold Rv(r) rows and do not
// change when every padding row of X is overwritten (twice, with different
// bytes): no padding row reaches f.
func compactNoPad(_ spec.Limits, in spec.CPCompactValidInput, out spec.CPCompactValidOutput) error {
	lay := mustCPLayout(in.Layout)
	if out.Rows.N() != lay.Rv(in.Rank) {
		return fmt.Errorf("%d compacted rows, want Rv = %d", out.Rows.N(), lay.Rv(in.Rank))
	}
	for _, fill := range []byte{0x00, 0xFF} {
		c, err := ref.CompactValid(lay, in.Rank, withPadding(lay, in.Rank, in.X, fill))
		if err != nil {
			return err
		}
		if err := rowsEqual(fmt.Sprintf("compaction with padding rows %#x", fill), out.Rows, c); err != nil {
			return err
		}
	}
	return nil
}

// compactRowWise is P4.2: for a row-wise f, restore(f(compact(X))) is f(X)
// on the valid rows and zero on the padding rows.
func compactRowWise(lim spec.Limits, in spec.CPCompactValidInput, out spec.CPCompactValidOutput) error {
	lay := mustCPLayout(in.Layout)
	y, err := ref.RestorePadded(lim, lay, in.Rank, xorRows(out.Rows))
	if err != nil {
		return err
	}
	return rowsEqual("restore(f(compact(X)))", y, withPadding(lay, in.Rank, xorRows(in.X), 0))
}

// compactRoundtrip is P4.3: restore gives R(r) rows, and compacting them
// again gives the compacted rows back.
func compactRoundtrip(lim spec.Limits, in spec.CPCompactValidInput, out spec.CPCompactValidOutput) error {
	lay := mustCPLayout(in.Layout)
	y, err := ref.RestorePadded(lim, lay, in.Rank, out.Rows)
	if err != nil {
		return err
	}
	if y.N() != lay.R(in.Rank) {
		return fmt.Errorf("restore gave %d rows, want R = %d", y.N(), lay.R(in.Rank))
	}
	c, err := ref.CompactValid(lay, in.Rank, y)
	if err != nil {
		return err
	}
	return rowsEqual("compact(restore(Yc))", c, out.Rows)
}

// compactCapacityRouter is P4.4: under §4.3's batch-coupled capacity
// router — E=1 with capacity Rv(r) (§4.5's minimal: every valid row
// admitted, so a PAD that reaches f takes a valid row's place), and E=2
// with half that — the MoE run on the compacted rows equals
// MoEWithCompaction on X whatever X's padding rows hold.
func compactCapacityRouter(lim spec.Limits, in spec.CPCompactValidInput, out spec.CPCompactValidOutput) error {
	lay := mustCPLayout(in.Layout)
	rv := lay.Rv(in.Rank)
	for _, f := range []func(spec.Rows) (spec.Rows, error){capacityRouter(1, max(1, rv)), capacityRouter(2, max(1, rv/2))} {
		yc, err := f(out.Rows)
		if err != nil {
			return err
		}
		want, err := ref.RestorePadded(lim, lay, in.Rank, yc)
		if err != nil {
			return err
		}
		for _, fill := range []byte{0x00, 0x01, 0xFF} {
			got, err := ref.MoEWithCompaction(lim, lay, in.Rank, withPadding(lay, in.Rank, in.X, fill), f)
			if err != nil {
				return err
			}
			if err := rowsEqual(fmt.Sprintf("MoE with padding rows %#x", fill), got, want); err != nil {
				return err
			}
		}
	}
	return nil
}

// restoreShape: R(r) rows of Y's width, Y's rows in order at the valid
// rows, every padding row all-zero (Appendix D.3).
func restoreShape(_ spec.Limits, in spec.CPRestorePaddedInput, out spec.CPRestorePaddedOutput) error {
	lay := mustCPLayout(in.Layout)
	if out.Rows.N() != lay.R(in.Rank) || out.Rows.W != in.Y.W {
		return fmt.Errorf("%d rows of %d B, want R = %d of %d B", out.Rows.N(), out.Rows.W, lay.R(in.Rank), in.Y.W)
	}
	j := 0
	zero := make([]byte, in.Y.W)
	for p, v := range ref.ValidMask(lay, in.Rank) {
		want := zero
		if v {
			want = in.Y.Row(j)
			j++
		}
		if !bytes.Equal(out.Rows.Row(p), want) {
			return fmt.Errorf("row %d (valid %v) is %x, want %x", p, v, out.Rows.Row(p), want)
		}
	}
	return nil
}

// restoreRoundtrip is P4.3: compacting the restored rows gives Y back.
func restoreRoundtrip(_ spec.Limits, in spec.CPRestorePaddedInput, out spec.CPRestorePaddedOutput) error {
	c, err := ref.CompactValid(mustCPLayout(in.Layout), in.Rank, out.Rows)
	if err != nil {
		return err
	}
	return rowsEqual("compact(restore(Y))", c, in.Y)
}

// restoreRowWise is P4.2 on the restore side: restore commutes with a
// row-wise f on the valid rows and leaves padding zero.
func restoreRowWise(lim spec.Limits, in spec.CPRestorePaddedInput, out spec.CPRestorePaddedOutput) error {
	lay := mustCPLayout(in.Layout)
	y, err := ref.RestorePadded(lim, lay, in.Rank, xorRows(in.Y))
	if err != nil {
		return err
	}
	if out.Rows.N() != y.N() {
		return fmt.Errorf("%d rows, want %d", out.Rows.N(), y.N())
	}
	return rowsEqual("restore(f(Y))", y, withPadding(lay, in.Rank, xorRows(out.Rows), 0))
}

// capacityRouter is the deterministic, batch-coupled test MoE of
// docs/spec/cp-layout.md §4.3: a row's expert is row[0] mod e; experts
// admit rows in row order up to capacity c each; an admitted row's output
// is its bytes XOR (expert+1), any other row's output is zeros. e must be
// >= 1. It is P4.4's test double, not an algorithm of the spec, so it
// lives beside the property rather than in ref.
func capacityRouter(e, c int) func(spec.Rows) (spec.Rows, error) {
	return func(x spec.Rows) (spec.Rows, error) {
		out := ref.NewRows(x.W, x.N())
		load := make([]int, e)
		for p := range x.N() {
			row := x.Row(p)
			ex := int(row[0]) % e
			if load[ex] >= c {
				continue
			}
			load[ex]++
			for b, v := range row {
				out.Row(p)[b] = v ^ byte(ex+1)
			}
		}
		return out, nil
	}
}
