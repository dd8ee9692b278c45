package equiv

import (
	"bytes"
	"fmt"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// CPRerange is the differential spec of cp.rerange (docs/spec/cp-layout.md §3).
func CPRerange() *Spec[spec.CPRerangeInput, spec.CPRerangeOutput] {
	bnd, rejects := rerangeBoundary()
	return &Spec[spec.CPRerangeInput, spec.CPRerangeOutput]{
		Op:          catalog.CPRerange(),
		Valid:       rapid.Custom(rerangeValid),
		Invalid:     rapid.Custom(rerangeInvalid),
		Boundary:    bnd,
		Regressions: rerangeRegressions(),
		Rejects:     rejects,
		Props: []Prop[spec.CPRerangeInput, spec.CPRerangeOutput]{
			{"inverse-of-split", rerangeInverseOfSplit},
			{"source-map-reads-valid-rows-once", rerangeSourceMap},
			{"upstream-reverse-index", rerangeUpstream},
		},
	}
}

// gatheredFor is what an all-gather under src really produces: every
// rank's payload (SplitLocal rows, or their selected valid rows) of a
// pseudo-random batch, at stride m, static rows after it.
func gatheredFor(lay spec.Layout, src spec.SrcKind, w, m int, seed uint32) spec.Rows {
	ranks := make([]spec.Rows, lay.CP)
	for r := range ranks {
		x := localRowsOf(lay, r, w, seed)
		if src == spec.SrcValid {
			x, _, _ = ref.SelectLocalValidRows(lay, r, x)
		}
		ranks[r] = x
	}
	return gather(w, m, ranks, catalog.SeededRows(w, 1, seed+1).B)
}

func rerangeValid(t *rapid.T) spec.CPRerangeInput {
	sp := cpLayout(t)
	lay := mustCPLayout(sp)
	src := rapid.SampledFrom([]spec.SrcKind{"", spec.SrcCompute, spec.SrcValid}).Draw(t, "src")
	eff := src
	if eff == "" {
		eff = spec.SrcCompute
	}
	m := maxPayload(lay, eff) + rapid.IntRange(0, 3).Draw(t, "static_rows")
	w := rapid.IntRange(1, 8).Draw(t, "w")
	return spec.CPRerangeInput{Layout: sp, G: gatheredFor(lay, eff, w, m, rapid.Uint32().Draw(t, "row_seed")), M: m, Src: src}
}

func rerangeInvalid(t *rapid.T) Bad[spec.CPRerangeInput] {
	in := rerangeValid(t)
	lay := mustCPLayout(in.Layout)
	switch rapid.IntRange(0, 5).Draw(t, "violation") {
	case 0:
		sp, want := badLayout(t, in.Layout)
		in.Layout = sp
		return Bad[spec.CPRerangeInput]{in, want}
	case 1:
		in.Src = spec.SrcKind(rapid.SampledFrom([]string{"padded", "Compute", "global"}).Draw(t, "bad_src"))
		return Bad[spec.CPRerangeInput]{in, spec.ErrBadEnum}
	case 2:
		in.G = raggedRows(t, in.G)
		return Bad[spec.CPRerangeInput]{in, spec.ErrRowCount}
	case 3:
		in.M += rapid.SampledFrom([]int{-1, 1}).Draw(t, "m_off_by")
		return Bad[spec.CPRerangeInput]{in, spec.ErrRowCount}
	case 4:
		src := in.Src
		if src == "" {
			src = spec.SrcCompute
		}
		in.M = maxPayload(lay, src) - rapid.IntRange(1, 2).Draw(t, "short_by")
		in.M = max(in.M, 0)
		in.G = catalog.SeededRows(in.G.W, lay.CP*in.M, 9)
		return Bad[spec.CPRerangeInput]{in, spec.ErrStride}
	default:
		in.M = -rapid.IntRange(1, 3).Draw(t, "neg_m")
		return Bad[spec.CPRerangeInput]{in, spec.ErrNegative}
	}
}

// rerangeBoundary gathers every boundary layout's ranks under both sources
// at the tightest stride.
func rerangeBoundary() ([]Case[spec.CPRerangeInput], map[string]*spec.Sentinel) {
	var cs []Case[spec.CPRerangeInput]
	rejects := map[string]*spec.Sentinel{}
	for _, b := range cpBoundaryLayouts() {
		for _, src := range []spec.SrcKind{spec.SrcCompute, spec.SrcValid} {
			name := fmt.Sprintf("%s-%s", b.name, src)
			in := spec.CPRerangeInput{Layout: b.sp, G: spec.Rows{W: 2, B: []byte{}}, Src: src}
			if b.tooShort {
				rejects[name] = spec.ErrTooShortForZigzag
			} else {
				lay := mustCPLayout(b.sp)
				in.M = maxPayload(lay, src)
				in.G = gatheredFor(lay, src, 2, in.M, 13)
			}
			cs = append(cs, Case[spec.CPRerangeInput]{name, in})
		}
	}
	return cs, rejects
}

// rerangeRegressions: §3.6 / Appendix A1, padded cp=2, g=1, L=[3,4], M=4,
// G = [a0 b0 PAD b3 | a1 b1 a2 b2]: fixed a0 a1 a2 b0 b1 b2 b3; with
// source offsets from valid splits rank 0's MIRROR slot of b starts at
// 2 + V_a,3 = 2 (the PAD) instead of 2 + S_a,3 = 3.
func rerangeRegressions() []Case[spec.CPRerangeInput] {
	sp := spec.LayoutSpec{CP: 2, Lens: []int{3, 4}, Granule: 1}
	g := gather(tagW, 4, []spec.Rows{tokenRank(sp, 0), tokenRank(sp, 1)}, nil)
	return []Case[spec.CPRerangeInput]{{"rerange-valid-offsets", spec.CPRerangeInput{Layout: sp, G: g, M: 4}}}
}

func effSrc(in spec.CPRerangeInput) spec.SrcKind {
	if in.Src == "" {
		return spec.SrcCompute
	}
	return in.Src
}

// payloadValid returns rank r's valid payload rows of g under src: the
// masked rows of its compute payload, or its whole valid payload.
func payloadValid(lay spec.Layout, g spec.Rows, m, r int, src spec.SrcKind) spec.Rows {
	if src == spec.SrcValid {
		return spec.Rows{W: g.W, B: g.Span(r*m, lay.Rv(r))}
	}
	out := spec.Rows{W: g.W, B: []byte{}}
	for p, v := range ref.ValidMask(lay, r) {
		if v {
			out.B = append(out.B, g.Row(r*m+p)...)
		}
	}
	return out
}

// rerangeInverseOfSplit is P3.1/P3.2 read backwards: splitting the output
// again (SplitLocal, then SelectLocalValidRows) gives back every rank's
// valid payload rows of G, so rerange ∘ gather ∘ split is the identity on
// valid rows, whatever the padding and static rows hold.
func rerangeInverseOfSplit(_ spec.Limits, in spec.CPRerangeInput, out spec.CPRerangeOutput) error {
	lay := mustCPLayout(in.Layout)
	if out.Rows.N() != lay.TotalValid() || out.Rows.W != in.G.W {
		return fmt.Errorf("%d rows of %d B, want Σ L = %d of %d B", out.Rows.N(), out.Rows.W, lay.TotalValid(), in.G.W)
	}
	ranks, err := splitAll(lay, out.Rows, make([]byte, in.G.W))
	if err != nil {
		return err
	}
	for r, x := range ranks {
		sel, _, err := ref.SelectLocalValidRows(lay, r, x)
		if err != nil {
			return err
		}
		if err := rowsEqual(fmt.Sprintf("rank %d's valid rows of split(out)", r), sel, payloadValid(lay, in.G, in.M, r, effSrc(in))); err != nil {
			return err
		}
	}
	return nil
}

// rerangeSourceMap is P3.3/P3.5: ref on a tagged G (row j carries j) reads
// each G row at most once and exactly the valid payload rows, never a
// padding or static row; and out's row o is G's row at that source.
func rerangeSourceMap(_ spec.Limits, in spec.CPRerangeInput, out spec.CPRerangeOutput) error {
	lay := mustCPLayout(in.Layout)
	src := effSrc(in)
	tg, err := ref.Rerange(lay, tagged(in.G.N(), 0), in.M, src)
	if err != nil {
		return err
	}
	validRow := map[int]bool{}
	for r := range lay.CP {
		if src == spec.SrcValid {
			for p := range lay.Rv(r) {
				validRow[r*in.M+p] = true
			}
			continue
		}
		for p, v := range ref.ValidMask(lay, r) {
			if v {
				validRow[r*in.M+p] = true
			}
		}
	}
	read := map[int]bool{}
	for o := range tg.N() {
		j := int(tagOf(tg.Row(o)))
		if !validRow[j] || read[j] {
			return fmt.Errorf("output row %d reads G row %d (valid %v, read before %v)", o, j, validRow[j], read[j])
		}
		read[j] = true
		if o >= out.Rows.N() || !bytes.Equal(out.Rows.Row(o), in.G.Row(j)) {
			return fmt.Errorf("output row %d is not G row %d", o, j)
		}
	}
	if len(read) != len(validRow) {
		return fmt.Errorf("read %d G rows, want all %d valid rows", len(read), len(validRow))
	}
	return nil
}

// rerangeUpstream is P3.4 for unpadded layouts: split every rank's payload
// by its rank-major compute splits (reverse_split_len) and concatenate the
// pieces in request-major order through cp_reverse_index.
func rerangeUpstream(_ spec.Limits, in spec.CPRerangeInput, out spec.CPRerangeOutput) error {
	if in.Layout.Granule != 0 {
		return nil
	}
	lay := mustCPLayout(in.Layout)
	sizes := ref.ComputeSplitsRankMajor(lay)
	var pieces [][]byte
	q := 0
	for r := range lay.CP {
		off := r * in.M
		for range 2 * lay.B() {
			pieces = append(pieces, in.G.Span(off, sizes[q]))
			off += sizes[q]
			q++
		}
	}
	var want []byte
	for _, p := range ref.ReverseIndex(lay) {
		want = append(want, pieces[p]...)
	}
	if !bytes.Equal(out.Rows.B, want) {
		return fmt.Errorf("output differs from upstream's reverse_split_len + cp_reverse_index concatenation")
	}
	return nil
}
