package ref

import "fmt"

// contractCPLocalComputePadded names the row contract of a rank's local
// rows as SplitLocal lays them out: R(r) rows, lane-slot order, padding
// interleaved (docs/spec/cp-layout.md §2.4).
const contractCPLocalComputePadded = "cp-local-compute-padded"

// CPValidRowsInput is the input of cp.valid_rows (docs/spec/cp-layout.md §2.1): a
// layout, a rank, and that rank's local rows.
type CPValidRowsInput struct {
	// Layout names the CP layout.
	Layout LayoutSpec `json:"layout"`
	// Rank is the CP rank r, in [0, cp).
	Rank int `json:"rank"`
	// X holds rank r's local rows under the cp-local-compute-padded contract: R(r) rows.
	X Rows `json:"x"`
}

// Slot is a lane slot (request i, lane) of a rank (§0.3).
type Slot struct {
	// Lane is prev or mirror.
	Lane Lane `json:"lane"`
	// Req is the request index i.
	Req int `json:"req"`
	// Seg is the segment k the slot holds (r for prev, m(r) for mirror).
	Seg int `json:"seg"`
	// Off is the slot's first local row, SlotOff(r, lane, i).
	Off int `json:"off"`
	// ComputeLen is S[i][k], the slot's rows.
	ComputeLen int `json:"compute_len"`
	// ValidLen is V[i][k], its leading valid rows.
	ValidLen int `json:"valid_len"`
}

// TokenID names a request token: request Req, token T (0-based, T < L_Req).
type TokenID struct {
	// Req is the request index.
	Req int `json:"req"`
	// T is the token's index inside the request's extend.
	T int `json:"t"`
}

// LastTokenRow says where request i's last valid token sits (§2.1).
type LastTokenRow struct {
	// Rank is the rank holding the token.
	Rank int `json:"rank"`
	// LocalRow is its row in that rank's local rows.
	LocalRow int `json:"local_row"`
	// GlobalValidRow is its row in global valid order, OutBase(i) + L_i − 1.
	GlobalValidRow int `json:"global_valid_row"`
}

// CPValidRowsOutput is every §2.1 function of the layout, for the input's
// rank where the function takes one.
type CPValidRowsOutput struct {
	// ComputeSplitsRankMajor is ComputeSplitsRankMajor(lay).
	ComputeSplitsRankMajor []int `json:"compute_splits_rank_major"`
	// ValidSplitsRankMajor is validSplitsRankMajor(lay).
	ValidSplitsRankMajor []int `json:"valid_splits_rank_major"`
	// SplitList is splitListReqMajor(lay) (upstream split_list).
	SplitList []int `json:"split_list"`
	// ValidSplitList is validSplitListReqMajor(lay).
	ValidSplitList []int `json:"valid_split_list"`
	// ZigzagIndex is zigzagIndex(lay, rank).
	ZigzagIndex []int `json:"zigzag_index"`
	// ReverseIndex is ReverseIndex(lay) (upstream cp_reverse_index).
	ReverseIndex []int `json:"reverse_index"`
	// LaneSlots is LaneSlots(lay, rank).
	LaneSlots []Slot `json:"lane_slots"`
	// ValidMask is ValidMask(lay, rank).
	ValidMask []bool `json:"valid_mask"`
	// LocalTokenIDs is LocalTokenIDs(lay, rank): the token of each valid local row.
	LocalTokenIDs []TokenID `json:"local_token_ids"`
	// lastTokenRows is lastTokenRows(lay).
	LastTokenRows []LastTokenRow `json:"last_token_rows"`
	// Selected is SelectLocalValidRows(lay, rank, x): the valid rows, order kept.
	Selected Rows `json:"selected"`
}

// ValidateCPValidRows checks in (docs/spec/cp-layout.md §2.4): the layout, the rank,
// the row buffer's shape, then its contract.
func ValidateCPValidRows(lim Limits, in CPValidRowsInput) (Layout, error) {
	lay, err := BuildLayoutAt(lim, "layout", in.Layout)
	if err != nil {
		return Layout{}, err
	}
	if err := lay.CheckRank("rank", in.Rank); err != nil {
		return Layout{}, err
	}
	return lay, CheckLocalRows(lay, in.Rank, "x", in.X)
}

// CheckLocalRows rejects rows that are not rank r's cp-local-compute-padded
// rows: a malformed buffer with ErrRowCount, a count other than R(r) with
// ErrRowContract. The count is the only thing checked against the contract:
// a buffer is never *inferred* to follow another contract from its length
// (R(r) and Rv(r) coincide when a rank holds no padding).
func CheckLocalRows(lay Layout, r int, field string, x Rows) error {
	if err := x.checkShape(field); err != nil {
		return err
	}
	if n := x.N(); n != lay.R(r) {
		return Reject(ErrRowContract, field, n, fmt.Sprintf("contract %q: R(%d) = %d rows", contractCPLocalComputePadded, r, lay.R(r)))
	}
	return nil
}

// CPValidRows is cp.valid_rows (docs/spec/cp-layout.md §2.1).
func CPValidRows(lim Limits, in CPValidRowsInput) (CPValidRowsOutput, error) {
	lay, err := ValidateCPValidRows(lim, in)
	if err != nil {
		return CPValidRowsOutput{}, err
	}
	r := in.Rank
	sel, _, err := SelectLocalValidRows(lay, r, in.X)
	if err != nil {
		return CPValidRowsOutput{}, err
	}
	return CPValidRowsOutput{
		ComputeSplitsRankMajor: ComputeSplitsRankMajor(lay),
		ValidSplitsRankMajor:   validSplitsRankMajor(lay),
		SplitList:              splitListReqMajor(lay),
		ValidSplitList:         validSplitListReqMajor(lay),
		ZigzagIndex:            zigzagIndex(lay, r),
		ReverseIndex:           ReverseIndex(lay),
		LaneSlots:              LaneSlots(lay, r),
		ValidMask:              ValidMask(lay, r),
		LocalTokenIDs:          LocalTokenIDs(lay, r),
		LastTokenRows:          lastTokenRows(lay),
		Selected:               sel,
	}, nil
}

// rankMajor lists sizes[i][k] for r: for i: k = r; for i: k = m(r).
func rankMajor(lay Layout, sizes [][]int) []int {
	out := []int{}
	for r := range lay.CP {
		for _, k := range lay.Lanes(r) {
			for i := range lay.L {
				out = append(out, sizes[i][k])
			}
		}
	}
	return out
}

// reqMajor lists sizes[i][k] for i: for k.
func reqMajor(sizes [][]int) []int {
	out := []int{}
	for _, row := range sizes {
		out = append(out, row...)
	}
	return out
}

// ComputeSplitsRankMajor lists the compute sizes in all-gather order
// (§2.1): for each rank r, S[i][r] for every i, then S[i][m(r)] for every i.
func ComputeSplitsRankMajor(lay Layout) []int { return rankMajor(lay, lay.S) }

// validSplitsRankMajor is ComputeSplitsRankMajor with the valid sizes V.
func validSplitsRankMajor(lay Layout) []int { return rankMajor(lay, lay.V) }

// splitListReqMajor lists S[i][k] request-major (upstream split_list, §2.1).
func splitListReqMajor(lay Layout) []int { return reqMajor(lay.S) }

// validSplitListReqMajor lists V[i][k] request-major (§2.1).
func validSplitListReqMajor(lay Layout) []int { return reqMajor(lay.V) }

// zigzagIndex lists the request-major piece ids i·NS + k rank r takes, in
// its local order: i·NS + r for every i, then i·NS + m(r) for every i (§2.1).
func zigzagIndex(lay Layout, r int) []int {
	out := []int{}
	for _, k := range lay.Lanes(r) {
		for i := range lay.L {
			out = append(out, i*lay.NS()+k)
		}
	}
	return out
}

// ReverseIndex gives, for each piece (i, k) in request-major order, its
// position in rank-major order, owner(k)·2B + (k < cp ? i : B + i)
// (upstream cp_reverse_index, §2.1).
func ReverseIndex(lay Layout) []int {
	out := []int{}
	b := lay.B()
	for i := range lay.L {
		for k := range lay.NS() {
			pos := lay.Owner(k) * 2 * b
			if k < lay.CP {
				pos += i
			} else {
				pos += b + i
			}
			out = append(out, pos)
		}
	}
	return out
}

// LaneSlots lists rank r's lane slots in local order (§0.3, §2.1).
func LaneSlots(lay Layout, r int) []Slot {
	out := []Slot{}
	for _, k := range lay.Lanes(r) {
		lane := lay.LaneOf(k)
		for i := range lay.L {
			out = append(out, Slot{Lane: lane, Req: i, Seg: k, Off: lay.SlotOff(r, lane, i),
				ComputeLen: lay.S[i][k], ValidLen: lay.V[i][k]})
		}
	}
	return out
}

// ValidMask marks rank r's valid local rows (§2.1): slot by slot, V[i][k]
// trues then S[i][k] − V[i][k] falses, so padding is interleaved with
// valid rows rather than a suffix.
func ValidMask(lay Layout, r int) []bool {
	out := []bool{}
	for _, s := range LaneSlots(lay, r) {
		for p := range s.ComputeLen {
			out = append(out, p < s.ValidLen)
		}
	}
	return out
}

// LocalTokenIDs gives the token (i, t) of each valid local row of rank r,
// in local order (§2.1): the cache-write loc of that row is
// req_to_token[i][P_i + t].
func LocalTokenIDs(lay Layout, r int) []TokenID {
	out := []TokenID{}
	for _, s := range LaneSlots(lay, r) {
		start := lay.SegStart(s.Req, s.Seg)
		for p := range s.ValidLen {
			out = append(out, TokenID{Req: s.Req, T: start + p})
		}
	}
	return out
}

// SelectLocalValidRows keeps the rows of x where ValidMask(lay, r) is true,
// order kept, and returns the token of each kept row (§2.1). x must be rank
// r's R(r) cp-local-compute-padded rows (ErrRowContract otherwise).
func SelectLocalValidRows(lay Layout, r int, x Rows) (Rows, []TokenID, error) {
	if err := lay.CheckRank("rank", r); err != nil {
		return Rows{}, nil, err
	}
	if err := CheckLocalRows(lay, r, "x", x); err != nil {
		return Rows{}, nil, err
	}
	out := Rows{W: x.W, B: []byte{}}
	for p, valid := range ValidMask(lay, r) {
		if valid {
			out.B = append(out.B, x.Row(p)...)
		}
	}
	return out, LocalTokenIDs(lay, r), nil
}

// lastTokenRows locates every request's last valid token t* = L_i − 1
// (§2.1): k* is the segment containing t*, Rank = owner(k*), LocalRow =
// SlotOff(Rank, lane(k*), i) + t* − SegStart(i, k*). It is found from the
// valid length, never the compute length (that row may be padding, §2.5).
func lastTokenRows(lay Layout) []LastTokenRow {
	out := []LastTokenRow{}
	for i, l := range lay.L {
		t := l - 1
		k := lay.SegmentOf(i, t)
		rank := lay.Owner(k)
		out = append(out, LastTokenRow{Rank: rank,
			LocalRow:       lay.SlotOff(rank, lay.LaneOf(k), i) + t - lay.SegStart(i, k),
			GlobalValidRow: lay.OutBase(i) + t})
	}
	return out
}

// SegmentOf returns the segment k of request i holding compute position c
// (SegStart(i,k) <= c < SegStart(i,k) + S[i][k]); c must be below C_i.
func (lay Layout) SegmentOf(i, c int) int {
	for k := range lay.NS() {
		if c < lay.SegStart(i, k)+lay.S[i][k] {
			return k
		}
	}
	return lay.NS() - 1
}
