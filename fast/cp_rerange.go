package fast

import (
	"fmt"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// CPRerange is the twin of ref.CPRerange (docs/spec/cp-layout.md §3): a plan of one
// move per (request, segment), built in output order from running column
// sums of the sizes each rank sent (source offsets) and the valid prefix
// sums (placement), then executed in parallel chunks for large batches.
func CPRerange(lim spec.Limits, in spec.CPRerangeInput) (spec.CPRerangeOutput, error) {
	lay, src, err := ref.ValidateCPRerange(lim, in)
	if err != nil {
		return spec.CPRerangeOutput{}, err
	}
	out := ref.NewRows(in.G.W, lay.TotalValid())
	rerangeInto(out, lay, in.G, in.M, src)
	return spec.CPRerangeOutput{Rows: out}, nil
}

// RerangeInto is ref.Rerange into a caller's buffer (production all-gather
// outputs are preallocated and reused): dst must hold Σ L_i rows of g's
// width (ErrRowCount otherwise) and g must pass ref.CheckGathered.
func RerangeInto(dst spec.Rows, lay spec.Layout, g spec.Rows, m int, src spec.SrcKind) error {
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
func checkInto(dst spec.Rows, w, n int) error {
	if dst.W != w {
		return spec.Reject(spec.ErrRowCount, "dst.w", dst.W, fmt.Sprintf("the source width (%d)", w))
	}
	return dst.CheckRows("dst", n)
}

// rerangeInto plans and runs the gather into out. The plan walks (request,
// segment) in output order, so a move's destination is the running sum of
// the valid rows before it (OutBase(i) + Σ_{k'<k} V[i][k'], since
// Σ_k V[i][k] = L[i], docs/spec/cp-layout.md §0), and its source the owner lane's base plus the
// running column sum of the rows each earlier request sent: no prefix-sum
// index (cpIndex) is built, so the call allocates the plan and the two
// per-segment sums only, whatever the rows. The row bytes dominate: a
// profile of the 128K-row shape is ~98 % memmove, so the plan is all that is
// left to trim.
func rerangeInto(out spec.Rows, lay spec.Layout, g spec.Rows, m int, src spec.SrcKind) {
	ss := lay.S
	if src == spec.SrcValid {
		ss = lay.V
	}
	w, ns := g.W, lay.NS()
	// base[k]: where segment k's next request starts in G, in rows: the
	// owner's block (r·m), its lane's offset (the PREV lane's rows for
	// MIRROR segments), then the rows earlier requests sent in that lane.
	base := make([]int, ns)
	for k := range ns {
		r := lay.Owner(k)
		base[k] = r * m
		if lay.LaneOf(k) == spec.LaneMirror {
			base[k] += laneRows(ss, r)
		}
	}
	moves := make([]move, 0, ns*lay.B())
	d := 0
	for i := range lay.L {
		vi, si := lay.V[i][:ns], ss[i][:ns]
		for k := range ns {
			moves = appendMove(moves, move{d: d * w, s: base[k] * w, n: vi[k] * w})
			d += vi[k]
			base[k] += si[k]
		}
	}
	runMoves(out.B, g.B, nil, w, moves)
}
