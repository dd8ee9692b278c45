//go:build cuda

package cuda

import (
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// CPCompactValid is the CUDA twin of ref.CPCompactValid (docs/spec/cp-layout.md §4.2
// steps 1–2): rank r's rows are uploaded and one launch of
// cp_compact_valid_rows writes its valid rows, stable, from one run per lane
// slot with valid rows (a slot's valid rows are its first V[i][k], §0.3, so
// the padding interleaved between slots is skipped by the run table, never
// by a count of leading rows, §4.5). Validation is ref's.
func CPCompactValid(lim spec.Limits, in spec.CPCompactValidInput) (spec.CPCompactValidOutput, error) {
	lay, err := ref.ValidateCPCompactValid(lim, in)
	if err != nil {
		return spec.CPCompactValidOutput{}, err
	}
	runs, valid := compactRuns(lay, in.Rank)
	out := ref.NewRows(in.X.W, valid)
	if err := run("cp.compact_valid", func(c *call) error {
		return gatherRows(c, "cp_compact_valid_rows", out, in.X.B, runs)
	}); err != nil {
		return spec.CPCompactValidOutput{}, err
	}
	return spec.CPCompactValidOutput{Rows: out}, nil
}

// compactRuns lists cp_compact_valid_rows' runs {first compacted row, first
// local row}, one per lane slot of rank r with valid rows, in local order,
// and Rv(r), the compacted row count.
func compactRuns(lay spec.Layout, r int) ([]int64, int) {
	runs := make([]int64, 0, 4*lay.B())
	d, off := 0, 0
	for _, k := range lay.Lanes(r) {
		for i := range lay.L {
			if v := lay.V[i][k]; v > 0 {
				runs = appendRun(runs, int64(d), int64(off))
				d += v
			}
			off += lay.S[i][k]
		}
	}
	return runs, d
}
