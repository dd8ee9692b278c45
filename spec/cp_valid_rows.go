package spec

// ContractCPLocalComputePadded names the row contract of a rank's local
// rows as SplitLocal lays them out: R(r) rows, lane-slot order, padding
// interleaved (docs/spec/cp-layout.md §2.4).
const ContractCPLocalComputePadded = "cp-local-compute-padded"

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
