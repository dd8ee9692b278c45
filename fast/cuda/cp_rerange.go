//go:build cuda

package cuda

import (
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// CPRerange is the CUDA twin of ref.CPRerange (docs/spec/cp-layout.md §3.2 "GPU"):
// the gathered buffer is uploaded and one launch of cp_rerange_rows writes
// the output rows from one run per (request, segment) with valid rows.
// Validation is ref's.
func CPRerange(lim spec.Limits, in spec.CPRerangeInput) (spec.CPRerangeOutput, error) {
	lay, src, err := ref.ValidateCPRerange(lim, in)
	if err != nil {
		return spec.CPRerangeOutput{}, err
	}
	out := ref.NewRows(in.G.W, lay.TotalValid())
	runs := rerangeRuns(lay, newLayoutSums(lay), in.M, src)
	if err := run("cp.rerange", func(c *call) error {
		return gatherRows(c, "cp_rerange_rows", out, in.G.B, runs)
	}); err != nil {
		return spec.CPRerangeOutput{}, err
	}
	return spec.CPRerangeOutput{Rows: out}, nil
}

// rerangeRuns lists cp_rerange_rows' runs {first output row, first G row}
// in output order (request i, then segment k), §3.2: the source offset is
// r·M plus the lane base plus Σ_{j<i} SS[j][k] over the sizes the rank sent
// (SS = S for compute, V for valid), the placement OutBase(i) + Σ_{k'<k}
// V[i][k']. A run spans V[i][k] rows; empty ones are left out.
func rerangeRuns(lay spec.Layout, sums layoutSums, m int, src spec.SrcKind) []int64 {
	ss := lay.S
	if src == spec.SrcValid {
		ss = lay.V
	}
	ns := lay.NS()
	// laneBase[k]: the first G row of segment k's lane on its owner;
	// colSum[k]: Σ_{j<i} ss[j][k] as the request loop advances.
	laneBase, colSum := make([]int64, ns), make([]int64, ns)
	for k := range ns {
		r := lay.Owner(k)
		laneBase[k] = int64(r) * int64(m)
		if lay.LaneOf(k) == spec.LaneMirror {
			for i := range lay.L {
				laneBase[k] += int64(ss[i][r])
			}
		}
	}
	runs := make([]int64, 0, 2*ns*lay.B())
	for i := range lay.L {
		for k := range ns {
			if v := lay.V[i][k]; v > 0 {
				runs = appendRun(runs, int64(sums.outBase[i]+sums.validStart[i][k]), laneBase[k]+colSum[k])
			}
			colSum[k] += int64(ss[i][k])
		}
	}
	return runs
}
