package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
)

// CPValidRows registers cp.valid_rows (docs/spec/cp-layout.md §2).
func CPValidRows() *Op[ref.CPValidRowsInput, ref.CPValidRowsOutput] {
	return &Op[ref.CPValidRowsInput, ref.CPValidRowsOutput]{
		OpName:  "cp.valid_rows",
		SpecRef: "cp-layout.md §2",
		Summary: "compute vs valid splits, zigzag and reverse index, lane slots, valid mask, token ids, last-token rows and the selected valid rows of one rank",
		Ref:     ref.CPValidRows,
		Fast:    fast.CPValidRows,
		Sample:  ref.CPValidRowsInput{Layout: cpSampleLayout(), Rank: 1, X: patternRows(2, 12)},
		Shapes: []Shape[ref.CPValidRowsInput]{
			// One rank of bs=10, cp=8 holding 128K rows × 656 B; the
			// selected rows (98%) are the yardstick.
			{Name: "bs10-cp8-rank3-128K-rows-656B", CopyBytes: 128 << 10 * mlaRowBytes, Make: func() ref.CPValidRowsInput {
				sp, x := rankShape(3)
				return ref.CPValidRowsInput{Layout: sp, Rank: 3, X: x}
			}},
		},
	}
}

// rankShape is rank r's 128K local rows of the bs=10, cp=8 1M-row layout.
func rankShape(r int) (ref.LayoutSpec, ref.Rows) {
	sp := cpBenchLayout(units1M)
	return sp, patternRows(mlaRowBytes, mustBuild(sp).R(r))
}
