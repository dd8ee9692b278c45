package fast

import (
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// CPSplit is the twin of ref.CPSplit (docs/spec/cp-layout.md §1): one output buffer
// for all ranks (rank r's rows are a capacity-limited window of it), filled
// from a plan of one move per lane slot's valid rows and one per slot's
// padding, executed in parallel chunks for large batches.
func CPSplit(lim spec.Limits, in spec.CPSplitInput) (spec.CPSplitOutput, error) {
	lay, err := ref.ValidateCPSplit(lim, in)
	if err != nil {
		return spec.CPSplitOutput{}, err
	}
	x, w := newCPIndex(lay), in.X.W
	total := 0
	for i := range lay.L {
		total += x.segStart[i][lay.NS()]
	}
	buf, pos := make([]byte, total*w), make([]int64, total)
	moves := make([]move, 0, 4*lay.NS()*lay.B())
	out := spec.CPSplitOutput{Ranks: make([]spec.CPSplitRank, lay.CP)}
	off := 0
	for r := range lay.CP {
		start := off
		for _, k := range lay.Lanes(r) {
			for i := range lay.L {
				s, v, c := lay.S[i][k], lay.V[i][k], x.segStart[i][k]
				moves = appendMove(moves, move{d: off * w, s: (x.outBase[i] + c) * w, n: v * w})
				moves = appendMove(moves, move{d: (off + v) * w, s: -1, n: (s - v) * w})
				first := in.Prefix[i] + int64(c)
				for p := range pos[off : off+s] {
					pos[off+p] = first + int64(p)
				}
				off += s
			}
		}
		out.Ranks[r] = spec.CPSplitRank{Rows: spec.Rows{W: w, B: buf[start*w : off*w : off*w]}, Positions: pos[start:off:off]}
	}
	runMoves(buf, in.X.B, in.Pad, w, moves)
	return out, nil
}
