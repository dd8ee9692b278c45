//go:build cuda

package cuda_test

import (
	"math/rand/v2"
	"testing"

	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestCPRestorePaddedMatchesRef runs the CUDA twin against ref for every
// rank of random layouts and every row width — including a rank with no
// valid row (every output row is written zero) — and at the payload shape
// (rank 0 of bs=10, cp=8, g=64: 128.75K rows of 656 B, 2035 of them zero).
func TestCPRestorePaddedMatchesRef(t *testing.T) {
	eachRankRows(t, rand.New(rand.NewPCG(14, 1)), spec.Layout.Rv, func(what string, sp spec.LayoutSpec, r int, x spec.Rows) {
		in := spec.CPRestorePaddedInput{Layout: sp, Rank: r, Y: x}
		sameAsRef(t, "restore_padded"+what, ref.CPRestorePadded, cuda.CPRestorePadded, in)
	})
}

// TestCPRestorePaddedRejectionsAreRefs checks rejected inputs give ref's
// error object, byte for byte.
func TestCPRestorePaddedRejectionsAreRefs(t *testing.T) {
	sp := spec.LayoutSpec{CP: 2, Lens: []int{3, 4}, Granule: 1}
	for _, in := range []spec.CPRestorePaddedInput{
		{Layout: sp, Rank: 0, Y: spec.Rows{W: 2, B: make([]byte, 8)}}, // R rows, not Rv
		{Layout: sp, Rank: -1, Y: spec.Rows{W: 2, B: make([]byte, 6)}},
		{Layout: sp, Rank: 0, Y: spec.Rows{W: 0}},
	} {
		sameAsRef(t, "restore_padded rejection", ref.CPRestorePadded, cuda.CPRestorePadded, in)
	}
}
