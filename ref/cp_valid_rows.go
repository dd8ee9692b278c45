package ref

import (
	"fmt"

	"github.com/kvtwin/kvtwin/spec"
)

// ValidateCPValidRows checks in (docs/spec/cp-layout.md §2.4): the layout, the rank,
// the row buffer's shape, then its contract.
func ValidateCPValidRows(lim spec.Limits, in spec.CPValidRowsInput) (spec.Layout, error) {
	lay, err := BuildLayoutAt(lim, "layout", in.Layout)
	if err != nil {
		return spec.Layout{}, err
	}
	if err := lay.CheckRank("rank", in.Rank); err != nil {
		return spec.Layout{}, err
	}
	return lay, CheckLocalRows(lay, in.Rank, "x", in.X)
}

// CheckLocalRows rejects rows that are not rank r's cp-local-compute-padded
// rows: a malformed buffer with ErrRowCount, a count other than R(r) with
// ErrRowContract. The count is the only thing checked against the contract:
// a buffer is never *inferred* to follow another contract from its length
// (R(r) and Rv(r) coincide when a rank holds no padding).
func CheckLocalRows(lay spec.Layout, r int, field string, x spec.Rows) error {
	if err := x.CheckShape(field); err != nil {
		return err
	}
	if n := x.N(); n != lay.R(r) {
		return spec.Reject(spec.ErrRowContract, field, n, fmt.Sprintf("contract %q: R(%d) = %d rows", spec.ContractCPLocalComputePadded, r, lay.R(r)))
	}
	return nil
}

// CPValidRows is cp.valid_rows (docs/spec/cp-layout.md §2.1).
func CPValidRows(lim spec.Limits, in spec.CPValidRowsInput) (spec.CPValidRowsOutput, error) {
	lay, err := ValidateCPValidRows(lim, in)
	if err != nil {
		return spec.CPValidRowsOutput{}, err
	}
	r := in.Rank
	sel, _, err := SelectLocalValidRows(lay, r, in.X)
	if err != nil {
		return spec.CPValidRowsOutput{}, err
	}
	return spec.CPValidRowsOutput{
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
func rankMajor(lay spec.Layout, sizes [][]int) []int {
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
func ComputeSplitsRankMajor(lay spec.Layout) []int { return rankMajor(lay, lay.S) }

// validSplitsRankMajor is ComputeSplitsRankMajor with the valid sizes V.
func validSplitsRankMajor(lay spec.Layout) []int { return rankMajor(lay, lay.V) }

// splitListReqMajor lists S[i][k] request-major (upstream split_list, §2.1).
func splitListReqMajor(lay spec.Layout) []int { return reqMajor(lay.S) }

// validSplitListReqMajor lists V[i][k] request-major (§2.1).
func validSplitListReqMajor(lay spec.Layout) []int { return reqMajor(lay.V) }

// zigzagIndex lists the request-major piece ids i·NS + k rank r takes, in
// its local order: i·NS + r for every i, then i·NS + m(r) for every i (§2.1).
func zigzagIndex(lay spec.Layout, r int) []int {
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
func ReverseIndex(lay spec.Layout) []int {
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
func LaneSlots(lay spec.Layout, r int) []spec.Slot {
	out := []spec.Slot{}
	for _, k := range lay.Lanes(r) {
		lane := lay.LaneOf(k)
		for i := range lay.L {
			out = append(out, spec.Slot{Lane: lane, Req: i, Seg: k, Off: lay.SlotOff(r, lane, i),
				ComputeLen: lay.S[i][k], ValidLen: lay.V[i][k]})
		}
	}
	return out
}

// ValidMask marks rank r's valid local rows (§2.1): slot by slot, V[i][k]
// trues then S[i][k] − V[i][k] falses, so padding is interleaved with
// valid rows rather than a suffix.
func ValidMask(lay spec.Layout, r int) []bool {
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
func LocalTokenIDs(lay spec.Layout, r int) []spec.TokenID {
	out := []spec.TokenID{}
	for _, s := range LaneSlots(lay, r) {
		start := lay.SegStart(s.Req, s.Seg)
		for p := range s.ValidLen {
			out = append(out, spec.TokenID{Req: s.Req, T: start + p})
		}
	}
	return out
}

// SelectLocalValidRows keeps the rows of x where ValidMask(lay, r) is true,
// order kept, and returns the token of each kept row (§2.1). x must be rank
// r's R(r) cp-local-compute-padded rows (ErrRowContract otherwise).
func SelectLocalValidRows(lay spec.Layout, r int, x spec.Rows) (spec.Rows, []spec.TokenID, error) {
	if err := lay.CheckRank("rank", r); err != nil {
		return spec.Rows{}, nil, err
	}
	if err := CheckLocalRows(lay, r, "x", x); err != nil {
		return spec.Rows{}, nil, err
	}
	out := spec.Rows{W: x.W, B: []byte{}}
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
func lastTokenRows(lay spec.Layout) []spec.LastTokenRow {
	out := []spec.LastTokenRow{}
	for i, l := range lay.L {
		t := l - 1
		k := lay.SegmentOf(i, t)
		rank := lay.Owner(k)
		out = append(out, spec.LastTokenRow{Rank: rank,
			LocalRow:       lay.SlotOff(rank, lay.LaneOf(k), i) + t - lay.SegStart(i, k),
			GlobalValidRow: lay.OutBase(i) + t})
	}
	return out
}
