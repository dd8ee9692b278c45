package equiv

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// This file holds what the CP row ops' specs share (docs/spec/cp-layout.md §0–§4):
// layout generators and boundary layouts, row buffers, tagged rows (row j
// carries j, so a property can tell where every output row came from), and
// the bad-layout violations every op rejects the same way.

// cpLayout draws a realistic CP layout small enough for fixtures: cp in
// {2,3,4,8}, 1–5 requests, unpadded (every L >= 2·cp) or padded with a
// small granule, many tiny extends; page-sized granules only at cp = 2, so
// no case holds more than a few hundred rows.
func cpLayout(t *rapid.T) spec.LayoutSpec {
	cp := rapid.SampledFrom([]int{2, 2, 3, 4, 8}).Draw(t, "cp")
	granules := []int{0, 0, 1, 1, 2, 3, 4}
	if cp == 2 {
		granules = append(granules, 8, 16)
	}
	g := rapid.SampledFrom(granules).Draw(t, "granule")
	b := rapid.IntRange(1, 5).Draw(t, "b")
	lens := make([]int, b)
	for i := range lens {
		if g == 0 {
			lens[i] = rapid.IntRange(2*cp, 8*cp).Draw(t, "len")
		} else {
			lens[i] = rapid.OneOf(rapid.IntRange(1, 2*cp+1), rapid.IntRange(1, 40)).Draw(t, "len")
		}
	}
	return spec.LayoutSpec{CP: cp, Lens: lens, Granule: g}
}

// mustCPLayout builds a layout a generator or table produced valid.
func mustCPLayout(sp spec.LayoutSpec) spec.Layout {
	lay, err := sp.Build()
	if err != nil {
		panic(fmt.Sprintf("equiv: layout %+v: %v", sp, err))
	}
	return lay
}

// cpRows draws n rows of a drawn width 1–8 with pseudo-random content from
// one drawn seed (drawing every byte would make cases slow to generate).
func cpRows(t *rapid.T, n int) spec.Rows {
	w := rapid.IntRange(1, 8).Draw(t, "w")
	return catalog.SeededRows(w, n, rapid.Uint32().Draw(t, "row_seed"))
}

// tagW is the width of a tagged row: a 4-byte little-endian tag.
const tagW = 4

// tagSentinel is a tag no real row carries: the pad row of tagged runs.
const tagSentinel = 0xFFFFFFFF

// tagged returns n rows where row j carries tag first+j.
func tagged(n int, first uint32) spec.Rows {
	x := ref.NewRows(tagW, n)
	for j := range n {
		binary.LittleEndian.PutUint32(x.Row(j), first+uint32(j))
	}
	return x
}

// tagRow returns one row carrying tag.
func tagRow(tag uint32) []byte { return binary.LittleEndian.AppendUint32(nil, tag) }

// tagOf reads a tagged row's tag.
func tagOf(row []byte) uint32 { return binary.LittleEndian.Uint32(row) }

// gather concatenates each rank's rows, each padded to m rows with static.
func gather(w, m int, ranks []spec.Rows, static []byte) spec.Rows {
	g := spec.Rows{W: w, B: make([]byte, 0, len(ranks)*m*w)}
	for _, x := range ranks {
		g.B = append(g.B, x.B...)
		for range m - x.N() {
			g.B = append(g.B, static...)
		}
	}
	return g
}

// splitAll is ref.SplitLocal for every rank.
func splitAll(lay spec.Layout, x spec.Rows, pad []byte) ([]spec.Rows, error) {
	ranks := make([]spec.Rows, lay.CP)
	for r := range ranks {
		rows, err := ref.SplitLocal(spec.DefaultLimits(), lay, r, x, pad)
		if err != nil {
			return nil, fmt.Errorf("SplitLocal rank %d: %v", r, err)
		}
		ranks[r] = rows
	}
	return ranks, nil
}

// maxPayload is max_r n_r under src.
func maxPayload(lay spec.Layout, src spec.SrcKind) int {
	m := 0
	for r := range lay.CP {
		m = max(m, lay.RankPayload(r, src))
	}
	return m
}

// rowsEqual compares two buffers row by row and names the first difference.
func rowsEqual(what string, got, want spec.Rows) error {
	if got.W != want.W || got.N() != want.N() {
		return fmt.Errorf("%s: %d rows of %d B, want %d rows of %d B", what, got.N(), got.W, want.N(), want.W)
	}
	for p := range want.N() {
		if !bytes.Equal(got.Row(p), want.Row(p)) {
			return fmt.Errorf("%s: row %d is %x, want %x", what, p, got.Row(p), want.Row(p))
		}
	}
	return nil
}

// cpBoundaryLens are the boundary lengths for page size ps and CP
// size cp: 1, ps−1, ps, ps+1, 2·cp−1, 2·cp, 2·cp+1 (those >= 1, deduplicated).
func cpBoundaryLens(ps, cp int) []int {
	var out []int
	seen := map[int]bool{}
	for _, l := range []int{1, ps - 1, ps, ps + 1, 2*cp - 1, 2 * cp, 2*cp + 1} {
		if l >= 1 && !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out
}

// cpBoundaryLayout is one boundary layout, named, and whether the
// unpadded split must reject it (a length below 2·cp).
type cpBoundaryLayout struct {
	name     string
	sp       spec.LayoutSpec
	tooShort bool
}

// cpBoundaryLayouts lists, for cp in {2, 4} and granules 0 (unpadded), 1
// and ps = 4 (plus ps = 64 at cp = 2, NSA's page), every boundary length
// alone and one batch mixing them all.
func cpBoundaryLayouts() []cpBoundaryLayout {
	var out []cpBoundaryLayout
	for _, cp := range []int{2, 4} {
		gs := []int{0, 1, 4}
		if cp == 2 {
			gs = append(gs, 64)
		}
		for _, g := range gs {
			ps := max(g, 4)
			lens := cpBoundaryLens(ps, cp)
			for _, l := range lens {
				out = append(out, cpBoundaryLayout{fmt.Sprintf("cp%d-g%d-L%d", cp, g, l),
					spec.LayoutSpec{CP: cp, Lens: []int{l}, Granule: g}, g == 0 && l < 2*cp})
			}
			out = append(out, cpBoundaryLayout{fmt.Sprintf("cp%d-g%d-mixed", cp, g),
				spec.LayoutSpec{CP: cp, Lens: lens, Granule: g}, g == 0 && lens[0] < 2*cp})
		}
	}
	return out
}

// badLayout applies one §1.5 layout violation to sp and returns the sentinel
// it maps to.
func badLayout(t *rapid.T, sp spec.LayoutSpec) (spec.LayoutSpec, *spec.Sentinel) {
	sp.Lens = append([]int{}, sp.Lens...)
	switch rapid.IntRange(0, 4).Draw(t, "layout_violation") {
	case 0:
		sp.CP = rapid.SampledFrom([]int{-1, 0, 1, spec.MaxCP + 1}).Draw(t, "bad_cp")
		return sp, spec.ErrInvalidCPSize
	case 1:
		sp.Lens = []int{}
		return sp, spec.ErrEmptyBatch
	case 2:
		sp.Lens[rapid.IntRange(0, len(sp.Lens)-1).Draw(t, "bad_at")] = rapid.IntRange(-3, 0).Draw(t, "bad_len")
		return sp, spec.ErrBadLength
	case 3:
		sp.Granule = 0
		sp.Lens[rapid.IntRange(0, len(sp.Lens)-1).Draw(t, "short_at")] = rapid.IntRange(1, 2*sp.CP-1).Draw(t, "short_len")
		return sp, spec.ErrTooShortForZigzag
	default:
		sp.Granule = rapid.IntRange(-4, -1).Draw(t, "bad_granule")
		return sp, spec.ErrInvalidGranule
	}
}

// raggedRows returns x with 1..W−1 bytes cut off its end (or, at W = 1,
// with width 0): a buffer that is not a whole number of rows.
func raggedRows(t *rapid.T, x spec.Rows) spec.Rows {
	if x.W == 1 || len(x.B) == 0 {
		return spec.Rows{W: 0, B: x.B}
	}
	cut := rapid.IntRange(1, x.W-1).Draw(t, "cut")
	return spec.Rows{W: x.W, B: x.B[:len(x.B)-cut]}
}
