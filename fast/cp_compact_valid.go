package fast

import (
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// CPCompactValid is the twin of ref.CPCompactValid (docs/spec/cp-layout.md §4.2
// steps 1–2): one move per lane slot's valid run, in parallel chunks for
// large buffers.
func CPCompactValid(lim spec.Limits, in spec.CPCompactValidInput) (spec.CPCompactValidOutput, error) {
	lay, err := ref.ValidateCPCompactValid(lim, in)
	if err != nil {
		return spec.CPCompactValidOutput{}, err
	}
	return spec.CPCompactValidOutput{Rows: selectValid(lay, in.Rank, in.X)}, nil
}

// CompactValidInto is ref.CompactValid into a caller's buffer (a MoE
// input buffer reused across forwards): x must be rank r's R(r) local rows
// and dst hold Rv(r) rows of x's width (ErrRowCount otherwise).
func CompactValidInto(dst spec.Rows, lay spec.Layout, r int, x spec.Rows) error {
	if err := lay.CheckRank("rank", r); err != nil {
		return err
	}
	if err := ref.CheckLocalRows(lay, r, "x", x); err != nil {
		return err
	}
	if err := checkInto(dst, x.W, rankRows(lay, lay.V, r)); err != nil {
		return err
	}
	moves, _ := compactMoves(lay, r, x.W)
	runMoves(dst.B, x.B, nil, x.W, moves)
	return nil
}

// CPRestorePadded is the twin of ref.CPRestorePadded (docs/spec/cp-layout.md §4.2
// step 4): the compaction plan run backwards into a zeroed buffer, so the
// padding rows stay zero without being written.
func CPRestorePadded(lim spec.Limits, in spec.CPRestorePaddedInput) (spec.CPRestorePaddedOutput, error) {
	lay, err := ref.ValidateCPRestorePadded(lim, in)
	if err != nil {
		return spec.CPRestorePaddedOutput{}, err
	}
	w := in.Y.W
	moves, _ := compactMoves(lay, in.Rank, w)
	for i := range moves {
		moves[i].d, moves[i].s = moves[i].s, moves[i].d
	}
	out := ref.NewRows(w, rankRows(lay, lay.S, in.Rank))
	runMoves(out.B, in.Y.B, nil, w, moves)
	return spec.CPRestorePaddedOutput{Rows: out}, nil
}
