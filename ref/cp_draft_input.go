package ref

import "slices"

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

// DraftContract is the row contract of a hidden-state buffer on one rank
// (the one-rank forms of docs/spec/cp-layout.md §2.4 and §7.5's contracts).
type DraftContract string

// The row contracts a draft input's source may follow.
const (
	// DraftGlobalValid is the unsplit global valid rows, token order: Σ L_i
	// rows (the target's hidden_states after CP output collection).
	DraftGlobalValid DraftContract = "global-valid"
	// DraftCPLocal is rank r's local compute-padded rows, lane-slot order
	// with padding interleaved: R(r) rows (before CP output collection).
	DraftCPLocal DraftContract = contractCPLocalComputePadded
)

// The sources CPDraftInput reports.
const (
	// DraftSourceDraftHidden: the model's CP-local draft hidden states.
	DraftSourceDraftHidden = "draft_hidden"
	// DraftSourceHidden: the target's hidden states.
	DraftSourceHidden = "hidden"
)

// CPDraftInputInput is the input of cp.draft_input.
type CPDraftInputInput struct {
	// Layout is the CP prefill's layout; null means the forward was not
	// CP-split (the non-CP path, which the fix leaves unchanged).
	Layout *LayoutSpec `json:"layout"`
	// Rank is this CP rank, in [0, cp); 0 without a layout.
	Rank int `json:"rank"`
	// Hidden is the target's hidden states.
	Hidden Rows `json:"hidden"`
	// HiddenContract is Hidden's row contract; global-valid without a layout.
	HiddenContract DraftContract `json:"hidden_contract"`
	// DraftHidden is the model's optional CP-local draft hidden states
	// (cp-local-compute-padded, R(rank) rows; its width may differ from
	// Hidden's); null when the model exposes none. Only a CP forward has it.
	DraftHidden *Rows `json:"draft_hidden"`
}

// DraftPadGuard is what the static MLP-sync padding guard derives from the
// marker: the rank's row count for the sync, which rows are real tokens,
// and where each request's last token sits in the draft rows.
type DraftPadGuard struct {
	// Rows is the row count the rank contributes: R(r) when CP-local (the
	// local compute shape, kept for the CP collectives), else Σ L_i.
	Rows int `json:"rows"`
	// ValidMask[x] says whether draft row x is a real token: §2.1's
	// ValidMask(r) (interleaved padding) when CP-local, all true otherwise.
	ValidMask []bool `json:"valid_mask"`
	// LastRows[i] is the draft row of request i's last token — its §2.1
	// LocalRow when CP-local and this rank owns it, −1 when another rank
	// does, OutBase(i)+L_i−1 when global. Empty without a layout.
	LastRows []int `json:"last_rows"`
}

// CPDraftInputOutput is the draft extend's input after a CP prefill.
type CPDraftInputOutput struct {
	// Hidden is the draft input's hidden rows.
	Hidden Rows `json:"hidden"`
	// CPLocal is the explicit marker EagleDraftInput.cp_local_hidden_states.
	CPLocal bool `json:"cp_local"`
	// Contract is Hidden's row contract (cp-local-compute-padded iff CPLocal).
	Contract DraftContract `json:"contract"`
	// Source says which input Hidden came from.
	Source string `json:"source"`
	// Guard is the padding guard's reading of the marker.
	Guard DraftPadGuard `json:"guard"`
}

// DraftContractRows is the row count contract c demands of rank r.
func DraftContractRows(c DraftContract, lay Layout, r int) int {
	if c == DraftCPLocal {
		return lay.R(r)
	}
	return lay.TotalValid()
}

// DraftMarker is the fix's choice of source and marker: the CP-local draft
// hidden states when present (marked CP-local), else the target's hidden
// states under their declared contract.
func DraftMarker(in CPDraftInputInput) (src Rows, c DraftContract, source string) {
	if in.DraftHidden != nil {
		return *in.DraftHidden, DraftCPLocal, DraftSourceDraftHidden
	}
	return in.Hidden, in.HiddenContract, DraftSourceHidden
}

// CPDraftInput builds the EAGLE draft input after a CP prefill (see the file
// comment): validate, pick the source and marker (DraftMarker), then let
// the padding guard read the marker (DraftGuard). Hidden is a copy.
func CPDraftInput(lim Limits, in CPDraftInputInput) (CPDraftInputOutput, error) {
	lay, err := ValidateCPDraftInput(lim, in)
	if err != nil {
		return CPDraftInputOutput{}, err
	}
	src, c, source := DraftMarker(in)
	out := CPDraftInputOutput{
		Hidden:   Rows{W: src.W, B: slices.Clone(src.B)},
		CPLocal:  c == DraftCPLocal,
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
func DraftGuard(lay *Layout, r int, cpLocal bool, n int) DraftPadGuard {
	g := DraftPadGuard{Rows: n, ValidMask: make([]bool, n), LastRows: []int{}}
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
	for _, lane := range []Lane{LanePrev, LaneMirror} {
		k := r
		if lane == LaneMirror {
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
func lastLocalRow(lay Layout, r, i, t int) int {
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
