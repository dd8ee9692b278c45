//go:build cuda

package cuda_test

import (
	"math/rand/v2"
	"testing"

	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/ref"
)

// TestCPCompactValidMatchesRef runs the CUDA twin against ref for every
// rank of random layouts and every row width — including a rank holding
// no valid row (padded cp=2, g=64, L=[3]: nothing to launch, an empty
// buffer out) and one holding one — and at the payload shape (rank 0 of
// bs=10, cp=8, g=64: 128.75K rows of 656 B, 2035 of them padding at the
// ends of its mirror slots).
func TestCPCompactValidMatchesRef(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 1))
	specs := []ref.LayoutSpec{{CP: 2, Lens: []int{3}, Granule: 64}, {CP: 2, Lens: []int{1}, Granule: 1},
		{CP: 2, Lens: []int{3, 4}, Granule: 1}}
	for range 10 {
		specs = append(specs, randomLayout(rng, 12))
	}
	for _, sp := range specs {
		lay := mustLayout(t, sp)
		for r := range lay.CP {
			for _, w := range rowWidths {
				in := ref.CPCompactInput{Layout: sp, Rank: r, X: ref.Rows{W: w, B: randomBytes(rng, lay.R(r)*w)}}
				sameAsRef(t, "compact_valid", ref.CPCompactValid, cuda.CPCompactValid, in)
			}
		}
	}
	if testing.Short() {
		return
	}
	sp := payloadLayout(103)
	lay := mustLayout(t, sp)
	in := ref.CPCompactInput{Layout: sp, Rank: 0, X: ref.Rows{W: 656, B: randomBytes(rng, lay.R(0)*656)}}
	sameAsRef(t, "compact_valid payload", ref.CPCompactValid, cuda.CPCompactValid, in)
}

// TestCPCompactValidRejectionsAreRefs checks rejected inputs give ref's
// error object, byte for byte.
func TestCPCompactValidRejectionsAreRefs(t *testing.T) {
	sp := ref.LayoutSpec{CP: 2, Lens: []int{3, 4}, Granule: 1}
	for _, in := range []ref.CPCompactInput{
		{Layout: sp, Rank: 0, X: ref.Rows{W: 2, B: make([]byte, 6)}}, // Rv rows, not R: the contract
		{Layout: sp, Rank: 2, X: ref.Rows{W: 2, B: make([]byte, 8)}},
		{Layout: sp, Rank: 0, X: ref.Rows{W: 0}},
	} {
		sameAsRef(t, "compact_valid rejection", ref.CPCompactValid, cuda.CPCompactValid, in)
	}
}
