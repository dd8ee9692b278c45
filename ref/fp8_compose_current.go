package ref

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

// ExpectedCurrentRows is the row count contract c expects (docs/spec/cp-layout.md
// §7.5's table): Σ L_b for global_valid, Σ_r Rv(r) or Σ_r R(r) for the
// local contracts, cp·M with a static stride.
func ExpectedCurrentRows(lay *Layout, c CurrentContract, lens []int, m int) int {
	if c == ContractGlobalValid {
		n := 0
		for _, l := range lens {
			n += l
		}
		return n
	}
	if m > 0 {
		return lay.CP * m
	}
	n := 0
	for r := range lay.CP {
		n += lay.RankPayload(r, contractSrc(c))
	}
	return n
}

func contractSrc(c CurrentContract) SrcKind {
	if c == ContractLocalValid {
		return SrcValid
	}
	return SrcCompute
}

// NormalizeCurrent returns the current rows in global valid order
// (docs/spec/cp-layout.md §7.5's table): as given for global_valid, Rerange with
// src = valid or compute for the local contracts (packed rows are first
// laid out at stride max_r n_r).
func NormalizeCurrent(plan FP8ComposePlan, cur Rows, m int) (Rows, error) {
	if plan.Contract == ContractGlobalValid {
		return cur, nil
	}
	lay, src := *plan.Lay, contractSrc(plan.Contract)
	if m == 0 {
		for r := range lay.CP {
			m = max(m, lay.RankPayload(r, src))
		}
		g := NewRows(cur.W, lay.CP*m)
		at := 0
		for r := range lay.CP {
			nr := lay.RankPayload(r, src)
			copy(g.B[r*m*cur.W:], cur.B[at*cur.W:(at+nr)*cur.W])
			at += nr
		}
		cur = g
	}
	return Rerange(lay, cur, m, src)
}

// FP8ComposeCurrent is fp8.compose_current (docs/spec/cp-layout.md §7.5): per request,
// the raw pool rows at its prefix slots, then its current rows (global
// valid order, OutBase(b)+t) quantized (div_fp32). The current slots are
// never read: the suffix comes from the fresh rows, not the cache.
func FP8ComposeCurrent(lim Limits, in FP8ComposeCurrentInput) (FP8ComposeCurrentOutput, error) {
	plan, err := ValidateFP8ComposeCurrent(lim, in)
	if err != nil {
		return FP8ComposeCurrentOutput{}, err
	}
	cur, err := NormalizeCurrent(plan, in.Current, in.M)
	if err != nil {
		return FP8ComposeCurrentOutput{}, err
	}
	q, err := FP8QuantizeRow(lim, FP8QuantizeRowInput{X: cur})
	if err != nil {
		return FP8ComposeCurrentOutput{}, err
	}
	out := NewRows(FP8RowBytes, plan.Total)
	row, base := 0, 0
	for b, ps := range in.PrefixSlots {
		for _, s := range ps {
			if err := lim.poll(row, "prefix_slots"); err != nil {
				return FP8ComposeCurrentOutput{}, err
			}
			copy(out.Row(row), in.Pool.Rows.Row(int(s)))
			row++
		}
		for t := range in.Lens[b] {
			copy(out.Row(row), q.Rows.Row(base+t))
			row++
		}
		base += in.Lens[b]
	}
	return FP8ComposeCurrentOutput{Rows: out}, nil
}
