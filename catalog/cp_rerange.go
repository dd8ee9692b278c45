package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/ref"
)

// CPRerange registers cp.rerange (docs/spec/cp-layout.md §3).
func CPRerange() *Op[ref.CPRerangeInput, ref.CPRerangeOutput] {
	return &Op[ref.CPRerangeInput, ref.CPRerangeOutput]{
		OpName:  "cp.rerange",
		SpecRef: "cp-layout.md §3",
		Summary: "restore global valid token order from rank-major all-gathered rows (offsets from compute splits, placement from valid splits)",
		Ref:     ref.CPRerange,
		Fast:    fast.CPRerange,
		CUDA:    cuda.CPRerange,
		Sample:  ref.CPRerangeInput{Layout: cpSampleLayout(), G: patternRows(2, 24), M: 12},
		Shapes: []Shape[ref.CPRerangeInput]{
			// The headline: bs=10, cp=8, 128K gathered rows × 656 B
			// (an FP8 MLA row); the gathered buffer is the yardstick.
			{Name: "bs10-cp8-128K-rows-656B-compute", CopyBytes: 128 << 10 * mlaRowBytes, Make: func() ref.CPRerangeInput {
				return rerangeShape(ref.SrcCompute)
			}},
			{Name: "bs10-cp8-128K-rows-656B-valid", CopyBytes: 128 << 10 * mlaRowBytes, Make: func() ref.CPRerangeInput {
				return rerangeShape(ref.SrcValid)
			}},
		},
	}
}

// rerangeShape gathers every rank's rows at stride M = max R(r) (16K rows:
// the page-granular layout is well-shaped) into 128K rows.
func rerangeShape(src ref.SrcKind) ref.CPRerangeInput {
	sp := cpBenchLayout(units128K)
	lay := mustBuild(sp)
	m := 0
	for r := range lay.CP {
		m = max(m, lay.R(r))
	}
	return ref.CPRerangeInput{Layout: sp, G: patternRows(mlaRowBytes, lay.CP*m), M: m, Src: src}
}
