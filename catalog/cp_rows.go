package catalog

import (
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// This file holds the inputs the CP row ops' samples and benchmark shapes
// share (docs/spec/cp-layout.md §1–§4).

// mlaRowBytes is an FP8 MLA KV row (docs/spec/cp-layout.md §7.1), the row width the
// issue's benchmarks move.
const mlaRowBytes = 656

// cpSampleLayout is §2.2's worked example: padded cp=2, g=2, L=[3,9].
func cpSampleLayout() spec.LayoutSpec { return spec.LayoutSpec{CP: 2, Lens: []int{3, 9}, Granule: 2} }

// cpBenchLayout is a bs=10, cp=8 page-granular (g=64) layout whose compute
// rows total 1024·units: request i has units[i] granules per segment and
// leaves 37·(i+1) rows of padding, so every rank holds interleaved padding.
func cpBenchLayout(units [10]int) spec.LayoutSpec {
	lens := make([]int, len(units))
	for i, u := range units {
		lens[i] = 16*64*u - 37*(i+1)
	}
	return spec.LayoutSpec{CP: 8, Lens: lens, Granule: 64}
}

// units128K gives Σ C_i = 128K compute rows (16K per rank).
var units128K = [10]int{13, 13, 13, 13, 13, 13, 13, 13, 12, 12}

// units1M gives Σ C_i = 1M compute rows: 128K rows on each rank.
var units1M = [10]int{103, 103, 103, 103, 102, 102, 102, 102, 102, 102}

// patternRows returns n rows of width w with every byte depending on its
// position, so a misplaced row would be visible.
func patternRows(w, n int) spec.Rows {
	x := ref.NewRows(w, n)
	for i := range x.B {
		x.B[i] = byte(i*31 + i/w)
	}
	return x
}

// SeededRows returns n rows of width w filled by xorshift32 from seed (an
// odd seed is used as is): deterministic bytes for generators, tests and
// bench shapes that must not share a pattern.
func SeededRows(w, n int, seed uint32) spec.Rows {
	x := ref.NewRows(w, n)
	s := seed | 1
	for i := range x.B {
		s ^= s << 13
		s ^= s >> 17
		s ^= s << 5
		x.B[i] = byte(s)
	}
	return x
}

// mustBuild builds a layout the catalog's own shapes name.
func mustBuild(sp spec.LayoutSpec) spec.Layout {
	lay, err := sp.Build()
	if err != nil {
		panic("catalog: bad CP layout shape: " + err.Error())
	}
	return lay
}
