package fast

import (
	"fmt"

	"github.com/kvtwin/kvtwin/ref"
)

// CPRerange is the twin of ref.CPRerange (docs/spec/cp-layout.md §3): a plan of one
// move per (request, segment), built in output order from running column
// sums of the sizes each rank sent (source offsets) and the valid prefix
// sums (placement), then executed in parallel chunks for large batches.
func CPRerange(lim ref.Limits, in ref.CPRerangeInput) (ref.CPRerangeOutput, error) {
	lay, src, err := ref.ValidateCPRerange(lim, in)
	if err != nil {
		return ref.CPRerangeOutput{}, err
	}
	out := ref.NewRows(in.G.W, lay.TotalValid())
	rerangeInto(out, lay, in.G, in.M, src)
	return ref.CPRerangeOutput{Rows: out}, nil
}

// RerangeInto is ref.Rerange into a caller's buffer (production all-gather
// outputs are preallocated and reused): dst must hold Σ L_i rows of g's
// width (ErrRowCount otherwise) and g must pass ref.CheckGathered.
func RerangeInto(dst ref.Rows, lay ref.Layout, g ref.Rows, m int, src ref.SrcKind) error {
	if err := ref.CheckGathered(lay, g, m, src); err != nil {
		return err
	}
	if err := checkInto(dst, g.W, lay.TotalValid()); err != nil {
		return err
	}
	rerangeInto(dst, lay, g, m, src)
	return nil
}

// checkInto rejects a destination buffer of another width or row count.
func checkInto(dst ref.Rows, w, n int) error {
	if dst.W != w {
		return ref.Reject(ref.ErrRowCount, "dst.w", dst.W, fmt.Sprintf("the source width (%d)", w))
	}
	return dst.CheckRows("dst", n)
}

func rerangeInto(out ref.Rows, lay ref.Layout, g ref.Rows, m int, src ref.SrcKind) {
	ss := lay.S
	if src == ref.SrcValid {
		ss = lay.V
	}
	x, w := newCPIndex(lay), g.W
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
	runMoves(out.B, g.B, nil, w, moves)
}
