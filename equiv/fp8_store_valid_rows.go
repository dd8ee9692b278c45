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

// FP8StoreValidRows is the differential spec of fp8.store_valid_rows
// (docs/spec/cp-layout.md §7.4 StoreValidRows, P7.2).
func FP8StoreValidRows() *Spec[spec.FP8StoreValidRowsInput, spec.FP8StoreValidRowsOutput] {
	return &Spec[spec.FP8StoreValidRowsInput, spec.FP8StoreValidRowsOutput]{
		Op:          catalog.FP8StoreValidRows(),
		Valid:       rapid.Custom(storeValidValid),
		Invalid:     rapid.Custom(storeValidInvalid),
		Boundary:    storeValidBoundary(),
		Regressions: storeValidRegressions(),
		Rejects: map[string]*spec.Sentinel{
			"rank-equals-cp":        spec.ErrRank,
			"valid-rows-given":      spec.ErrRowContract,
			"slot-equals-num-slots": spec.ErrSlotOutOfRange,
			"two-tokens-one-slot":   spec.ErrDuplicateSlot,
			"req-to-token-short":    spec.ErrLengthMismatch,
		},
		Props: []Prop[spec.FP8StoreValidRowsInput, spec.FP8StoreValidRowsOutput]{
			{"stored-slots-hold-quantized-valid-rows", storeValidStored},
			{"other-slots-unchanged", storeValidOthers},
			{"padding-never-stored", storeValidPadding},
			{"all-ranks-materialize-global-valid-rows", storeValidAllRanks},
		},
	}
}

// finiteLocalRows is rank r's R(r) local 1152-byte rows of finite bf16
// values split from global rows g (pad: a finite seeded row).
func finiteLocalRows(lay spec.Layout, r int, g spec.Rows, pad []byte) spec.Rows {
	x, err := ref.SplitLocal(spec.DefaultLimits(), lay, r, g, pad)
	if err != nil {
		panic(fmt.Sprintf("equiv: SplitLocal: %v", err))
	}
	return x
}

// pagedReqToToken gives each request of lens, with prefix pre[i], whole
// pages of ps slots in the page order perm (page ids >= 1): request i's
// list covers ceil((P_i + L_i)/ps) pages.
func pagedReqToToken(ps int64, lens, pre []int, perm []int64) [][]int64 {
	r2t := make([][]int64, len(lens))
	at := 0
	for i, l := range lens {
		np := (int64(pre[i]+l) + ps - 1) / ps
		r2t[i] = []int64{}
		for _, p := range perm[at : at+int(np)] {
			for s := range ps {
				r2t[i] = append(r2t[i], p*ps+s)
			}
		}
		at += int(np)
	}
	return r2t
}

// pagesNeeded is Σ_i ceil((P_i + L_i)/ps).
func pagesNeeded(ps int64, lens, pre []int) int64 {
	n := int64(0)
	for i, l := range lens {
		n += (int64(pre[i]+l) + ps - 1) / ps
	}
	return n
}

func storeValidValid(t *rapid.T) spec.FP8StoreValidRowsInput {
	sp := composeLayout(t)
	lay := mustCPLayout(sp)
	r := rapid.IntRange(0, sp.CP-1).Draw(t, "rank")
	ps := rapid.Int64Range(1, 4).Draw(t, "page_size")
	pre := make([]int, len(sp.Lens))
	for i := range pre {
		pre[i] = int(ps) * rapid.IntRange(0, 2).Draw(t, "prefix_pages")
	}
	need := pagesNeeded(ps, sp.Lens, pre)
	extra := rapid.Int64Range(0, 2).Draw(t, "extra_pages")
	ids := make([]int64, need+extra)
	for i := range ids {
		ids[i] = int64(i) + 1
	}
	perm := rapid.Permutation(ids).Draw(t, "pages")
	size := (need + extra) * ps
	seed := rapid.Uint32().Draw(t, "row_seed")
	g := composeGlobalRows(lay.TotalValid(), seed)
	pad := composeGlobalRows(1, seed^0x5bd1e995).B
	return spec.FP8StoreValidRowsInput{
		Pool:       spec.FP8Pool{PageSize: ps, Size: size, Rows: catalog.SeededRows(spec.FP8RowBytes, int(size+ps), rapid.Uint32().Draw(t, "pool_seed"))},
		Layout:     sp,
		Rank:       r,
		X:          finiteLocalRows(lay, r, g, pad),
		ReqToToken: pagedReqToToken(ps, sp.Lens, pre, perm),
		PrefixLens: pre,
	}
}

// storeValidUsed lists (request, index) of the req_to_token entries rank r
// writes through, local order.
func storeValidUsed(in spec.FP8StoreValidRowsInput) [][2]int {
	lay := mustCPLayout(in.Layout)
	used := [][2]int{}
	for _, tok := range ref.LocalTokenIDs(lay, in.Rank) {
		used = append(used, [2]int{tok.Req, in.PrefixLens[tok.Req] + tok.T})
	}
	return used
}

func cloneReqToToken(r2t [][]int64) [][]int64 {
	out := make([][]int64, len(r2t))
	for i, l := range r2t {
		out[i] = slices.Clone(l)
	}
	return out
}

func storeValidInvalid(t *rapid.T) Bad[spec.FP8StoreValidRowsInput] {
	in := storeValidValid(t)
	used := storeValidUsed(in)
	lay := mustCPLayout(in.Layout)
	n := in.Pool.Size + in.Pool.PageSize
	v := rapid.IntRange(0, 8).Draw(t, "violation")
	if (v >= 6 && len(used) == 0) || (v == 7 && len(used) < 2) {
		v = 1
	}
	switch v {
	case 0:
		p, want := fp8BadPool(t, in.Pool)
		in.Pool = p
		return Bad[spec.FP8StoreValidRowsInput]{in, want}
	case 1:
		in.Rank = rapid.SampledFrom([]int{-1, in.Layout.CP}).Draw(t, "bad_rank")
		return Bad[spec.FP8StoreValidRowsInput]{in, spec.ErrRank}
	case 2:
		in.ReqToToken = append(cloneReqToToken(in.ReqToToken), []int64{})
		return Bad[spec.FP8StoreValidRowsInput]{in, spec.ErrLengthMismatch}
	case 3:
		in.PrefixLens = slices.Clone(in.PrefixLens)
		in.PrefixLens[rapid.IntRange(0, len(in.PrefixLens)-1).Draw(t, "neg_at")] = -1
		return Bad[spec.FP8StoreValidRowsInput]{in, spec.ErrNegative}
	case 4:
		i := rapid.IntRange(0, len(in.ReqToToken)-1).Draw(t, "short_at")
		in.ReqToToken = cloneReqToToken(in.ReqToToken)
		in.ReqToToken[i] = in.ReqToToken[i][:in.PrefixLens[i]+lay.L[i]-1]
		return Bad[spec.FP8StoreValidRowsInput]{in, spec.ErrLengthMismatch}
	case 5:
		if rapid.Bool().Draw(t, "wrong_width") {
			in.X = spec.Rows{W: spec.FP8RowBytes, B: make([]byte, spec.FP8RowBytes*in.X.N())}
			return Bad[spec.FP8StoreValidRowsInput]{in, spec.ErrUnsupportedDims}
		}
		in.X = spec.Rows{W: in.X.W, B: append(bytes.Clone(in.X.B), make([]byte, in.X.W)...)}
		return Bad[spec.FP8StoreValidRowsInput]{in, spec.ErrRowContract}
	case 6:
		u := used[rapid.IntRange(0, len(used)-1).Draw(t, "bad_at")]
		in.ReqToToken = cloneReqToToken(in.ReqToToken)
		in.ReqToToken[u[0]][u[1]] = rapid.SampledFrom([]int64{-1, n, n + 3}).Draw(t, "bad_loc")
		return Bad[spec.FP8StoreValidRowsInput]{in, spec.ErrSlotOutOfRange}
	case 7:
		j := rapid.IntRange(1, len(used)-1).Draw(t, "dup_at")
		i := rapid.IntRange(0, j-1).Draw(t, "dup_of")
		in.ReqToToken = cloneReqToToken(in.ReqToToken)
		in.ReqToToken[used[j][0]][used[j][1]] = in.ReqToToken[used[i][0]][used[i][1]]
		return Bad[spec.FP8StoreValidRowsInput]{in, spec.ErrDuplicateSlot}
	default:
		mask := ref.ValidMask(lay, in.Rank)
		valid := []int{}
		for p, ok := range mask {
			if ok {
				valid = append(valid, p)
			}
		}
		p := valid[rapid.IntRange(0, len(valid)-1).Draw(t, "nan_row")]
		j := rapid.IntRange(0, 575).Draw(t, "inf_at")
		in.X = spec.Rows{W: in.X.W, B: bytes.Clone(in.X.B)}
		in.X.Row(p)[2*j], in.X.Row(p)[2*j+1] = 0x80, 0x7F
		return Bad[spec.FP8StoreValidRowsInput]{in, spec.ErrNonFinite}
	}
}

// storeValidBS5 is the seed's bs=5 page-aligned round trip for rank r:
// cp=2, g=1, L=[3,1,5,2,4], ps=4, prefixes of 0 or 1 page, every request
// on whole pages in a shuffled order.
func storeValidBS5(r int) spec.FP8StoreValidRowsInput {
	sp := spec.LayoutSpec{CP: 2, Lens: []int{3, 1, 5, 2, 4}, Granule: 1}
	lay := mustCPLayout(sp)
	pre := []int{4, 0, 4, 0, 4}
	const ps = 4
	need := pagesNeeded(ps, sp.Lens, pre)
	perm := []int64{}
	for p := need; p >= 1; p-- {
		perm = append(perm, p)
	}
	return spec.FP8StoreValidRowsInput{
		Pool:       spec.FP8Pool{PageSize: ps, Size: need * ps, Rows: catalog.SeededRows(spec.FP8RowBytes, int((need+1)*ps), 57)},
		Layout:     sp,
		Rank:       r,
		X:          finiteLocalRows(lay, r, composeGlobalRows(lay.TotalValid(), 59), composeGlobalRows(1, 61).B),
		ReqToToken: pagedReqToToken(ps, sp.Lens, pre, perm),
		PrefixLens: pre,
	}
}

func storeValidBoundary() []Case[spec.FP8StoreValidRowsInput] {
	tiny := func(sp spec.LayoutSpec, r int, x spec.Rows) spec.FP8StoreValidRowsInput {
		lay := mustCPLayout(sp)
		if x.W == 0 {
			x = finiteLocalRows(lay, r, composeGlobalRows(lay.TotalValid(), 11), composeGlobalRows(1, 13).B)
		}
		r2t, pre := [][]int64{}, []int{}
		at := int64(2)
		for _, l := range sp.Lens {
			row := []int64{}
			for range l {
				row = append(row, at)
				at++
			}
			r2t, pre = append(r2t, row), append(pre, 0)
		}
		return spec.FP8StoreValidRowsInput{Pool: spec.FP8Pool{PageSize: 2, Size: at, Rows: catalog.SeededRows(spec.FP8RowBytes, int(at+2), 17)}, Layout: sp, Rank: r, X: x, ReqToToken: r2t, PrefixLens: pre}
	}
	padded := spec.LayoutSpec{CP: 2, Lens: []int{3}, Granule: 1}
	outOfRange := tiny(padded, 0, spec.Rows{})
	outOfRange.ReqToToken = [][]int64{{outOfRange.Pool.Size + 2, 3, 4}}
	dup := tiny(spec.LayoutSpec{CP: 2, Lens: []int{3, 4}, Granule: 1}, 0, spec.Rows{})
	dup.ReqToToken = cloneReqToToken(dup.ReqToToken)
	dup.ReqToToken[1][3] = dup.ReqToToken[1][0]
	short := tiny(padded, 1, spec.Rows{})
	short.ReqToToken = [][]int64{{2, 3}}
	// Rank 0's one valid row (a0) where R(0) = 2 rows (a0, PAD) are due.
	validGiven := tiny(padded, 0, composeGlobalRows(1, 19))
	badRank := tiny(padded, 0, spec.Rows{})
	badRank.Rank = 2
	return []Case[spec.FP8StoreValidRowsInput]{
		{"bs5-page-aligned-rank0", storeValidBS5(0)},
		{"bs5-page-aligned-rank1", storeValidBS5(1)},
		{"padded-cp2-rank0-a0-pad", tiny(padded, 0, spec.Rows{})},
		{"padded-cp2-rank-without-valid-rows", tiny(spec.LayoutSpec{CP: 2, Lens: []int{1}, Granule: 1}, 1, spec.Rows{})},
		{"unpadded-cp3", tiny(spec.LayoutSpec{CP: 3, Lens: []int{6, 7}}, 2, spec.Rows{})},
		{"rank-equals-cp", badRank},
		{"valid-rows-given", validGiven},
		{"slot-equals-num-slots", outOfRange},
		{"two-tokens-one-slot", dup},
		{"req-to-token-short", short},
	}
}

// storeValidRegressions: §2.5's scalar non-padded count applied to the
// cache write. Padded cp=2, g=1, L=[3,4], rank 0 rows a0 b0 PAD b3: the
// fixed write stores a0, b0, b3; the suffix count stores a0, b0, PAD and
// never b3.
func storeValidRegressions() []Case[spec.FP8StoreValidRowsInput] {
	sp := spec.LayoutSpec{CP: 2, Lens: []int{3, 4}, Granule: 1}
	lay := mustCPLayout(sp)
	x := finiteLocalRows(lay, 0, composeGlobalRows(lay.TotalValid(), 23), ref.NewRows(spec.MLABF16RowBytes, 1).B)
	return []Case[spec.FP8StoreValidRowsInput]{
		{"store-suffix-count", spec.FP8StoreValidRowsInput{
			Pool: spec.FP8Pool{PageSize: 2, Size: 8, Rows: ref.NewRows(spec.FP8RowBytes, 10)}, Layout: sp, Rank: 0, X: x,
			ReqToToken: [][]int64{{2, 3, 4}, {6, 7, 8, 9}}, PrefixLens: []int{0, 0},
		}},
	}
}

// storeValidSelected is SelectLocalValidRows(x) quantized (div_fp32) and
// the slots they go to.
func storeValidSelected(lim spec.Limits, in spec.FP8StoreValidRowsInput) (spec.Rows, []int64, error) {
	lay, err := ref.BuildLayoutAt(lim, "layout", in.Layout)
	if err != nil {
		return spec.Rows{}, nil, err
	}
	sel, _, err := ref.SelectLocalValidRows(lay, in.Rank, in.X)
	if err != nil {
		return spec.Rows{}, nil, err
	}
	q, err := ref.FP8QuantizeRow(lim, spec.FP8QuantizeRowInput{X: sel})
	if err != nil {
		return spec.Rows{}, nil, err
	}
	return q.Rows, ref.StoreValidLocs(lay, in.Rank, in.ReqToToken, in.PrefixLens), nil
}

// storeValidStored: materializing the written slots returns the rank's
// valid rows quantized, in local order (P7.1 through the layout).
func storeValidStored(lim spec.Limits, in spec.FP8StoreValidRowsInput, out spec.FP8StoreValidRowsOutput) error {
	q, locs, err := storeValidSelected(lim, in)
	if err != nil {
		return err
	}
	m, err := ref.FP8MaterializePages(lim, spec.FP8MaterializePagesInput{Pool: out.Pool, Slots: locs})
	if err != nil {
		return err
	}
	return rowsEqual("materialize(store_valid_rows)", m.Rows, q)
}

// storeValidOthers: the pool keeps its shape and every slot no valid row
// of the rank names keeps its bytes.
func storeValidOthers(lim spec.Limits, in spec.FP8StoreValidRowsInput, out spec.FP8StoreValidRowsOutput) error {
	_, locs, err := storeValidSelected(lim, in)
	if err != nil {
		return err
	}
	return fp8StoreOthersUnchanged(lim, spec.FP8StorePagesInput{Pool: in.Pool, Locs: locs}, spec.FP8StorePagesOutput(out))
}

// storeValidPadding: padding rows never touch the pool, so filling every
// padding row with NaN (which quantize would reject) changes nothing.
func storeValidPadding(lim spec.Limits, in spec.FP8StoreValidRowsInput, out spec.FP8StoreValidRowsOutput) error {
	lay, err := ref.BuildLayoutAt(lim, "layout", in.Layout)
	if err != nil {
		return err
	}
	x := spec.Rows{W: in.X.W, B: bytes.Clone(in.X.B)}
	for p, valid := range ref.ValidMask(lay, in.Rank) {
		if !valid {
			for j := range x.Row(p) {
				x.Row(p)[j] = 0xFF
			}
		}
	}
	in.X = x
	got, err := ref.FP8StoreValidRows(lim, in)
	if err != nil {
		return fmt.Errorf("NaN padding rows rejected: %w", err)
	}
	return rowsEqual("pool with NaN padding", got.Pool.Rows, out.Pool.Rows)
}

// storeValidAllRanks is P7.2: take global valid rows G that agree with the
// input's rank on its tokens; after every other rank also ran
// StoreValidRows on its SplitLocal(G) rows (NaN padding), materializing
// every current slot req_to_token[i][P_i + t] in token order equals
// Quantize(G). Inputs whose current slots repeat across ranks are skipped.
func storeValidAllRanks(lim spec.Limits, in spec.FP8StoreValidRowsInput, out spec.FP8StoreValidRowsOutput) error {
	lay, err := ref.BuildLayoutAt(lim, "layout", in.Layout)
	if err != nil {
		return err
	}
	cur, seen := []int64{}, map[int64]bool{}
	for i, l := range lay.L {
		for t := range l {
			s := in.ReqToToken[i][in.PrefixLens[i]+t]
			if seen[s] {
				return nil
			}
			seen[s] = true
			cur = append(cur, s)
		}
	}
	g := composeGlobalRows(lay.TotalValid(), uint32(len(in.X.B)))
	sel, toks, err := ref.SelectLocalValidRows(lay, in.Rank, in.X)
	if err != nil {
		return err
	}
	for e, tok := range toks {
		copy(g.Row(lay.OutBase(tok.Req)+tok.T), sel.Row(e))
	}
	nan := bytes.Repeat([]byte{0xFF}, spec.MLABF16RowBytes)
	pool := out.Pool
	for r := range lay.CP {
		if r == in.Rank {
			continue
		}
		st := in
		st.Pool, st.Rank, st.X = pool, r, finiteLocalRows(lay, r, g, nan)
		o, err := ref.FP8StoreValidRows(lim, st)
		if err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
		pool = o.Pool
	}
	m, err := ref.FP8MaterializePages(lim, spec.FP8MaterializePagesInput{Pool: pool, Slots: cur})
	if err != nil {
		return err
	}
	q, err := ref.FP8QuantizeRow(lim, spec.FP8QuantizeRowInput{X: g})
	if err != nil {
		return err
	}
	return rowsEqual("materialize(current slots) after every rank stored", m.Rows, q.Rows)
}
