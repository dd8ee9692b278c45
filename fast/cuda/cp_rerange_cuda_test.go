//go:build cuda

package cuda_test

import (
	"math/rand/v2"
	"testing"

	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// rerangeInput is a gathered buffer for lay under src: stride M = the
// largest rank payload plus extra rows of static all-gather padding, every
// row random.
func rerangeInput(rng *rand.Rand, sp spec.LayoutSpec, lay spec.Layout, w, extra int, src spec.SrcKind) spec.CPRerangeInput {
	m := 0
	for r := range lay.CP {
		m = max(m, lay.RankPayload(r, src))
	}
	m += extra
	return spec.CPRerangeInput{Layout: sp, G: spec.Rows{W: w, B: randomBytes(rng, lay.CP*m*w)}, M: m, Src: src}
}

// TestCPRerangeMatchesRef runs the CUDA twin against ref on random layouts,
// both source kinds, strides with and without static padding and every row
// width, from one output row to the payload shape (130K gathered rows of
// 656 B, both source kinds).
func TestCPRerangeMatchesRef(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 1))
	specs := []spec.LayoutSpec{{CP: 2, Lens: []int{1}, Granule: 1}, {CP: 2, Lens: []int{3, 4}, Granule: 1},
		{CP: 2, Lens: []int{3, 9}, Granule: 2}}
	for range 12 {
		specs = append(specs, randomLayout(rng, 12))
	}
	for _, sp := range specs {
		lay := mustLayout(t, sp)
		for _, w := range rowWidths {
			for _, src := range []spec.SrcKind{spec.SrcCompute, spec.SrcValid} {
				in := rerangeInput(rng, sp, lay, w, rng.IntN(3), src)
				sameAsRef(t, "rerange", ref.CPRerange, cuda.CPRerange, in)
			}
		}
	}
	if testing.Short() {
		return
	}
	sp := payloadLayout(13)
	lay := mustLayout(t, sp)
	for _, src := range []spec.SrcKind{spec.SrcCompute, spec.SrcValid} {
		sameAsRef(t, "rerange payload", ref.CPRerange, cuda.CPRerange, rerangeInput(rng, sp, lay, 656, 0, src))
	}
}

// TestCPRerangeRejectionsAreRefs checks rejected inputs give ref's error
// object, byte for byte.
func TestCPRerangeRejectionsAreRefs(t *testing.T) {
	sp := spec.LayoutSpec{CP: 2, Lens: []int{3, 4}, Granule: 1}
	g := spec.Rows{W: 2, B: make([]byte, 16)}
	for _, in := range []spec.CPRerangeInput{
		{Layout: sp, G: g, M: 3},                                    // cp·M != rows
		{Layout: sp, G: spec.Rows{W: 2, B: make([]byte, 12)}, M: 3}, // M below R(r)
		{Layout: sp, G: g, M: 4, Src: "bogus"},
		{Layout: sp, G: spec.Rows{W: 3, B: make([]byte, 16)}, M: 4}, // ragged
	} {
		sameAsRef(t, "rerange rejection", ref.CPRerange, cuda.CPRerange, in)
	}
}
