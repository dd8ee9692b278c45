package ref

// CPSplitInput is the input of cp.split (docs/spec/cp-layout.md §1.1): a batch's rows
// in global valid order and what SplitLocal and positionsLocal need to give
// every rank its local rows.
type CPSplitInput struct {
	// Layout names the CP layout (cp, valid lengths, granule).
	Layout LayoutSpec `json:"layout"`
	// X holds the batch rows in global valid order: Σ L_i rows, request-major.
	X Rows `json:"x"`
	// Pad is the W-byte pattern written into every synthetic (padding) row.
	Pad []byte `json:"pad"`
	// Prefix holds P_i, each request's prefix length (tokens already cached), >= 0.
	Prefix []int64 `json:"prefix"`
}

// CPSplitRank is one rank's share of the batch.
type CPSplitRank struct {
	// Rows are the rank's R(r) local compute rows in lane-slot order (§0.3).
	Rows Rows `json:"rows"`
	// Positions is the position id of each local row (positionsLocal).
	Positions []int64 `json:"positions"`
}

// CPSplitOutput is every rank's share, rank 0 first.
type CPSplitOutput struct {
	// Ranks holds rank r's rows and positions at index r.
	Ranks []CPSplitRank `json:"ranks"`
}

// CPSplit is cp.split (docs/spec/cp-layout.md §1): every rank's SplitLocal rows and
// positionsLocal ids.
func CPSplit(lim Limits, in CPSplitInput) (CPSplitOutput, error) {
	lay, err := ValidateCPSplit(lim, in)
	if err != nil {
		return CPSplitOutput{}, err
	}
	out := CPSplitOutput{Ranks: make([]CPSplitRank, lay.CP)}
	for r := range lay.CP {
		rows, err := SplitLocal(lim, lay, r, in.X, in.Pad)
		if err != nil {
			return CPSplitOutput{}, err
		}
		pos, err := positionsLocal(lay, r, in.Prefix)
		if err != nil {
			return CPSplitOutput{}, err
		}
		out.Ranks[r] = CPSplitRank{Rows: rows, Positions: pos}
	}
	return out, nil
}

// Lanes returns rank r's two segments in lane order: PREV (segment r),
// then MIRROR (segment m(r)) (§0.3).
func (lay Layout) Lanes(r int) [2]int { return [2]int{r, lay.Mirror(r)} }

// SplitLocal returns rank r's local rows (docs/spec/cp-layout.md §1.2): for lane PREV
// then MIRROR, for every request i, the V[i][k] rows of segment k taken from
// X (global valid order), then S[i][k] − V[i][k] copies of pad. X must hold
// Σ L_i rows and pad one row; the R(r)·W output is checked against lim.
func SplitLocal(lim Limits, lay Layout, r int, x Rows, pad []byte) (Rows, error) {
	if err := lay.CheckRank("rank", r); err != nil {
		return Rows{}, err
	}
	if err := x.CheckRows("x", lay.TotalValid()); err != nil {
		return Rows{}, err
	}
	if err := checkPad("pad", pad, x.W); err != nil {
		return Rows{}, err
	}
	if err := lim.CheckOutput("layout", int64(lay.R(r)), int64(x.W)); err != nil {
		return Rows{}, err
	}
	out := Rows{W: x.W, B: make([]byte, 0, lay.R(r)*x.W)}
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
func positionsLocal(lay Layout, r int, prefix []int64) ([]int64, error) {
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
