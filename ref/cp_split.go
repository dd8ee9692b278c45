package ref

import "github.com/kvtwin/kvtwin/spec"

// CPSplit is cp.split (docs/spec/cp-layout.md §1): every rank's SplitLocal rows and
// positionsLocal ids.
func CPSplit(lim spec.Limits, in spec.CPSplitInput) (spec.CPSplitOutput, error) {
	lay, err := ValidateCPSplit(lim, in)
	if err != nil {
		return spec.CPSplitOutput{}, err
	}
	out := spec.CPSplitOutput{Ranks: make([]spec.CPSplitRank, lay.CP)}
	for r := range lay.CP {
		rows, err := SplitLocal(lim, lay, r, in.X, in.Pad)
		if err != nil {
			return spec.CPSplitOutput{}, err
		}
		pos, err := positionsLocal(lay, r, in.Prefix)
		if err != nil {
			return spec.CPSplitOutput{}, err
		}
		out.Ranks[r] = spec.CPSplitRank{Rows: rows, Positions: pos}
	}
	return out, nil
}

// SplitLocal returns rank r's local rows (docs/spec/cp-layout.md §1.2): for lane PREV
// then MIRROR, for every request i, the V[i][k] rows of segment k taken from
// X (global valid order), then S[i][k] − V[i][k] copies of pad. X must hold
// Σ L_i rows and pad one row; the R(r)·W output is checked against lim.
func SplitLocal(lim spec.Limits, lay spec.Layout, r int, x spec.Rows, pad []byte) (spec.Rows, error) {
	if err := lay.CheckRank("rank", r); err != nil {
		return spec.Rows{}, err
	}
	if err := x.CheckRows("x", lay.TotalValid()); err != nil {
		return spec.Rows{}, err
	}
	if err := checkPad("pad", pad, x.W); err != nil {
		return spec.Rows{}, err
	}
	if err := lim.CheckOutput("layout", int64(lay.R(r)), int64(x.W)); err != nil {
		return spec.Rows{}, err
	}
	out := spec.Rows{W: x.W, B: make([]byte, 0, lay.R(r)*x.W)}
	for _, k := range lay.Lanes(r) {
		for i := range lay.L {
			start := lay.OutBase(i) + lay.SegStart(i, k)
			for p := range lay.V[i][k] {
				out.B = append(out.B, x.Row(start+p)...)
			}
			for range lay.S[i][k] - lay.V[i][k] {
				out.B = append(out.B, pad...)
			}
		}
	}
	return out, nil
}

// positionsLocal returns the position id of each of rank r's local compute
// rows (docs/spec/cp-layout.md §1.2): the row at compute position c of request i gets
// P_i + c, padding rows included (positions continue through the padding;
// §2 masks padding out of cache writes and logits).
func positionsLocal(lay spec.Layout, r int, prefix []int64) ([]int64, error) {
	if err := lay.CheckRank("rank", r); err != nil {
		return nil, err
	}
	if err := checkPrefix(lay, "prefix", prefix); err != nil {
		return nil, err
	}
	pos := make([]int64, 0, lay.R(r))
	for _, k := range lay.Lanes(r) {
		for i := range lay.L {
			start := int64(lay.SegStart(i, k))
			for p := range lay.S[i][k] {
				pos = append(pos, prefix[i]+start+int64(p))
			}
		}
	}
	return pos, nil
}
