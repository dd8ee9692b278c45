package fast

import "github.com/kvtwin/kvtwin/ref"

// CPCompactValid is the twin of ref.CPCompactValid (docs/spec/cp-layout.md §4.2
// steps 1–2): one move per lane slot's valid run, in parallel chunks for
// large buffers.
func CPCompactValid(lim ref.Limits, in ref.CPCompactValidInput) (ref.CPCompactValidOutput, error) {
	lay, err := ref.ValidateCPCompactValid(lim, in)
	if err != nil {
		return ref.CPCompactValidOutput{}, err
	}
	return ref.CPCompactValidOutput{Rows: selectValid(lay, in.Rank, in.X)}, nil
}

// CompactValidInto is ref.CompactValid into a caller's buffer (a MoE
// input buffer reused across forwards): x must be rank r's R(r) local rows
// and dst hold Rv(r) rows of x's width (ErrRowCount otherwise).
func CompactValidInto(dst ref.Rows, lay ref.Layout, r int, x ref.Rows) error {
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
func CPRestorePadded(lim ref.Limits, in ref.CPRestorePaddedInput) (ref.CPRestorePaddedOutput, error) {
	lay, err := ref.ValidateCPRestorePadded(lim, in)
	if err != nil {
		return ref.CPRestorePaddedOutput{}, err
	}
	w := in.Y.W
	moves, _ := compactMoves(lay, in.Rank, w)
	for i := range moves {
		moves[i].d, moves[i].s = moves[i].s, moves[i].d
	}
	out := ref.NewRows(w, rankRows(lay, lay.S, in.Rank))
	runMoves(out.B, in.Y.B, nil, w, moves)
	return ref.CPRestorePaddedOutput{Rows: out}, nil
}
