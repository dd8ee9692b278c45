package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// CPRerange registers cp.rerange (docs/spec/cp-layout.md §3).
func CPRerange() *Op[spec.CPRerangeInput, spec.CPRerangeOutput] {
	return &Op[spec.CPRerangeInput, spec.CPRerangeOutput]{
		OpName:  "cp.rerange",
		SpecRef: "cp-layout.md §3",
		Summary: "restore global valid token order from rank-major all-gathered rows (offsets from compute splits, placement from valid splits)",
		Ref:     ref.CPRerange,
		Fast:    fast.CPRerange,
		CUDA:    cuda.CPRerange,
		Sample:  spec.CPRerangeInput{Layout: cpSampleLayout(), G: patternRows(2, 24), M: 12},
		Shapes: []Shape[spec.CPRerangeInput]{
			// The headline: bs=10, cp=8, 128K gathered rows × 656 B
			// (an FP8 MLA row); the gathered buffer is the yardstick.
			{Name: "bs10-cp8-128K-rows-656B-compute", CopyBytes: 128 << 10 * mlaRowBytes, Make: func() spec.CPRerangeInput {
				return rerangeShape(spec.SrcCompute)
			}},
			{Name: "bs10-cp8-128K-rows-656B-valid", CopyBytes: 128 << 10 * mlaRowBytes, Make: func() spec.CPRerangeInput {
				return rerangeShape(spec.SrcValid)
			}},
		},
	}
}

// rerangeShape gathers every rank's rows at stride M = max R(r) (16K rows:
// the page-granular layout is well-shaped) into 128K rows.
func rerangeShape(src spec.SrcKind) spec.CPRerangeInput {
	sp := cpBenchLayout(units128K)
	lay := mustBuild(sp)
	m := 0
	for r := range lay.CP {
		m = max(m, lay.R(r))
	}
	return spec.CPRerangeInput{Layout: sp, G: patternRows(mlaRowBytes, lay.CP*m), M: m, Src: src}
}
