package ref

import (
	"slices"

	"github.com/kvtwin/kvtwin/spec"
)

// cp.draft_input: the EAGLE draft input SPEC_V2 builds during a CP target
// prefill [designed from seed; the spec has no section for it, the seed's
// SPEC_V2 commit and the row contracts of docs/spec/cp-layout.md §2.4 / §7.5 are the
// sources].
//
// Under CP shared-KV the target model may expose draft_hidden_states, its
// hidden states as this rank's CP-local rows captured *before* CP output
// collection, beside hidden_states, which after collection are the global
// valid rows. The fix threads the CP-local rows into the draft input and
// marks the input CP-local (EagleDraftInput.cp_local_hidden_states); the
// static MLP-sync padding guard reads that marker to decide the rank's row
// count and which rows are real. The marker is never inferred from a row
// count: under compute padding R(r) can equal Σ L_i (e.g. padded cp=2,
// g=1, L=[2]: R(0) = R(1) = 2 = Σ L), so the two contracts share lengths.

// DraftContractRows is the row count contract c demands of rank r.
func DraftContractRows(c spec.DraftContract, lay spec.Layout, r int) int {
	if c == spec.DraftCPLocal {
		return lay.R(r)
	}
	return lay.TotalValid()
}

// DraftMarker is the fix's choice of source and marker: the CP-local draft
// hidden states when present (marked CP-local), else the target's hidden
// states under their declared contract.
func DraftMarker(in spec.CPDraftInputInput) (src spec.Rows, c spec.DraftContract, source string) {
	if in.DraftHidden != nil {
		return *in.DraftHidden, spec.DraftCPLocal, spec.DraftSourceDraftHidden
	}
	return in.Hidden, in.HiddenContract, spec.DraftSourceHidden
}

// CPDraftInput builds the EAGLE draft input after a CP prefill (see the file
// comment): validate, pick the source and marker (DraftMarker), then let
// the padding guard read the marker (DraftGuard). Hidden is a copy.
func CPDraftInput(lim spec.Limits, in spec.CPDraftInputInput) (spec.CPDraftInputOutput, error) {
	lay, err := ValidateCPDraftInput(lim, in)
	if err != nil {
		return spec.CPDraftInputOutput{}, err
	}
	src, c, source := DraftMarker(in)
	out := spec.CPDraftInputOutput{
		Hidden:   spec.Rows{W: src.W, B: slices.Clone(src.B)},
		CPLocal:  c == spec.DraftCPLocal,
		Contract: c,
		Source:   source,
	}
	if out.Hidden.B == nil {
		out.Hidden.B = []byte{}
	}
	out.Guard = DraftGuard(lay, in.Rank, out.CPLocal, src.N())
	return out, nil
}

// DraftGuard is the static padding guard: it takes the marker as given and
// derives the rank's rows, valid mask and last-token rows from it and the
// layout (lay nil: the non-CP path, n rows all real). n is the draft rows'
// count, already checked against the marker's contract.
func DraftGuard(lay *spec.Layout, r int, cpLocal bool, n int) spec.DraftPadGuard {
	g := spec.DraftPadGuard{Rows: n, ValidMask: make([]bool, n), LastRows: []int{}}
	if lay == nil || !cpLocal {
		for x := range g.ValidMask {
			g.ValidMask[x] = true
		}
		if lay != nil {
			for i, l := range lay.L {
				g.LastRows = append(g.LastRows, lay.OutBase(i)+l-1)
			}
		}
		return g
	}
	for _, lane := range []spec.Lane{spec.LanePrev, spec.LaneMirror} {
		k := r
		if lane == spec.LaneMirror {
			k = lay.Mirror(r)
		}
		for i := range lay.L {
			off := lay.SlotOff(r, lane, i)
			for p := range lay.V[i][k] {
				g.ValidMask[off+p] = true
			}
		}
	}
	for i, l := range lay.L {
		g.LastRows = append(g.LastRows, lastLocalRow(*lay, r, i, l-1))
	}
	return g
}

// lastLocalRow is token t of request i's row on rank r (§2.1 lastTokenRows:
// SlotOff(owner, lane, i) + t − SegStart), or −1 when another rank owns it.
func lastLocalRow(lay spec.Layout, r, i, t int) int {
	for k := range lay.NS() {
		start := lay.SegStart(i, k)
		if t >= start && t < start+lay.S[i][k] {
			if lay.Owner(k) != r {
				return -1
			}
			return lay.SlotOff(r, lay.LaneOf(k), i) + t - start
		}
	}
	return -1
}
