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

// FP8ComposeCurrent is the differential spec of fp8.compose_current
// (docs/spec/cp-layout.md §7.5).
func FP8ComposeCurrent() *Spec[spec.FP8ComposeCurrentInput, spec.FP8ComposeCurrentOutput] {
	return &Spec[spec.FP8ComposeCurrentInput, spec.FP8ComposeCurrentOutput]{
		Op:          catalog.FP8ComposeCurrent(),
		Valid:       rapid.Custom(composeValid),
		Invalid:     rapid.Custom(composeInvalid),
		Boundary:    composeBoundary(),
		Regressions: composeRegressions(),
		Rejects: map[string]*spec.Sentinel{
			"contract-mismatch-accepted":        spec.ErrRowContract,
			"compute-padded-without-cp":         spec.ErrRowContract,
			"prefix-not-page-aligned":           spec.ErrPagePlan,
			"layout-lens-differ":                spec.ErrLayoutMismatch,
			"non-finite-current":                spec.ErrNonFinite,
			"compute-padded-given-global-valid": spec.ErrRowContract,
			"stride-negative":                   spec.ErrNegative,
			"stride-with-global-valid":          spec.ErrStride,
			"stride-below-rank-payload":         spec.ErrStride,
		},
		Props: []Prop[spec.FP8ComposeCurrentInput, spec.FP8ComposeCurrentOutput]{
			{"contract-equivalence", composeContracts},
			{"stale-immunity", composeStale},
			{"agrees-with-materialize-after-store", composeCache},
		},
	}
}

// composeGlobalRows returns n finite bf16 rows (some all-zero).
func composeGlobalRows(n int, seed uint32) spec.Rows {
	x := catalog.SeededRows(spec.MLABF16RowBytes, n, seed)
	for i := 1; i < len(x.B); i += 2 {
		x.B[i] &= 0xBF
	}
	if n > 0 && seed%3 == 0 {
		clear(x.Row(0))
	}
	return x
}

// composeAs lays global rows x out under contract c (stride m, 0 = packed).
func composeAs(lay *spec.Layout, c spec.CurrentContract, m int, x spec.Rows) spec.Rows {
	if lay == nil || c == spec.ContractGlobalValid {
		return x
	}
	ranks, err := splitAll(*lay, x, make([]byte, x.W))
	if err != nil {
		panic(err)
	}
	if c == spec.ContractLocalValid {
		for r := range ranks {
			ranks[r], _, _ = ref.SelectLocalValidRows(*lay, r, ranks[r])
		}
	}
	if m == 0 {
		g := spec.Rows{W: x.W, B: []byte{}}
		for _, rr := range ranks {
			g.B = append(g.B, rr.B...)
		}
		return g
	}
	return gather(x.W, m, ranks, make([]byte, x.W))
}

// composeLayout draws a small CP layout (cp 2–3, b 1–3).
func composeLayout(t *rapid.T) spec.LayoutSpec {
	cp := rapid.SampledFrom([]int{2, 2, 3}).Draw(t, "cp")
	g := rapid.SampledFrom([]int{0, 1, 2}).Draw(t, "granule")
	lens := make([]int, rapid.IntRange(1, 3).Draw(t, "b"))
	for i := range lens {
		if g == 0 {
			lens[i] = rapid.IntRange(2*cp, 2*cp+2).Draw(t, "len")
		} else {
			lens[i] = rapid.IntRange(1, 5).Draw(t, "len")
		}
	}
	return spec.LayoutSpec{CP: cp, Lens: lens, Granule: g}
}

func composeValid(t *rapid.T) spec.FP8ComposeCurrentInput {
	c := rapid.SampledFrom([]spec.CurrentContract{spec.ContractLocalValid, spec.ContractLocalComputePadded, spec.ContractGlobalValid}).Draw(t, "contract")
	var sp *spec.LayoutSpec
	var lens []int
	if c == spec.ContractLocalComputePadded || rapid.Bool().Draw(t, "cp_split") {
		s := composeLayout(t)
		sp, lens = &s, s.Lens
	} else {
		lens = rapid.SliceOfN(rapid.IntRange(0, 4), 1, 3).Draw(t, "lens")
	}
	ps := rapid.Int64Range(1, 2).Draw(t, "page_size")
	// Slots [0, A) hold prefixes (A = ps·(1+prefixPages)); current rows are
	// cached at distinct slots after them.
	prefixPages := int64(2)
	a := ps * (1 + prefixPages)
	pre, cur := make([][]int64, len(lens)), make([][]int64, len(lens))
	at := a
	for b, l := range lens {
		np := rapid.IntRange(0, 2).Draw(t, "prefix_pages")
		pre[b] = []int64{}
		for range np {
			p := rapid.Int64Range(0, prefixPages).Draw(t, "page")
			for s := range ps {
				pre[b] = append(pre[b], p*ps+s)
			}
		}
		cur[b] = []int64{}
		for range l {
			cur[b] = append(cur[b], at)
			at++
		}
	}
	size := at + rapid.Int64Range(0, 2).Draw(t, "spare")
	pool := spec.FP8Pool{PageSize: ps, Size: size, Rows: catalog.SeededRows(spec.FP8RowBytes, int(size+ps), rapid.Uint32().Draw(t, "pool_seed"))}
	total := 0
	for _, l := range lens {
		total += l
	}
	x := composeGlobalRows(total, rapid.Uint32().Draw(t, "cur_seed"))
	m := 0
	var lay *spec.Layout
	if sp != nil {
		l := mustCPLayout(*sp)
		lay = &l
		if c != spec.ContractGlobalValid && rapid.Bool().Draw(t, "static_stride") {
			var src spec.SrcKind = spec.SrcCompute
			if c == spec.ContractLocalValid {
				src = spec.SrcValid
			}
			m = maxPayload(l, src) + rapid.IntRange(0, 2).Draw(t, "stride_extra")
		}
	}
	return spec.FP8ComposeCurrentInput{Pool: pool, PrefixSlots: pre, CurrentSlots: cur, Lens: slices.Clone(lens), Layout: sp, Contract: c, M: m, Current: composeAs(lay, c, m, x)}
}

func composeInvalid(t *rapid.T) Bad[spec.FP8ComposeCurrentInput] {
	in := composeValid(t)
	in.PrefixSlots = slices.Clone(in.PrefixSlots)
	switch rapid.IntRange(0, 6).Draw(t, "violation") {
	case 0:
		p, want := fp8BadPool(t, in.Pool)
		in.Pool = p
		return Bad[spec.FP8ComposeCurrentInput]{in, want}
	case 1:
		in.Contract = "local"
		return Bad[spec.FP8ComposeCurrentInput]{in, spec.ErrBadEnum}
	case 2:
		if in.Pool.PageSize == 1 {
			in.Pool.PageSize = 2
			in.Pool.Size--
		}
		in.PrefixSlots[0] = append(slices.Clone(in.PrefixSlots[0]), 0)
		if int64(len(in.PrefixSlots[0]))%in.Pool.PageSize == 0 {
			in.PrefixSlots[0] = append(in.PrefixSlots[0], 0)
		}
		return Bad[spec.FP8ComposeCurrentInput]{in, spec.ErrPagePlan}
	case 3:
		n := in.Pool.Size + in.Pool.PageSize
		in.PrefixSlots[0] = slices.Repeat([]int64{n}, int(in.Pool.PageSize))
		return Bad[spec.FP8ComposeCurrentInput]{in, spec.ErrSlotOutOfRange}
	case 4:
		// Global valid rows under a local contract (the historic mismatch),
		// or one row off when the counts happen to agree.
		if in.Layout == nil || in.M > 0 {
			in.Current = spec.Rows{W: in.Current.W, B: append(bytes.Clone(in.Current.B), make([]byte, in.Current.W)...)}
			return Bad[spec.FP8ComposeCurrentInput]{in, spec.ErrRowContract}
		}
		in.Contract = spec.ContractLocalComputePadded
		lay := mustCPLayout(*in.Layout)
		g := composeGlobalRows(lay.TotalValid(), 3)
		if ref.ExpectedCurrentRows(&lay, in.Contract, in.Lens, 0) == g.N() {
			g = composeGlobalRows(g.N()+1, 3)
		}
		in.Current = g
		return Bad[spec.FP8ComposeCurrentInput]{in, spec.ErrRowContract}
	case 5:
		if in.Current.N() == 0 {
			in.Lens = append(slices.Clone(in.Lens), 1)
			in.PrefixSlots = append(in.PrefixSlots, []int64{})
			in.CurrentSlots = append(slices.Clone(in.CurrentSlots), []int64{0})
			in.Layout, in.Contract, in.M = nil, spec.ContractGlobalValid, 0
			in.Current = composeGlobalRows(composeTotal(in.Lens), 5)
		}
		in.Current = spec.Rows{W: in.Current.W, B: bytes.Clone(in.Current.B)}
		i := rapid.IntRange(0, in.Current.N()-1).Draw(t, "nan_row")
		j := rapid.IntRange(0, 575).Draw(t, "inf_at")
		in.Current.Row(i)[2*j], in.Current.Row(i)[2*j+1] = 0x80, 0x7F
		return Bad[spec.FP8ComposeCurrentInput]{in, spec.ErrNonFinite}
	default:
		in.CurrentSlots = append(slices.Clone(in.CurrentSlots), []int64{})
		return Bad[spec.FP8ComposeCurrentInput]{in, spec.ErrLengthMismatch}
	}
}

func composeTotal(lens []int) int {
	n := 0
	for _, l := range lens {
		n += l
	}
	return n
}

// oneRow is a 1152-byte bf16 row: k_nope all nope, k_rope all zero.
func oneRow(nope uint16) spec.Rows {
	x := ref.NewRows(spec.MLABF16RowBytes, 1)
	for j := range spec.MLANopeDim {
		x.B[2*j], x.B[2*j+1] = byte(nope), byte(nope>>8)
	}
	return x
}

// composeRegressions: §7.5's two historic bugs. (1) ps=2, one request,
// P=2, L=1, the pool row at the current slot all-zero (not yet written),
// fresh k_nope = 1.0: the fixed row is codes 0x7E with scale fl32(1/448);
// full materialize reads 656 zero bytes. (2) padded cp=2, g=1, L=[3]: 3
// global valid rows declared cp-local compute-padded (R(0)+R(1) = 4
// expected) must be ErrRowContract, not silently taken as global rows.
func composeRegressions() []Case[spec.FP8ComposeCurrentInput] {
	pool := spec.FP8Pool{PageSize: 2, Size: 4, Rows: ref.NewRows(spec.FP8RowBytes, 6)}
	for i := range 2 * spec.FP8RowBytes {
		pool.Rows.B[2*spec.FP8RowBytes+i] = byte(i)
	}
	sp := spec.LayoutSpec{CP: 2, Lens: []int{3}, Granule: 1}
	return []Case[spec.FP8ComposeCurrentInput]{
		{"full-materialize-stale-current", spec.FP8ComposeCurrentInput{Pool: pool, PrefixSlots: [][]int64{{2, 3}}, CurrentSlots: [][]int64{{4}}, Lens: []int{1}, Contract: spec.ContractGlobalValid, Current: oneRow(0x3F80)}},
		{"contract-mismatch-accepted", spec.FP8ComposeCurrentInput{Pool: pool, PrefixSlots: [][]int64{{}}, CurrentSlots: [][]int64{{1, 2, 3}}, Lens: []int{3}, Layout: &sp, Contract: spec.ContractLocalComputePadded, Current: composeGlobalRows(3, 7)}},
	}
}

func composeBoundary() []Case[spec.FP8ComposeCurrentInput] {
	pool := spec.FP8Pool{PageSize: 2, Size: 8, Rows: catalog.SeededRows(spec.FP8RowBytes, 10, 41)}
	sp := spec.LayoutSpec{CP: 2, Lens: []int{3}, Granule: 1}
	lay := mustCPLayout(sp)
	g3 := composeGlobalRows(3, 7)
	nan := oneRow(0x7FC0)
	return []Case[spec.FP8ComposeCurrentInput]{
		{"global-valid-padded-cp2", spec.FP8ComposeCurrentInput{Pool: pool, PrefixSlots: [][]int64{{0, 1}}, CurrentSlots: [][]int64{{4, 5, 6}}, Lens: []int{3}, Layout: &sp, Contract: spec.ContractGlobalValid, Current: g3}},
		{"local-valid-padded-cp2", spec.FP8ComposeCurrentInput{Pool: pool, PrefixSlots: [][]int64{{0, 1}}, CurrentSlots: [][]int64{{4, 5, 6}}, Lens: []int{3}, Layout: &sp, Contract: spec.ContractLocalValid, Current: composeAs(&lay, spec.ContractLocalValid, 0, g3)}},
		{"compute-padded-cp2-stride3", spec.FP8ComposeCurrentInput{Pool: pool, PrefixSlots: [][]int64{{0, 1}}, CurrentSlots: [][]int64{{4, 5, 6}}, Lens: []int{3}, Layout: &sp, Contract: spec.ContractLocalComputePadded, M: 3, Current: composeAs(&lay, spec.ContractLocalComputePadded, 3, g3)}},
		{"prefix-only", spec.FP8ComposeCurrentInput{Pool: pool, PrefixSlots: [][]int64{{2, 3, 8, 9}}, CurrentSlots: [][]int64{{}}, Lens: []int{0}, Contract: spec.ContractGlobalValid, Current: spec.Rows{W: spec.MLABF16RowBytes, B: []byte{}}}},
		{"no-cp-local-valid-is-global", spec.FP8ComposeCurrentInput{Pool: pool, PrefixSlots: [][]int64{{}, {6, 7}}, CurrentSlots: [][]int64{{4}, {5}}, Lens: []int{1, 1}, Contract: spec.ContractLocalValid, Current: composeGlobalRows(2, 9)}},
		{"compute-padded-without-cp", spec.FP8ComposeCurrentInput{Pool: pool, PrefixSlots: [][]int64{{}}, CurrentSlots: [][]int64{{4}}, Lens: []int{1}, Contract: spec.ContractLocalComputePadded, Current: composeGlobalRows(1, 9)}},
		{"prefix-not-page-aligned", spec.FP8ComposeCurrentInput{Pool: pool, PrefixSlots: [][]int64{{0}}, CurrentSlots: [][]int64{{4}}, Lens: []int{1}, Contract: spec.ContractGlobalValid, Current: composeGlobalRows(1, 9)}},
		{"layout-lens-differ", spec.FP8ComposeCurrentInput{Pool: pool, PrefixSlots: [][]int64{{}}, CurrentSlots: [][]int64{{4, 5}}, Lens: []int{2}, Layout: &sp, Contract: spec.ContractGlobalValid, Current: composeGlobalRows(2, 9)}},
		{"non-finite-current", spec.FP8ComposeCurrentInput{Pool: pool, PrefixSlots: [][]int64{{}}, CurrentSlots: [][]int64{{4}}, Lens: []int{1}, Contract: spec.ContractGlobalValid, Current: nan}},
		{"compute-padded-given-global-valid", spec.FP8ComposeCurrentInput{Pool: pool, PrefixSlots: [][]int64{{}}, CurrentSlots: [][]int64{{4, 5, 6}}, Lens: []int{3}, Layout: &sp, Contract: spec.ContractLocalComputePadded, Current: g3}},
		// §7.5's stride rules, each checked before the rows are counted:
		// m >= 0; m only for gathered (CP-local) rows; m at least every
		// rank's payload (R(r) = 2 here, so m = 1 is short).
		{"stride-negative", spec.FP8ComposeCurrentInput{Pool: pool, PrefixSlots: [][]int64{{0, 1}}, CurrentSlots: [][]int64{{4, 5, 6}}, Lens: []int{3}, Layout: &sp, Contract: spec.ContractLocalComputePadded, M: -1, Current: composeAs(&lay, spec.ContractLocalComputePadded, 3, g3)}},
		{"stride-with-global-valid", spec.FP8ComposeCurrentInput{Pool: pool, PrefixSlots: [][]int64{{0, 1}}, CurrentSlots: [][]int64{{4, 5, 6}}, Lens: []int{3}, Layout: &sp, Contract: spec.ContractGlobalValid, M: 3, Current: g3}},
		{"stride-below-rank-payload", spec.FP8ComposeCurrentInput{Pool: pool, PrefixSlots: [][]int64{{0, 1}}, CurrentSlots: [][]int64{{4, 5, 6}}, Lens: []int{3}, Layout: &sp, Contract: spec.ContractLocalComputePadded, M: 1, Current: composeAs(&lay, spec.ContractLocalComputePadded, 3, g3)}},
	}
}

// freshRows is the input's current rows in global valid order: what every
// contract must reduce to (§7.5's normalization).
func freshRows(lim spec.Limits, in spec.FP8ComposeCurrentInput) (spec.Rows, error) {
	plan, err := ref.ValidateFP8ComposeCurrent(lim, in)
	if err != nil {
		return spec.Rows{}, err
	}
	return ref.NormalizeCurrent(plan, in.Current, in.M)
}

// composeContracts is P7.4: the same fresh rows under every contract the
// input's layout allows give byte-identical output.
func composeContracts(lim spec.Limits, in spec.FP8ComposeCurrentInput, out spec.FP8ComposeCurrentOutput) error {
	x, err := freshRows(lim, in)
	if err != nil {
		return err
	}
	alt := in
	alt.Layout, alt.Contract, alt.M, alt.Current = nil, spec.ContractGlobalValid, 0, x
	variants := []spec.FP8ComposeCurrentInput{alt}
	if in.Layout != nil {
		lay := mustCPLayout(*in.Layout)
		for _, c := range []spec.CurrentContract{spec.ContractLocalValid, spec.ContractLocalComputePadded, spec.ContractGlobalValid} {
			v := in
			v.Contract, v.M, v.Current = c, 0, composeAs(&lay, c, 0, x)
			variants = append(variants, v)
		}
	}
	for _, v := range variants {
		got, err := ref.FP8ComposeCurrent(lim, v)
		if err != nil {
			return fmt.Errorf("contract %q: %v", v.Contract, err)
		}
		if err := rowsEqual(fmt.Sprintf("contract %q", v.Contract), got.Rows, out.Rows); err != nil {
			return err
		}
	}
	return nil
}

// composeStale is P7.5: randomizing the pool rows at the current slots
// does not change the output.
func composeStale(lim spec.Limits, in spec.FP8ComposeCurrentInput, out spec.FP8ComposeCurrentOutput) error {
	v := in
	v.Pool.Rows = spec.Rows{W: in.Pool.Rows.W, B: bytes.Clone(in.Pool.Rows.B)}
	for _, cs := range in.CurrentSlots {
		for _, s := range cs {
			for i := range v.Pool.Rows.Row(int(s)) {
				v.Pool.Rows.Row(int(s))[i] ^= 0x5A
			}
		}
	}
	got, err := ref.FP8ComposeCurrent(lim, v)
	if err != nil {
		return err
	}
	return rowsEqual("compose over a stale pool", got.Rows, out.Rows)
}

// composeCache is P7.6: after the current rows are quantized and stored at
// their slots, materializing prefix ++ current slots per request gives the
// output (checked when no prefix slot is also a current slot).
func composeCache(lim spec.Limits, in spec.FP8ComposeCurrentInput, out spec.FP8ComposeCurrentOutput) error {
	x, err := freshRows(lim, in)
	if err != nil {
		return err
	}
	q, err := ref.FP8QuantizeRow(lim, spec.FP8QuantizeRowInput{X: x})
	if err != nil {
		return err
	}
	var locs, slots []int64
	for b := range in.Lens {
		locs = append(locs, in.CurrentSlots[b]...)
		slots = append(slots, in.PrefixSlots[b]...)
		slots = append(slots, in.CurrentSlots[b]...)
	}
	for _, ps := range in.PrefixSlots {
		for _, s := range ps {
			if slices.Contains(locs, s) {
				return nil
			}
		}
	}
	if locs == nil {
		locs = []int64{}
	}
	st, err := ref.FP8StorePages(lim, spec.FP8StorePagesInput{Pool: in.Pool, Locs: locs, Rows: q.Rows})
	if err != nil {
		return err
	}
	m, err := ref.FP8MaterializePages(lim, spec.FP8MaterializePagesInput{Pool: st.Pool, Slots: slots})
	if err != nil {
		return err
	}
	return rowsEqual("materialize(prefix ++ current) after store", m.Rows, out.Rows)
}
