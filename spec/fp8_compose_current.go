package spec

// CurrentContract names how the caller holds the current (just computed)
// rows of fp8.compose_current (docs/spec/cp-layout.md §7.5); explicit, never inferred
// from the row count.
type CurrentContract string

const (
	// ContractLocalValid: every rank's rows after valid selection, rank-major
	// (Σ_r Rv(r) rows, or cp·M with a static stride).
	ContractLocalValid CurrentContract = "local_valid"
	// ContractLocalComputePadded: every rank's compute-padded local rows,
	// rank-major (Σ_r R(r) rows, or cp·M).
	ContractLocalComputePadded CurrentContract = "local_compute_padded"
	// ContractGlobalValid: all valid rows in token order (Σ L_b rows).
	ContractGlobalValid CurrentContract = "global_valid"
)

// FP8ComposeCurrentInput is the input of fp8.compose_current (docs/spec/cp-layout.md §7.5).
type FP8ComposeCurrentInput struct {
	// Pool is the page-slot pool holding the prefix rows.
	Pool FP8Pool `json:"pool"`
	// PrefixSlots lists, per request b, its P_b prefix slots (P_b mod ps == 0).
	PrefixSlots [][]int64 `json:"prefix_slots"`
	// CurrentSlots lists, per request b, the L_b slots the current rows are
	// cached at; compose never reads them (P7.5), they name P7.6's cache view.
	CurrentSlots [][]int64 `json:"current_slots"`
	// Lens are the current lengths L_b, >= 0.
	Lens []int `json:"lens"`
	// Layout is the CP layout of the forward, or nil when it was not CP-split;
	// its lens must equal Lens.
	Layout *LayoutSpec `json:"layout,omitempty"`
	// Contract is the current rows' contract.
	Contract CurrentContract `json:"contract"`
	// M is the static all-gather stride of the local contracts, 0 = packed.
	M int `json:"m,omitzero"`
	// Current holds the fresh 1152-byte k_nope‖k_rope bf16 rows.
	Current Rows `json:"current"`
}

// FP8ComposeCurrentOutput is the flattened RAGGED K buffer.
type FP8ComposeCurrentOutput struct {
	// Rows holds, per request, P_b prefix pool rows then L_b quantized
	// current rows: Σ_b (P_b + L_b) rows of 656 B.
	Rows Rows `json:"rows"`
}

// FP8ComposePlan is a validated compose input: its layout (nil when not
// CP-split), the effective contract and the rows it expects.
type FP8ComposePlan struct {
	// Lay is the built layout, or nil.
	Lay *Layout
	// Contract is the effective contract (local_valid without a layout is global_valid).
	Contract CurrentContract
	// Total is Σ_b (P_b + L_b), the output row count.
	Total int
}
