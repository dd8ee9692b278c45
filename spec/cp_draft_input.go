package spec

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
	DraftCPLocal DraftContract = ContractCPLocalComputePadded
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
