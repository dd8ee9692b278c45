package fast

import (
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// CPValidRows is the twin of ref.CPValidRows (docs/spec/cp-layout.md §2.1): every
// list is sized exactly and filled from running sums in one pass over the
// sizes; the mask is set a slot's valid run at a time and the valid rows
// are selected with one move per lane slot.
func CPValidRows(lim spec.Limits, in spec.CPValidRowsInput) (spec.CPValidRowsOutput, error) {
	lay, err := ref.ValidateCPValidRows(lim, in)
	if err != nil {
		return spec.CPValidRowsOutput{}, err
	}
	x, r := newCPIndex(lay), in.Rank
	out := spec.CPValidRowsOutput{
		ComputeSplitsRankMajor: rankMajorSizes(lay, lay.S),
		ValidSplitsRankMajor:   rankMajorSizes(lay, lay.V),
		SplitList:              reqMajorSizes(lay.S),
		ValidSplitList:         reqMajorSizes(lay.V),
		ZigzagIndex:            zigzagIndex(lay, r),
		ReverseIndex:           reverseIndex(lay),
		LaneSlots:              laneSlots(lay, r),
		LastTokenRows:          lastTokenRows(x),
	}
	out.ValidMask, out.LocalTokenIDs = maskAndTokens(x, out.LaneSlots, in.X.N())
	out.Selected = selectValid(lay, r, in.X)
	return out, nil
}

func rankMajorSizes(lay spec.Layout, sizes [][]int) []int {
	out := make([]int, 0, lay.NS()*lay.B())
	for r := range lay.CP {
		for _, k := range lay.Lanes(r) {
			for _, s := range sizes {
				out = append(out, s[k])
			}
		}
	}
	return out
}

func reqMajorSizes(sizes [][]int) []int {
	out := make([]int, 0, len(sizes)*len(sizes[0]))
	for _, s := range sizes {
		out = append(out, s...)
	}
	return out
}

func zigzagIndex(lay spec.Layout, r int) []int {
	out := make([]int, 0, 2*lay.B())
	for _, k := range lay.Lanes(r) {
		for i := range lay.L {
			out = append(out, i*lay.NS()+k)
		}
	}
	return out
}

func reverseIndex(lay spec.Layout) []int {
	b, cp := lay.B(), lay.CP
	out := make([]int, 0, lay.NS()*b)
	for i := range b {
		for k := range lay.NS() {
			if k < cp {
				out = append(out, k*2*b+i)
			} else {
				out = append(out, (2*cp-1-k)*2*b+b+i)
			}
		}
	}
	return out
}

// laneSlots lists rank r's slots with a running offset.
func laneSlots(lay spec.Layout, r int) []spec.Slot {
	out := make([]spec.Slot, 0, 2*lay.B())
	off := 0
	for _, k := range lay.Lanes(r) {
		lane := lay.LaneOf(k)
		for i := range lay.L {
			out = append(out, spec.Slot{Lane: lane, Req: i, Seg: k, Off: off, ComputeLen: lay.S[i][k], ValidLen: lay.V[i][k]})
			off += lay.S[i][k]
		}
	}
	return out
}

// maskAndTokens builds the valid mask of n = R(r) rows and the token id of
// each valid row, a slot at a time.
func maskAndTokens(x *cpIndex, slots []spec.Slot, n int) ([]bool, []spec.TokenID) {
	valid := 0
	for _, s := range slots {
		valid += s.ValidLen
	}
	mask, ids := make([]bool, n), make([]spec.TokenID, 0, valid)
	for _, s := range slots {
		run := mask[s.Off : s.Off+s.ValidLen]
		for p := range run {
			run[p] = true
		}
		start := x.segStart[s.Req][s.Seg]
		for p := range s.ValidLen {
			ids = append(ids, spec.TokenID{Req: s.Req, T: start + p})
		}
	}
	return mask, ids
}

// lastTokenRows locates each request's last valid token from the prefix
// sums; SlotOff comes from running column sums of S, so the whole list is
// O(B·NS).
func lastTokenRows(x *cpIndex) []spec.LastTokenRow {
	lay := x.lay
	ns := lay.NS()
	mirrorBase, colSum := make([]int, lay.CP), make([]int, ns)
	for r := range lay.CP {
		mirrorBase[r] = laneRows(lay.S, r)
	}
	out := make([]spec.LastTokenRow, 0, lay.B())
	for i, l := range lay.L {
		t := l - 1
		k := 0
		for x.segStart[i][k+1] <= t && k < ns-1 {
			k++
		}
		rank, off := lay.Owner(k), colSum[k]
		if lay.LaneOf(k) == spec.LaneMirror {
			off += mirrorBase[rank]
		}
		out = append(out, spec.LastTokenRow{Rank: rank, LocalRow: off + t - x.segStart[i][k], GlobalValidRow: x.outBase[i] + t})
		for k := range ns {
			colSum[k] += lay.S[i][k]
		}
	}
	return out
}

// compactMoves plans rank r's valid rows, slot by slot, into a dense
// buffer: one move per slot (merged where slots are adjacent).
func compactMoves(lay spec.Layout, r, w int) ([]move, int) {
	moves := make([]move, 0, 2*lay.B())
	off, d := 0, 0
	for _, k := range lay.Lanes(r) {
		for i := range lay.L {
			v := lay.V[i][k]
			moves = appendMove(moves, move{d: d * w, s: off * w, n: v * w})
			off += lay.S[i][k]
			d += v
		}
	}
	return moves, d
}

// selectValid returns rank r's valid rows of x (R(r) rows, checked), order kept.
func selectValid(lay spec.Layout, r int, x spec.Rows) spec.Rows {
	moves, n := compactMoves(lay, r, x.W)
	out := ref.NewRows(x.W, n)
	runMoves(out.B, x.B, nil, x.W, moves)
	return out
}
