package equiv

import (
	"bytes"
	"fmt"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// CPDraftInput is the differential spec of cp.draft_input (the SPEC_V2
// EAGLE draft input after a CP prefill).
func CPDraftInput() *Spec[spec.CPDraftInputInput, spec.CPDraftInputOutput] {
	return &Spec[spec.CPDraftInputInput, spec.CPDraftInputOutput]{
		Op:          catalog.CPDraftInput(),
		Valid:       rapid.Custom(draftValid),
		Invalid:     rapid.Custom(draftInvalid),
		Boundary:    draftBoundary(),
		Regressions: draftRegressions(),
		Props: []Prop[spec.CPDraftInputInput, spec.CPDraftInputOutput]{
			{"marker-is-declared", draftMarkerDeclared},
			{"prefers-cp-local-draft-hidden", draftPrefersLocal},
			{"guard-follows-marker", draftGuardFollows},
		},
	}
}

// draftLayout draws a CP prefill layout: padded (g in {1, 2, 4}) or
// unpadded, 1–4 requests, lengths from the boundary set; a third of the
// padded draws make every L_i = 2g, where R(r) == Σ L_i on every rank —
// the lengths that make the contracts indistinguishable by row count.
func draftLayout(t *rapid.T) spec.LayoutSpec {
	cp := rapid.IntRange(2, 4).Draw(t, "cp")
	g := rapid.SampledFrom([]int{0, 1, 2, 4}).Draw(t, "granule")
	b := rapid.IntRange(1, 4).Draw(t, "requests")
	ambiguous := g > 0 && rapid.IntRange(0, 2).Draw(t, "ambiguous") == 0
	sp := spec.LayoutSpec{CP: cp, Granule: g, Lens: make([]int, b)}
	for i := range sp.Lens {
		switch {
		case ambiguous:
			sp.Lens[i] = 2 * g
		case g == 0:
			sp.Lens[i] = rapid.OneOf(rapid.SampledFrom([]int{2 * cp, 2*cp + 1}), rapid.IntRange(2*cp, 40)).Draw(t, "len")
		default:
			sp.Lens[i] = rapid.OneOf(rapid.SampledFrom(edgeLens(cp, g)), rapid.IntRange(1, 40)).Draw(t, "len")
			sp.Lens[i] = max(sp.Lens[i], 1)
		}
	}
	return sp
}

// randRows draws n rows of width w with arbitrary bytes.
func randRows(t *rapid.T, w, n int, label string) spec.Rows {
	return spec.Rows{W: w, B: rapid.SliceOfN(rapid.Byte(), n*w, n*w).Draw(t, label)}
}

func draftValid(t *rapid.T) spec.CPDraftInputInput {
	w := rapid.IntRange(1, 4).Draw(t, "w")
	if rapid.IntRange(0, 5).Draw(t, "non_cp") == 0 {
		return spec.CPDraftInputInput{HiddenContract: spec.DraftGlobalValid, Hidden: randRows(t, w, rapid.IntRange(0, 12).Draw(t, "n"), "hidden")}
	}
	sp := draftLayout(t)
	lay, err := sp.Build()
	if err != nil {
		panic(err) // draftLayout draws only buildable layouts
	}
	r := rapid.IntRange(0, sp.CP-1).Draw(t, "rank")
	c := rapid.SampledFrom([]spec.DraftContract{spec.DraftGlobalValid, spec.DraftGlobalValid, spec.DraftCPLocal}).Draw(t, "contract")
	in := spec.CPDraftInputInput{Layout: &sp, Rank: r, HiddenContract: c,
		Hidden: randRows(t, w, ref.DraftContractRows(c, lay, r), "hidden")}
	if rapid.Bool().Draw(t, "with_draft_hidden") {
		d := randRows(t, rapid.IntRange(1, 4).Draw(t, "draft_w"), lay.R(r), "draft_hidden")
		in.DraftHidden = &d
	}
	return in
}

func draftInvalid(t *rapid.T) Bad[spec.CPDraftInputInput] {
	in := draftValid(t)
	if in.Layout == nil {
		switch rapid.IntRange(0, 3).Draw(t, "non_cp_violation") {
		case 0:
			in.Rank = rapid.SampledFrom([]int{-1, 1, 3}).Draw(t, "bad_rank")
			return Bad[spec.CPDraftInputInput]{in, spec.ErrRank}
		case 1:
			in.HiddenContract = spec.DraftCPLocal
			return Bad[spec.CPDraftInputInput]{in, spec.ErrRowContract}
		case 2:
			d := randRows(t, 1, 2, "draft_hidden")
			in.DraftHidden = &d
			return Bad[spec.CPDraftInputInput]{in, spec.ErrRowContract}
		default:
			in.Hidden.B = append(append([]byte{}, in.Hidden.B...), make([]byte, in.Hidden.W+1)...)
			in.Hidden.W++
			if len(in.Hidden.B)%in.Hidden.W == 0 {
				in.Hidden.W = 0
			}
			return Bad[spec.CPDraftInputInput]{in, spec.ErrRowCount}
		}
	}
	sp := *in.Layout
	lay, _ := sp.Build()
	switch rapid.IntRange(0, 8).Draw(t, "violation") {
	case 0:
		sp.CP = rapid.SampledFrom([]int{-1, 0, 1, spec.MaxCP + 1}).Draw(t, "bad_cp")
		in.Layout = &sp
		return Bad[spec.CPDraftInputInput]{in, spec.ErrInvalidCPSize}
	case 1:
		sp.Lens = append([]int{}, sp.Lens...)
		sp.Lens[0] = 2*sp.CP - 1
		sp.Granule = 0
		in.Layout = &sp
		return Bad[spec.CPDraftInputInput]{in, spec.ErrTooShortForZigzag}
	case 2:
		in.Rank = rapid.SampledFrom([]int{-1, sp.CP, sp.CP + 5}).Draw(t, "bad_rank")
		return Bad[spec.CPDraftInputInput]{in, spec.ErrRank}
	case 3:
		in.HiddenContract = spec.DraftContract(rapid.SampledFrom([]string{"", "GLOBAL_VALID", "local-valid", "cp-local"}).Draw(t, "bad_contract"))
		return Bad[spec.CPDraftInputInput]{in, spec.ErrBadEnum}
	case 4:
		in.Hidden = spec.Rows{W: 0, B: in.Hidden.B}
		return Bad[spec.CPDraftInputInput]{in, spec.ErrRowCount}
	case 5:
		// one row short or long of the declared contract's count
		n := ref.DraftContractRows(in.HiddenContract, lay, in.Rank) + rapid.SampledFrom([]int{-1, 1}).Draw(t, "off")
		in.Hidden = randRows(t, in.Hidden.W, n, "hidden") // every count is >= 1, so n >= 0
		return Bad[spec.CPDraftInputInput]{in, spec.ErrRowContract}
	case 6:
		d := randRows(t, 2, lay.R(in.Rank), "draft_hidden")
		d.B = append(d.B, 7)
		in.DraftHidden = &d
		return Bad[spec.CPDraftInputInput]{in, spec.ErrRowCount}
	case 7:
		d := randRows(t, 1, lay.R(in.Rank)+rapid.SampledFrom([]int{-1, 1, 2}).Draw(t, "draft_off"), "draft_hidden")
		in.DraftHidden = &d
		return Bad[spec.CPDraftInputInput]{in, spec.ErrRowContract}
	default:
		sp.Granule = rapid.IntRange(-3, -1).Draw(t, "bad_granule")
		in.Layout = &sp
		return Bad[spec.CPDraftInputInput]{in, spec.ErrInvalidGranule}
	}
}

// draftBoundary: boundary lengths (1, ps−1, ps, ps+1, 2·cp−1, 2·cp,
// 2·cp+1, each alone and all in one batch; g = ps, and unpadded for those
// >= 2·cp), first and last rank, with and without draft hidden states,
// each hidden contract; and the non-CP path.
func draftBoundary() []Case[spec.CPDraftInputInput] {
	var cs []Case[spec.CPDraftInputInput]
	rows := func(w, n int, fill byte) spec.Rows {
		b := bytes.Repeat([]byte{fill}, w*n)
		for x := range b {
			b[x] += byte(x)
		}
		return spec.Rows{W: w, B: b}
	}
	add := func(name string, sp spec.LayoutSpec) {
		lay, err := sp.Build()
		if err != nil {
			panic(fmt.Sprintf("%s: %v", name, err))
		}
		for _, r := range []int{0, sp.CP - 1} {
			for _, c := range []spec.DraftContract{spec.DraftGlobalValid, spec.DraftCPLocal} {
				spc := sp
				in := spec.CPDraftInputInput{Layout: &spc, Rank: r, HiddenContract: c, Hidden: rows(3, ref.DraftContractRows(c, lay, r), 1)}
				cs = append(cs, Case[spec.CPDraftInputInput]{fmt.Sprintf("%s-rank%d-%s", name, r, c), in})
				d := rows(2, lay.R(r), 100)
				in.DraftHidden = &d
				cs = append(cs, Case[spec.CPDraftInputInput]{fmt.Sprintf("%s-rank%d-%s-draft-hidden", name, r, c), in})
			}
		}
	}
	for _, cp := range []int{2, 4} {
		for _, ps := range []int{2, 4} {
			edges := edgeLens(cp, ps)
			for _, l := range edges {
				add(fmt.Sprintf("cp%d-g%d-len%d", cp, ps, l), spec.LayoutSpec{CP: cp, Lens: []int{l}, Granule: ps})
			}
			add(fmt.Sprintf("cp%d-g%d-mixed", cp, ps), spec.LayoutSpec{CP: cp, Lens: edges, Granule: ps})
		}
		for _, l := range []int{2 * cp, 2*cp + 1} {
			add(fmt.Sprintf("cp%d-unpadded-len%d", cp, l), spec.LayoutSpec{CP: cp, Lens: []int{l}})
		}
		add(fmt.Sprintf("cp%d-unpadded-mixed", cp), spec.LayoutSpec{CP: cp, Lens: []int{2 * cp, 2*cp + 1, 5 * cp}})
	}
	cs = append(cs,
		Case[spec.CPDraftInputInput]{"non-cp", spec.CPDraftInputInput{HiddenContract: spec.DraftGlobalValid, Hidden: rows(4, 3, 9)}},
		Case[spec.CPDraftInputInput]{"non-cp-empty", spec.CPDraftInputInput{HiddenContract: spec.DraftGlobalValid, Hidden: spec.Rows{W: 4, B: []byte{}}}},
		// "b": null decodes to a nil buffer: the draft rows must still
		// encode as "" (the nil-buffer normalisation of both twins).
		Case[spec.CPDraftInputInput]{"non-cp-null-buffer", spec.CPDraftInputInput{HiddenContract: spec.DraftGlobalValid, Hidden: spec.Rows{W: 4}}},
	)
	return cs
}

// draftRegressions: the minimal inputs of the two historic shapes.
//
// draft-cp-local-from-length: padded cp=2, g=1, L=[2] gives R(0) = 2 =
// Σ L, so rank 0's two *global* rows (no draft hidden) have the length of
// its CP-local rows; inferring the marker from the length calls them
// CP-local and the guard masks the second (a real token) as padding.
//
// draft-v2-global-hidden: the SPEC_V2 path before the fix passed the
// global hidden states and never set the marker although the model exposed
// CP-local draft hidden states (cp=2, g=1, L=[3]: 3 global rows, R(0) = 2).
func draftRegressions() []Case[spec.CPDraftInputInput] {
	return []Case[spec.CPDraftInputInput]{
		{"draft-cp-local-from-length", spec.CPDraftInputInput{Layout: &spec.LayoutSpec{CP: 2, Lens: []int{2}, Granule: 1}, Rank: 0,
			HiddenContract: spec.DraftGlobalValid, Hidden: spec.Rows{W: 2, B: []byte{1, 1, 2, 2}}}},
		{"draft-v2-global-hidden", spec.CPDraftInputInput{Layout: &spec.LayoutSpec{CP: 2, Lens: []int{3}, Granule: 1}, Rank: 0,
			HiddenContract: spec.DraftGlobalValid, Hidden: spec.Rows{W: 2, B: []byte{1, 1, 2, 2, 3, 3}},
			DraftHidden: &spec.Rows{W: 2, B: []byte{10, 10, 0, 0}}}},
	}
}

// draftMarkerDeclared: the marker is what the caller declared — CP-local
// iff draft hidden states are given or the hidden rows are declared
// cp-local-compute-padded — and the output's contract and source agree.
func draftMarkerDeclared(_ spec.Limits, in spec.CPDraftInputInput, out spec.CPDraftInputOutput) error {
	want := in.DraftHidden != nil || in.HiddenContract == spec.DraftCPLocal
	if out.CPLocal != want {
		return fmt.Errorf("cp_local = %t, but the input declares %t (draft hidden %t, hidden contract %q)",
			out.CPLocal, want, in.DraftHidden != nil, in.HiddenContract)
	}
	if (out.Contract == spec.DraftCPLocal) != out.CPLocal {
		return fmt.Errorf("contract %q with cp_local = %t", out.Contract, out.CPLocal)
	}
	if wantSrc := map[bool]string{true: spec.DraftSourceDraftHidden, false: spec.DraftSourceHidden}[in.DraftHidden != nil]; out.Source != wantSrc {
		return fmt.Errorf("source %q, want %q", out.Source, wantSrc)
	}
	return nil
}

// draftPrefersLocal: the draft rows are the CP-local draft hidden states
// when present, else the target's hidden states, byte for byte.
func draftPrefersLocal(_ spec.Limits, in spec.CPDraftInputInput, out spec.CPDraftInputOutput) error {
	want := in.Hidden
	if in.DraftHidden != nil {
		want = *in.DraftHidden
	}
	if out.Hidden.W != want.W || !bytes.Equal(out.Hidden.B, want.B) {
		return fmt.Errorf("draft rows (w=%d, %d B) are not the preferred source's (w=%d, %d B)", out.Hidden.W, len(out.Hidden.B), want.W, len(want.B))
	}
	return nil
}

// draftGuardFollows: the guard counts the draft rows; with the marker set
// its mask is the rank's lane-slot valid mask, derived here row by row
// from S and V (popcount Rv(r)), and each request's last token sits on
// exactly one rank, at a valid row; without it every row is real and the
// last token of request i is global row OutBase(i) + L_i − 1.
func draftGuardFollows(_ spec.Limits, in spec.CPDraftInputInput, out spec.CPDraftInputOutput) error {
	g := out.Guard
	if g.Rows != out.Hidden.N() || len(g.ValidMask) != g.Rows {
		return fmt.Errorf("guard rows %d, mask %d for %d draft rows", g.Rows, len(g.ValidMask), out.Hidden.N())
	}
	if in.Layout == nil || !out.CPLocal {
		for x, v := range g.ValidMask {
			if !v {
				return fmt.Errorf("global row %d masked as padding", x)
			}
		}
		if in.Layout == nil {
			return nil
		}
		lay, _ := in.Layout.Build()
		for i, l := range lay.L {
			if i >= len(g.LastRows) || g.LastRows[i] != lay.OutBase(i)+l-1 {
				return fmt.Errorf("last rows %v, request %d's last token is global row %d", g.LastRows, i, lay.OutBase(i)+l-1)
			}
		}
		return nil
	}
	lay, _ := in.Layout.Build()
	want := naiveLocalMask(lay, in.Rank)
	for x := range want {
		if g.ValidMask[x] != want[x] {
			return fmt.Errorf("cp-local mask %v, lane slots give %v", g.ValidMask, want)
		}
	}
	if len(g.LastRows) != lay.B() {
		return fmt.Errorf("%d last rows for %d requests", len(g.LastRows), lay.B())
	}
	for i := range lay.L {
		owners := 0
		for r := range lay.CP {
			if x := ref.DraftGuard(&lay, r, true, lay.R(r)).LastRows[i]; x >= 0 {
				owners++
			}
		}
		if x := g.LastRows[i]; owners != 1 || (x >= 0 && !g.ValidMask[x]) {
			return fmt.Errorf("request %d: last token on %d ranks, this rank's row %d", i, owners, x)
		}
	}
	return nil
}

// naiveLocalMask is §0.3 spelled out: rank r's rows are the PREV slots then
// the MIRROR slots, each S rows whose first V are valid.
func naiveLocalMask(lay spec.Layout, r int) []bool {
	var mask []bool
	for _, k := range []int{r, lay.Mirror(r)} {
		for i := range lay.L {
			for p := range lay.S[i][k] {
				mask = append(mask, p < lay.V[i][k])
			}
		}
	}
	return mask
}
