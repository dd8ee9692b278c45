//go:build cuda

package cuda_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// rowWidths cover every word size of the CP row kernels: 16-byte words
// (16, 48, 656 = an FP8 MLA row), 8-byte (8, 24), 4-byte (4, 12) and bytes
// (1, 2, 3).
var rowWidths = []int{1, 2, 3, 4, 8, 12, 16, 24, 48, 656}

// sameAsRef fails the test when the CUDA twin's canonical result (output or
// error object) differs from ref's on in.
func sameAsRef[In, Out any](t *testing.T, what string, refFn, cudaFn func(spec.Limits, In) (Out, error), in In) {
	t.Helper()
	lim := spec.DefaultLimits()
	want, got := catalog.Canonical(refFn(lim, in)), catalog.Canonical(cudaFn(lim, in))
	if bytes.Equal(want, got) {
		return
	}
	at := 0
	for at < min(len(want), len(got)) && want[at] == got[at] {
		at++
	}
	t.Fatalf("%s: cuda differs from ref at byte %d of %d/%d\n  ref:  …%s\n  cuda: …%s", what, at, len(want), len(got),
		clip(want, at), clip(got, at))
}

func clip(b []byte, at int) []byte { return b[max(0, at-40):min(len(b), at+80)] }

// randomLayout draws a layout: cp in {2, 4, 8}, 1–maxB requests, unpadded
// or padded with granule 1, 2 or 64, many tiny lengths (P3.6's ranges).
func randomLayout(rng *rand.Rand, maxB int) spec.LayoutSpec {
	cp := []int{2, 4, 8}[rng.IntN(3)]
	g := []int{0, 1, 2, 64}[rng.IntN(4)]
	lens := make([]int, 1+rng.IntN(maxB))
	for i := range lens {
		l := 1 + rng.IntN(8)
		if rng.IntN(3) == 0 {
			l = 1 + rng.IntN(3000)
		}
		if g == 0 {
			l += 2 * cp // unpadded: L >= 2·cp
		}
		lens[i] = l
	}
	return spec.LayoutSpec{CP: cp, Lens: lens, Granule: g}
}

func mustLayout(t *testing.T, sp spec.LayoutSpec) spec.Layout {
	t.Helper()
	lay, err := sp.Build()
	if err != nil {
		t.Fatal(err)
	}
	return lay
}

// randomBytes returns n bytes from rng (random: never all zero).
func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// payloadLayout is the catalog's payload layout: bs=10, cp=8, page-granular
// (g=64), units granules per segment, request i 37·(i+1) rows short of its
// compute length (the padding sits in rank 0's mirror slots). units=13:
// Σ C_i = 130K compute rows (16.25K per rank); units=103: 128.75K per rank.
func payloadLayout(units int) spec.LayoutSpec {
	lens := make([]int, 10)
	for i := range lens {
		lens[i] = 16*64*units - 37*(i+1)
	}
	return spec.LayoutSpec{CP: 8, Lens: lens, Granule: 64}
}

// eachRankRows is the case set of the per-rank row kernels (compact_valid,
// restore_padded): it calls check for every rank of three edge layouts (a
// rank with no valid row: padded cp=2, g=64, L=[3]; a rank with one: L=[1];
// two requests) and of 10 random ones, at every row width, with random
// input rows, rows(lay, rank) of them; and, unless -short, for rank 0 of
// the payload layout (bs=10, cp=8, g=64: 128.75K rows of 656 B, 2035 of
// them padding at the ends of its mirror slots). what is "" or " payload".
func eachRankRows(t *testing.T, rng *rand.Rand, rows func(spec.Layout, int) int, check func(what string, sp spec.LayoutSpec, rank int, x spec.Rows)) {
	t.Helper()
	specs := []spec.LayoutSpec{{CP: 2, Lens: []int{3}, Granule: 64}, {CP: 2, Lens: []int{1}, Granule: 1},
		{CP: 2, Lens: []int{3, 4}, Granule: 1}}
	for range 10 {
		specs = append(specs, randomLayout(rng, 12))
	}
	for _, sp := range specs {
		lay := mustLayout(t, sp)
		for r := range lay.CP {
			for _, w := range rowWidths {
				check("", sp, r, spec.Rows{W: w, B: randomBytes(rng, rows(lay, r)*w)})
			}
		}
	}
	if testing.Short() {
		return
	}
	sp := payloadLayout(103)
	lay := mustLayout(t, sp)
	check(" payload", sp, 0, spec.Rows{W: 656, B: randomBytes(rng, rows(lay, 0)*656)})
}

// TestCPSplitMatchesRef runs the CUDA twin against ref on random layouts
// and every row width, from one row (padded L=[1]) to the payload shape
// (130K rows of 656 B), with random rows, pad and prefixes.
func TestCPSplitMatchesRef(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 1))
	specs := []spec.LayoutSpec{{CP: 2, Lens: []int{1}, Granule: 1}, {CP: 2, Lens: []int{3, 4}, Granule: 1}}
	for range 12 {
		specs = append(specs, randomLayout(rng, 12))
	}
	for _, sp := range specs {
		for _, w := range rowWidths {
			lay := mustLayout(t, sp)
			in := spec.CPSplitInput{Layout: sp, X: spec.Rows{W: w, B: randomBytes(rng, lay.TotalValid()*w)},
				Pad: randomBytes(rng, w), Prefix: make([]int64, lay.B())}
			for i := range in.Prefix {
				in.Prefix[i] = rng.Int64N(1 << 40)
			}
			sameAsRef(t, "split", ref.CPSplit, cuda.CPSplit, in)
		}
	}
	if testing.Short() {
		return
	}
	sp := payloadLayout(13)
	lay := mustLayout(t, sp)
	in := spec.CPSplitInput{Layout: sp, X: spec.Rows{W: 656, B: randomBytes(rng, lay.TotalValid()*656)},
		Pad: randomBytes(rng, 656), Prefix: make([]int64, lay.B())}
	sameAsRef(t, "split payload", ref.CPSplit, cuda.CPSplit, in)
}

// TestCPSplitRejectionsAreRefs checks rejected inputs give ref's error
// object, byte for byte (validation is ref's, before any device work).
func TestCPSplitRejectionsAreRefs(t *testing.T) {
	sp := spec.LayoutSpec{CP: 2, Lens: []int{3, 4}, Granule: 1}
	x := spec.Rows{W: 2, B: make([]byte, 14)}
	for _, in := range []spec.CPSplitInput{
		{Layout: sp, X: x, Pad: []byte{1}, Prefix: []int64{0, 0}},                               // pad not one row
		{Layout: sp, X: spec.Rows{W: 2, B: x.B[:12]}, Pad: []byte{1, 2}, Prefix: []int64{0, 0}}, // rows
		{Layout: sp, X: x, Pad: []byte{1, 2}, Prefix: []int64{0, -1}},                           // prefix
		{Layout: spec.LayoutSpec{CP: 1, Lens: []int{3}}, X: x, Pad: []byte{1, 2}},               // cp
	} {
		sameAsRef(t, "split rejection", ref.CPSplit, cuda.CPSplit, in)
	}
}
