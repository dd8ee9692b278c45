package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// CPValidRows registers cp.valid_rows (docs/spec/cp-layout.md §2).
func CPValidRows() *Op[spec.CPValidRowsInput, spec.CPValidRowsOutput] {
	return &Op[spec.CPValidRowsInput, spec.CPValidRowsOutput]{
		OpName:  "cp.valid_rows",
		SpecRef: "cp-layout.md §2",
		Summary: "compute vs valid splits, zigzag and reverse index, lane slots, valid mask, token ids, last-token rows and the selected valid rows of one rank",
		Ref:     ref.CPValidRows,
		Fast:    fast.CPValidRows,
		Sample:  spec.CPValidRowsInput{Layout: cpSampleLayout(), Rank: 1, X: patternRows(2, 12)},
		Shapes: []Shape[spec.CPValidRowsInput]{
			// One rank of bs=10, cp=8 holding 128K rows × 656 B; the
			// selected rows (98%) are the yardstick.
			{Name: "bs10-cp8-rank3-128K-rows-656B", CopyBytes: 128 << 10 * mlaRowBytes, Make: func() spec.CPValidRowsInput {
				sp, x := rankShape(3)
				return spec.CPValidRowsInput{Layout: sp, Rank: 3, X: x}
			}},
		},
	}
}

// rankShape is rank r's 128K local rows of the bs=10, cp=8 1M-row layout.
func rankShape(r int) (spec.LayoutSpec, spec.Rows) {
	sp := cpBenchLayout(units1M)
	return sp, patternRows(mlaRowBytes, mustBuild(sp).R(r))
}
