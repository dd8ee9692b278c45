//go:build cuda

package cuda_test

import (
	"math/rand/v2"
	"testing"

	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestCPCompactValidMatchesRef runs the CUDA twin against ref for every
// rank of random layouts and every row width — including a rank holding
// no valid row (padded cp=2, g=64, L=[3]: nothing to launch, an empty
// buffer out) and one holding one — and at the payload shape (rank 0 of
// bs=10, cp=8, g=64: 128.75K rows of 656 B, 2035 of them padding at the
// ends of its mirror slots).
func TestCPCompactValidMatchesRef(t *testing.T) {
	eachRankRows(t, rand.New(rand.NewPCG(13, 1)), spec.Layout.R, func(what string, sp spec.LayoutSpec, r int, x spec.Rows) {
		in := spec.CPCompactValidInput{Layout: sp, Rank: r, X: x}
		sameAsRef(t, "compact_valid"+what, ref.CPCompactValid, cuda.CPCompactValid, in)
	})
}

// TestCPCompactValidRejectionsAreRefs checks rejected inputs give ref's
// error object, byte for byte.
func TestCPCompactValidRejectionsAreRefs(t *testing.T) {
	sp := spec.LayoutSpec{CP: 2, Lens: []int{3, 4}, Granule: 1}
	for _, in := range []spec.CPCompactValidInput{
		{Layout: sp, Rank: 0, X: spec.Rows{W: 2, B: make([]byte, 6)}}, // Rv rows, not R: the contract
		{Layout: sp, Rank: 2, X: spec.Rows{W: 2, B: make([]byte, 8)}},
		{Layout: sp, Rank: 0, X: spec.Rows{W: 0}},
	} {
		sameAsRef(t, "compact_valid rejection", ref.CPCompactValid, cuda.CPCompactValid, in)
	}
}
