package fast

import "github.com/kvtwin/kvtwin/ref"

// CPRerange is the twin of ref.CPRerange (cp-layout.md §3): a plan of one
// move per (request, segment), built in output order from running column
// sums of the sizes each rank sent (source offsets) and the valid prefix
// sums (placement), then executed in parallel chunks for large batches.
func CPRerange(_ ref.Limits, in ref.CPRerangeInput) (ref.CPRerangeOutput, error) {
	lay, src, err := ref.ValidateCPRerange(in)
	if err != nil {
		return ref.CPRerangeOutput{}, err
	}
	ss := lay.S
	if src == ref.SrcValid {
		ss = lay.V
	}
	x, w, m := newCPIndex(lay), in.G.W, in.M
	ns := lay.NS()
	// laneBase[k]: the first row of segment k's lane on its owner, in G.
	// colSum[k]: Σ_{j<i} ss[j][k] as the request loop advances.
	laneBase, colSum := make([]int, ns), make([]int, ns)
	for k := range ns {
		r := lay.Owner(k)
		laneBase[k] = r * m
		if lay.LaneOf(k) == ref.LaneMirror {
			laneBase[k] += laneRows(ss, r)
		}
	}
	moves := make([]move, 0, ns*lay.B())
	for i := range lay.L {
		for k := range ns {
			d := (x.outBase[i] + x.validStart[i][k]) * w
			moves = appendMove(moves, move{d: d, s: (laneBase[k] + colSum[k]) * w, n: lay.V[i][k] * w})
			colSum[k] += ss[i][k]
		}
	}
	out := ref.NewRows(w, x.outBase[lay.B()])
	runMoves(out.B, in.G.B, nil, w, moves)
	return ref.CPRerangeOutput{Rows: out}, nil
}
