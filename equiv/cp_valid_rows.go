package equiv

import (
	"bytes"
	"fmt"
	"slices"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// CPValidRows is the differential spec of cp.valid_rows (docs/spec/cp-layout.md §2).
func CPValidRows() *Spec[spec.CPValidRowsInput, spec.CPValidRowsOutput] {
	bnd, rejects := localBoundary(func(sp spec.LayoutSpec, r int, x spec.Rows) spec.CPValidRowsInput {
		return spec.CPValidRowsInput{Layout: sp, Rank: r, X: x}
	})
	return &Spec[spec.CPValidRowsInput, spec.CPValidRowsOutput]{
		Op:          catalog.CPValidRows(),
		Valid:       rapid.Custom(validRowsValid),
		Invalid:     rapid.Custom(validRowsInvalid),
		Boundary:    bnd,
		Regressions: validRowsRegressions(),
		Rejects:     rejects,
		Props: []Prop[spec.CPValidRowsInput, spec.CPValidRowsOutput]{
			{"split-sums", validSplitSums},
			{"mask-popcount", validMaskPopcount},
			{"reverse-index", validReverseIndex},
			{"lane-slots-tile", validLaneSlots},
			{"last-token-owned-once", validLastToken},
			{"selected-are-token-rows", validSelected},
		},
	}
}

// localRowsOf is rank r's SplitLocal rows of a batch of pseudo-random rows
// (width w) with a pseudo-random pad row: what a rank really holds.
func localRowsOf(lay spec.Layout, r, w int, seed uint32) spec.Rows {
	x := catalog.SeededRows(w, lay.TotalValid(), seed)
	rows, err := ref.SplitLocal(spec.DefaultLimits(), lay, r, x, catalog.SeededRows(w, 1, seed^0x9E3779B9).B)
	if err != nil {
		panic(fmt.Sprintf("equiv: SplitLocal: %v", err))
	}
	return rows
}

// localValid draws a layout, a rank and the rank's local rows.
func localValid(t *rapid.T) (spec.LayoutSpec, int, spec.Rows) {
	sp := cpLayout(t)
	lay := mustCPLayout(sp)
	r := rapid.IntRange(0, sp.CP-1).Draw(t, "rank")
	w := rapid.IntRange(1, 8).Draw(t, "w")
	return sp, r, localRowsOf(lay, r, w, rapid.Uint32().Draw(t, "row_seed"))
}

// localInvalid applies one violation shared by the ops taking a rank's
// local rows (§2.4, §4.4): a bad layout, a bad rank, a buffer of another
// contract's length (Rv(r) where it differs from R(r)), or a ragged buffer.
func localInvalid(t *rapid.T) (spec.LayoutSpec, int, spec.Rows, *spec.Sentinel) {
	sp, r, x := localValid(t)
	lay := mustCPLayout(sp)
	switch rapid.IntRange(0, 3).Draw(t, "violation") {
	case 0:
		bad, want := badLayout(t, sp)
		return bad, r, x, want
	case 1:
		return sp, rapid.SampledFrom([]int{-1, sp.CP, sp.CP + 3}).Draw(t, "bad_rank"), x, spec.ErrRank
	case 2:
		n := lay.Rv(r)
		if n == lay.R(r) {
			n = lay.R(r) + rapid.SampledFrom([]int{-1, 1}).Draw(t, "off_by")
		}
		return sp, r, catalog.SeededRows(x.W, n, 3), spec.ErrRowContract
	default:
		return sp, r, raggedRows(t, x), spec.ErrRowCount
	}
}

func validRowsValid(t *rapid.T) spec.CPValidRowsInput {
	sp, r, x := localValid(t)
	return spec.CPValidRowsInput{Layout: sp, Rank: r, X: x}
}

func validRowsInvalid(t *rapid.T) Bad[spec.CPValidRowsInput] {
	sp, r, x, want := localInvalid(t)
	return Bad[spec.CPValidRowsInput]{spec.CPValidRowsInput{Layout: sp, Rank: r, X: x}, want}
}

// localBoundary builds every boundary layout's first and last rank, with
// their local rows, as an op input.
func localBoundary[In any](mk func(spec.LayoutSpec, int, spec.Rows) In) ([]Case[In], map[string]*spec.Sentinel) {
	var cs []Case[In]
	rejects := map[string]*spec.Sentinel{}
	for _, b := range cpBoundaryLayouts() {
		for _, r := range []int{0, b.sp.CP - 1} {
			name := fmt.Sprintf("%s-rank%d", b.name, r)
			x := spec.Rows{W: 2, B: []byte{0, 0}}
			if !b.tooShort {
				x = localRowsOf(mustCPLayout(b.sp), r, 2, 5)
			} else {
				rejects[name] = spec.ErrTooShortForZigzag
			}
			cs = append(cs, Case[In]{name, mk(b.sp, r, x)})
		}
	}
	return cs, rejects
}

// tokenRank is rank r of a batch named by tokens (tag = request·65536 + t)
// with the tag-sentinel pad row.
func tokenRank(sp spec.LayoutSpec, r int) spec.Rows {
	lay := mustCPLayout(sp)
	x := spec.Rows{W: tagW, B: []byte{}}
	for i, l := range lay.L {
		for t := range l {
			x.B = append(x.B, tagRow(uint32(i<<16|t))...)
		}
	}
	rows, err := ref.SplitLocal(spec.DefaultLimits(), lay, r, x, tagRow(tagSentinel))
	if err != nil {
		panic(err)
	}
	return rows
}

// validRowsRegressions: §2.5's minimal inputs. Padded cp=2, g=1, L=[3,4]
// rank 0 holds a0 b0 PAD b3: mask [1,1,0,1], not the suffix form
// [1,1,1,0]. Padded cp=2, g=1, L=[3]: the last token a2 is rank 1 row 1,
// not (from the compute length) rank 0 row 1, a PAD.
func validRowsRegressions() []Case[spec.CPValidRowsInput] {
	a := spec.LayoutSpec{CP: 2, Lens: []int{3, 4}, Granule: 1}
	b := spec.LayoutSpec{CP: 2, Lens: []int{3}, Granule: 1}
	return []Case[spec.CPValidRowsInput]{
		{"valid-mask-suffix", spec.CPValidRowsInput{Layout: a, Rank: 0, X: tokenRank(a, 0)}},
		{"last-token-compute-length", spec.CPValidRowsInput{Layout: b, Rank: 1, X: tokenRank(b, 1)}},
	}
}

// validSplitSums is P2.1: Σ compute splits = Σ C_i, Σ valid splits = Σ L_i,
// valid <= compute elementwise, in both orders.
func validSplitSums(_ spec.Limits, in spec.CPValidRowsInput, out spec.CPValidRowsOutput) error {
	lay := mustCPLayout(in.Layout)
	sumC, sumL := 0, lay.TotalValid()
	for i := range lay.L {
		sumC += lay.ComputeLen(i)
	}
	for _, pair := range [][2][]int{{out.ComputeSplitsRankMajor, out.ValidSplitsRankMajor}, {out.SplitList, out.ValidSplitList}} {
		c, v := pair[0], pair[1]
		if len(c) != lay.NS()*lay.B() || len(v) != len(c) {
			return fmt.Errorf("split lists of %d and %d, want 2·cp·B = %d", len(c), len(v), lay.NS()*lay.B())
		}
		sc, sv := 0, 0
		for j := range c {
			if v[j] > c[j] || v[j] < 0 {
				return fmt.Errorf("piece %d: valid %d, compute %d", j, v[j], c[j])
			}
			sc, sv = sc+c[j], sv+v[j]
		}
		if sc != sumC || sv != sumL {
			return fmt.Errorf("splits sum to %d compute / %d valid, want %d / %d", sc, sv, sumC, sumL)
		}
	}
	return nil
}

// validMaskPopcount is P2.2: the mask has R(r) entries, Rv(r) of them true,
// all true when unpadded.
func validMaskPopcount(_ spec.Limits, in spec.CPValidRowsInput, out spec.CPValidRowsOutput) error {
	lay := mustCPLayout(in.Layout)
	n := 0
	for _, v := range out.ValidMask {
		if v {
			n++
		}
	}
	if len(out.ValidMask) != lay.R(in.Rank) || n != lay.Rv(in.Rank) {
		return fmt.Errorf("mask of %d with %d true, want R=%d with Rv=%d", len(out.ValidMask), n, lay.R(in.Rank), lay.Rv(in.Rank))
	}
	if in.Layout.Granule == 0 && n != len(out.ValidMask) {
		return fmt.Errorf("unpadded layout with %d padding rows", len(out.ValidMask)-n)
	}
	return nil
}

// validReverseIndex is P2.3: ReverseIndex is a permutation of [0, 2·cp·B)
// equal to upstream's cp_reverse_index, request-major splits are the
// rank-major ones read through it, and the rank's zigzag pieces sit at its
// rank-major positions r·2B + q.
func validReverseIndex(_ spec.Limits, in spec.CPValidRowsInput, out spec.CPValidRowsOutput) error {
	lay := mustCPLayout(in.Layout)
	n, b := lay.NS()*lay.B(), lay.B()
	if len(out.ReverseIndex) != n || len(out.SplitList) != n || len(out.ComputeSplitsRankMajor) != n {
		return fmt.Errorf("reverse index of %d, want %d", len(out.ReverseIndex), n)
	}
	perm := slices.Sorted(slices.Values(out.ReverseIndex))
	for j, p := range perm {
		if p != j {
			return fmt.Errorf("reverse index %v is not a permutation of [0,%d)", out.ReverseIndex, n)
		}
	}
	for j, p := range out.ReverseIndex {
		i, k := j/lay.NS(), j%lay.NS()
		// cp_reverse_index: rank-major order lists, per rank, its PREV
		// pieces then its MIRROR pieces, request by request.
		want := k*2*b + i
		if k >= lay.CP {
			want = (lay.NS()-1-k)*2*b + b + i
		}
		if p != want {
			return fmt.Errorf("reverse_index[%d] = %d, want upstream's %d", j, p, want)
		}
		if out.SplitList[j] != out.ComputeSplitsRankMajor[p] || out.ValidSplitList[j] != out.ValidSplitsRankMajor[p] {
			return fmt.Errorf("piece %d: request-major size %d != rank-major[%d] = %d", j, out.SplitList[j], p, out.ComputeSplitsRankMajor[p])
		}
	}
	if len(out.ZigzagIndex) != 2*b {
		return fmt.Errorf("zigzag index of %d pieces, want 2B = %d", len(out.ZigzagIndex), 2*b)
	}
	for q, piece := range out.ZigzagIndex {
		if piece < 0 || piece >= n || out.ReverseIndex[piece] != in.Rank*2*b+q {
			return fmt.Errorf("zigzag_index[%d] = %d is not rank %d's piece %d", q, piece, in.Rank, q)
		}
	}
	return nil
}

// validLaneSlots: the slots tile [0, R(r)) in order, PREV then MIRROR, and
// carry the layout's sizes (§0.3).
func validLaneSlots(_ spec.Limits, in spec.CPValidRowsInput, out spec.CPValidRowsOutput) error {
	lay := mustCPLayout(in.Layout)
	if len(out.LaneSlots) != 2*lay.B() {
		return fmt.Errorf("%d slots, want 2B", len(out.LaneSlots))
	}
	off := 0
	for q, s := range out.LaneSlots {
		k, lane := in.Rank, spec.LanePrev
		if q >= lay.B() {
			k, lane = lay.Mirror(in.Rank), spec.LaneMirror
		}
		if s.Off != off || s.Req != q%lay.B() || s.Seg != k || s.Lane != lane || s.ComputeLen != lay.S[s.Req][k] || s.ValidLen != lay.V[s.Req][k] {
			return fmt.Errorf("slot %d = %+v at offset %d", q, s, off)
		}
		off += s.ComputeLen
	}
	if off != lay.R(in.Rank) {
		return fmt.Errorf("slots cover %d rows, want R = %d", off, lay.R(in.Rank))
	}
	return nil
}

// validLastToken is P2.4: each request's last token is held by exactly the
// rank named, under its valid mask, and that rank's SplitLocal row there is
// token L_i − 1 of request i.
func validLastToken(_ spec.Limits, in spec.CPValidRowsInput, out spec.CPValidRowsOutput) error {
	lay := mustCPLayout(in.Layout)
	if len(out.LastTokenRows) != lay.B() {
		return fmt.Errorf("%d last-token rows, want B", len(out.LastTokenRows))
	}
	for i, lt := range out.LastTokenRows {
		if lt.Rank < 0 || lt.Rank >= lay.CP || lt.LocalRow < 0 || lt.LocalRow >= lay.R(lt.Rank) {
			return fmt.Errorf("request %d: %+v outside the ranks' rows", i, lt)
		}
		if !ref.ValidMask(lay, lt.Rank)[lt.LocalRow] {
			return fmt.Errorf("request %d: %+v is a padding row", i, lt)
		}
		row := tokenRank(in.Layout, lt.Rank).Row(lt.LocalRow)
		if tagOf(row) != uint32(i<<16|(lay.L[i]-1)) || lt.GlobalValidRow != lay.OutBase(i)+lay.L[i]-1 {
			return fmt.Errorf("request %d: %+v holds tag %#x, want token %d", i, lt, tagOf(row), lay.L[i]-1)
		}
	}
	return nil
}

// validSelected is P2.5: the selected rows are X's rows under the mask, one
// per LocalTokenIDs entry, and on a token-tagged batch each is the token
// its id names, never the pad row.
func validSelected(_ spec.Limits, in spec.CPValidRowsInput, out spec.CPValidRowsOutput) error {
	want := spec.Rows{W: in.X.W, B: []byte{}}
	for p, v := range out.ValidMask {
		if v {
			want.B = append(want.B, in.X.Row(p)...)
		}
	}
	if err := rowsEqual("selected", out.Selected, want); err != nil {
		return err
	}
	if len(out.LocalTokenIDs) != out.Selected.N() {
		return fmt.Errorf("%d token ids for %d selected rows", len(out.LocalTokenIDs), out.Selected.N())
	}
	lay := mustCPLayout(in.Layout)
	tok := tokenRank(in.Layout, in.Rank)
	sel, _, err := ref.SelectLocalValidRows(lay, in.Rank, tok)
	if err != nil {
		return err
	}
	for j, id := range out.LocalTokenIDs {
		if got := tagOf(sel.Row(j)); got != uint32(id.Req<<16|id.T) || bytes.Equal(sel.Row(j), tagRow(tagSentinel)) {
			return fmt.Errorf("selected row %d of the tagged batch holds %#x, want token %+v", j, got, id)
		}
	}
	return nil
}
