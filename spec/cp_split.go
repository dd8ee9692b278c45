package spec

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

// Lanes returns rank r's two segments in lane order: PREV (segment r),
// then MIRROR (segment m(r)) (§0.3).
func (lay Layout) Lanes(r int) [2]int { return [2]int{r, lay.Mirror(r)} }
