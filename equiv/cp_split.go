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

// CPSplit is the differential spec of cp.split (docs/spec/cp-layout.md §1).
func CPSplit() *Spec[spec.CPSplitInput, spec.CPSplitOutput] {
	bnd, rejects := splitBoundary()
	return &Spec[spec.CPSplitInput, spec.CPSplitOutput]{
		Op:          catalog.CPSplit(),
		Valid:       rapid.Custom(splitValid),
		Invalid:     rapid.Custom(splitInvalid),
		Boundary:    bnd,
		Regressions: splitRegressions(),
		Rejects:     rejects,
		Props: []Prop[spec.CPSplitInput, spec.CPSplitOutput]{
			{"layout-shape", splitLayoutShape},
			{"partition", splitPartition},
			{"pad-count", splitPadCount},
			{"rerange-roundtrip", splitRoundtrip},
			{"upstream-bs1", splitUpstreamBS1},
			{"positions-continue", splitPositions},
		},
	}
}

// splitInputFor is a valid cp.split input on sp with the given rows.
func splitInputFor(sp spec.LayoutSpec, x spec.Rows, pad []byte, prefix []int64) spec.CPSplitInput {
	return spec.CPSplitInput{Layout: sp, X: x, Pad: pad, Prefix: prefix}
}

func splitValid(t *rapid.T) spec.CPSplitInput {
	sp := cpLayout(t)
	lay := mustCPLayout(sp)
	x := cpRows(t, lay.TotalValid())
	pad := catalog.SeededRows(x.W, 1, rapid.Uint32().Draw(t, "pad_seed")).B
	prefix := make([]int64, lay.B())
	for i := range prefix {
		prefix[i] = rapid.Int64Range(0, 1<<20).Draw(t, "prefix")
	}
	return splitInputFor(sp, x, pad, prefix)
}

func splitInvalid(t *rapid.T) Bad[spec.CPSplitInput] {
	in := splitValid(t)
	switch rapid.IntRange(0, 6).Draw(t, "violation") {
	case 0:
		sp, want := badLayout(t, in.Layout)
		in.Layout = sp
		return Bad[spec.CPSplitInput]{in, want}
	case 1:
		in.Prefix = in.Prefix[:len(in.Prefix)-1]
		return Bad[spec.CPSplitInput]{in, spec.ErrLengthMismatch}
	case 2:
		in.Prefix = slices.Clone(in.Prefix)
		in.Prefix[rapid.IntRange(0, len(in.Prefix)-1).Draw(t, "neg_at")] = rapid.Int64Range(-1<<40, -1).Draw(t, "neg_prefix")
		return Bad[spec.CPSplitInput]{in, spec.ErrNegative}
	case 3:
		extra := rapid.SampledFrom([]int{-1, 1, 2}).Draw(t, "extra_rows")
		in.X = catalog.SeededRows(in.X.W, in.X.N()+extra, 7)
		return Bad[spec.CPSplitInput]{in, spec.ErrRowCount}
	case 4:
		in.X = raggedRows(t, in.X)
		return Bad[spec.CPSplitInput]{in, spec.ErrRowCount}
	case 5:
		in.Pad = append(slices.Clone(in.Pad), 0)
		return Bad[spec.CPSplitInput]{in, spec.ErrRowCount}
	default:
		in.Prefix = slices.Clone(in.Prefix)
		in.Prefix[0] = 1<<63 - 1 - rapid.Int64Range(0, 1).Draw(t, "near_max")
		return Bad[spec.CPSplitInput]{in, spec.ErrOverflow}
	}
}

// splitBoundary runs every boundary layout with 2-byte rows and zero prefix.
func splitBoundary() ([]Case[spec.CPSplitInput], map[string]*spec.Sentinel) {
	var cs []Case[spec.CPSplitInput]
	rejects := map[string]*spec.Sentinel{}
	for _, b := range cpBoundaryLayouts() {
		n := 0
		for _, l := range b.sp.Lens {
			n += l
		}
		cs = append(cs, Case[spec.CPSplitInput]{b.name, splitInputFor(b.sp, catalog.SeededRows(2, n, 11), []byte{0xEE, 0xEE}, make([]int64, len(b.sp.Lens)))})
		if b.tooShort {
			rejects[b.name] = spec.ErrTooShortForZigzag
		}
	}
	// §1.3's worked examples.
	for _, sp := range []spec.LayoutSpec{{CP: 2, Lens: []int{10}}, {CP: 2, Lens: []int{8, 9}},
		{CP: 2, Lens: []int{3, 4}, Granule: 1}, {CP: 2, Lens: []int{3, 9}, Granule: 2}} {
		n := 0
		for _, l := range sp.Lens {
			n += l
		}
		name := fmt.Sprintf("worked-cp%d-g%d-L%v", sp.CP, sp.Granule, sp.Lens)
		cs = append(cs, Case[spec.CPSplitInput]{name, splitInputFor(sp, tagged(n, 0), tagRow(tagSentinel), make([]int64, len(sp.Lens)))})
	}
	// One token padded to 2·cp segments of 2^24 rows: 2^26 rows of 32 B
	// is 2 GiB of output from a 32-byte input, past the default 1 GiB
	// bound that ValidateCPSplit checks before anything is allocated.
	big := spec.LayoutSpec{CP: 2, Lens: []int{1}, Granule: 1 << 24}
	cs = append(cs, Case[spec.CPSplitInput]{"granule-pads-output-past-bound", splitInputFor(big, catalog.SeededRows(32, 1, 11), make([]byte, 32), []int64{0})})
	rejects["granule-pads-output-past-bound"] = spec.ErrTooLarge
	return cs, rejects
}

// splitRegressions: §1.6's minimal input, unpadded cp=2, L=[4,4]: correct
// rank 0 is a0 b0 | a3 b3, the bs=1 zigzag of the concatenation gives
// a0 a1 | b2 b3.
func splitRegressions() []Case[spec.CPSplitInput] {
	return []Case[spec.CPSplitInput]{
		{"zigzag-concatenation", splitInputFor(spec.LayoutSpec{CP: 2, Lens: []int{4, 4}}, tagged(8, 0), tagRow(tagSentinel), []int64{0, 0})},
	}
}

// splitLayoutShape is P1.1–P1.3: the layout validates, unpadded sizes are
// balanced and non-increasing with V = S, padded sizes are equal whole
// granules with less than 2·cp·g padding, and every rank's output holds
// R(r) rows and positions (equal for every rank when padded).
func splitLayoutShape(_ spec.Limits, in spec.CPSplitInput, out spec.CPSplitOutput) error {
	lay := mustCPLayout(in.Layout)
	if err := lay.Validate(); err != nil {
		return fmt.Errorf("P1.1: %v", err)
	}
	g := in.Layout.Granule
	for i := range lay.L {
		s := lay.S[i]
		for k := range s {
			switch {
			case g == 0 && (lay.V[i][k] != s[k] || s[0]-s[k] > 1 || (k > 0 && s[k] > s[k-1])):
				return fmt.Errorf("P1.2: request %d sizes %v valid %v", i, s, lay.V[i])
			case g > 0 && (s[k] != s[0] || s[k]%g != 0):
				return fmt.Errorf("P1.3: request %d sizes %v not equal multiples of g=%d", i, s, g)
			}
		}
		if g > 0 && lay.ComputeLen(i)-lay.L[i] >= lay.NS()*g {
			return fmt.Errorf("P1.3: request %d pads %d rows, want < 2·cp·g", i, lay.ComputeLen(i)-lay.L[i])
		}
	}
	if len(out.Ranks) != lay.CP {
		return fmt.Errorf("%d ranks, want cp=%d", len(out.Ranks), lay.CP)
	}
	for r, rk := range out.Ranks {
		if rk.Rows.N() != lay.R(r) || len(rk.Positions) != lay.R(r) || rk.Rows.W != in.X.W {
			return fmt.Errorf("rank %d: %d rows, %d positions, want R(r)=%d", r, rk.Rows.N(), len(rk.Positions), lay.R(r))
		}
		if g > 0 && lay.R(r) != lay.R(0) {
			return fmt.Errorf("P1.3: padded R(%d)=%d != R(0)=%d", r, lay.R(r), lay.R(0))
		}
	}
	return nil
}

// splitPartition is P1.4: the rows under every rank's valid mask are X's
// rows of the tokens LocalTokenIDs names, and those tokens are every token
// of the batch exactly once.
func splitPartition(_ spec.Limits, in spec.CPSplitInput, out spec.CPSplitOutput) error {
	lay := mustCPLayout(in.Layout)
	seen := make([]int, lay.TotalValid())
	for r, rk := range out.Ranks {
		ids := ref.LocalTokenIDs(lay, r)
		j := 0
		for p, valid := range ref.ValidMask(lay, r) {
			if !valid {
				continue
			}
			g := lay.OutBase(ids[j].Req) + ids[j].T
			if !bytes.Equal(rk.Rows.Row(p), in.X.Row(g)) {
				return fmt.Errorf("rank %d row %d is %x, want token %v = %x", r, p, rk.Rows.Row(p), ids[j], in.X.Row(g))
			}
			seen[g]++
			j++
		}
	}
	for g, n := range seen {
		if n != 1 {
			return fmt.Errorf("global row %d appears %d times over the ranks", g, n)
		}
	}
	return nil
}

// splitPadCount is P1.5: the pad row appears exactly R(r) − Rv(r) times on
// rank r when no row of X equals it (at least that often otherwise).
func splitPadCount(_ spec.Limits, in spec.CPSplitInput, out spec.CPSplitOutput) error {
	lay := mustCPLayout(in.Layout)
	exact := true
	for p := range in.X.N() {
		exact = exact && !bytes.Equal(in.X.Row(p), in.Pad)
	}
	for r, rk := range out.Ranks {
		n := 0
		for p := range rk.Rows.N() {
			if bytes.Equal(rk.Rows.Row(p), in.Pad) {
				n++
			}
		}
		want := lay.R(r) - lay.Rv(r)
		if n < want || (exact && n != want) {
			return fmt.Errorf("rank %d holds the pad row %d times, want R-Rv = %d", r, n, want)
		}
	}
	return nil
}

// splitRoundtrip is P1.6: the ranks' rows, gathered at stride max R(r)+1
// with a static pad row, rerange back to X.
func splitRoundtrip(_ spec.Limits, in spec.CPSplitInput, out spec.CPSplitOutput) error {
	lay := mustCPLayout(in.Layout)
	ranks := make([]spec.Rows, len(out.Ranks))
	for r, rk := range out.Ranks {
		ranks[r] = rk.Rows
	}
	m := maxPayload(lay, spec.SrcCompute) + 1
	back, err := ref.Rerange(lay, gather(in.X.W, m, ranks, bytes.Repeat([]byte{0xA5}, in.X.W)), m, spec.SrcCompute)
	if err != nil {
		return fmt.Errorf("rerange: %v", err)
	}
	return rowsEqual("rerange(gather(split(X)))", back, in.X)
}

// splitUpstreamBS1 is P1.7: an unpadded single request is upstream's
// split_list (the first L mod 2·cp pieces one row longer) taken as pieces
// r and 2·cp−1−r.
func splitUpstreamBS1(_ spec.Limits, in spec.CPSplitInput, out spec.CPSplitOutput) error {
	if in.Layout.Granule != 0 || len(in.Layout.Lens) != 1 {
		return nil
	}
	l, ns := in.Layout.Lens[0], 2*in.Layout.CP
	bounds := []int{0}
	for k := range ns {
		n := l / ns
		if k < l%ns {
			n++
		}
		bounds = append(bounds, bounds[k]+n)
	}
	for r, rk := range out.Ranks {
		m := ns - 1 - r
		want := slices.Concat(in.X.Span(bounds[r], bounds[r+1]-bounds[r]), in.X.Span(bounds[m], bounds[m+1]-bounds[m]))
		if !bytes.Equal(rk.Rows.B, want) {
			return fmt.Errorf("rank %d: rows differ from upstream pieces %d and %d", r, r, m)
		}
	}
	return nil
}

// splitPositions: every local row at compute position c of request i gets
// P_i + c, padding included (§1.2 PositionsLocal).
func splitPositions(_ spec.Limits, in spec.CPSplitInput, out spec.CPSplitOutput) error {
	lay := mustCPLayout(in.Layout)
	for r, rk := range out.Ranks {
		for _, s := range ref.LaneSlots(lay, r) {
			for p := range s.ComputeLen {
				want := in.Prefix[s.Req] + int64(lay.SegStart(s.Req, s.Seg)+p)
				if got := rk.Positions[s.Off+p]; got != want {
					return fmt.Errorf("rank %d row %d (request %d, segment %d): position %d, want %d", r, s.Off+p, s.Req, s.Seg, got, want)
				}
			}
		}
	}
	return nil
}
