package ref

import "slices"

// cp.can_split (docs/spec/cp-layout.md §5): decide per forward whether to zigzag-split
// it across the CP group. The order of the steps is the contract: the
// eligibility check comes before the page-plan validation, so forwards that
// are not context-parallel extends never fail on metadata they do not own.

// ForwardMode is the forward batch's mode (§5.1).
type ForwardMode string

// The forward modes of §5.1.
const (
	// ModeExtend is a prefill/extend forward, the CP split's own mode.
	ModeExtend ForwardMode = "EXTEND"
	// ModeMixed mixes extend and decode requests; never zigzag-split.
	ModeMixed ForwardMode = "MIXED"
	// ModeDecode is a decode forward.
	ModeDecode ForwardMode = "DECODE"
	// ModeTargetVerify is the speculative target-verify forward.
	ModeTargetVerify ForwardMode = "TARGET_VERIFY"
	// ModeDraftExtend is the speculative draft extend.
	ModeDraftExtend ForwardMode = "DRAFT_EXTEND"
	// ModeDraftExtendV2 is SPEC_V2's draft extend.
	ModeDraftExtendV2 ForwardMode = "DRAFT_EXTEND_V2"
	// ModeIdle is an idle forward (no requests on this rank).
	ModeIdle ForwardMode = "IDLE"
)

// The reasons Decide reports (canonical output: both twins use these).
const (
	// ReasonCPDisabled: CP is off or the group has one rank (step 1).
	ReasonCPDisabled = "cp disabled"
	// ReasonNotCPExtend: the mode is not a context-parallel extend (step 2).
	ReasonNotCPExtend = "mode not CP extend"
	// ReasonEmptyExtend: the batch extends no tokens (step 5).
	ReasonEmptyExtend = "empty extend"
	// ReasonSubThreshold: without compute padding some request has fewer
	// than 2·cp tokens, so the batch runs as normal prefill (step 6).
	ReasonSubThreshold = "sub-threshold request"
	// ReasonPadded: split with the fork's compute-padded layout (step 6).
	ReasonPadded = "cp extend, compute-padded"
	// reasonUnpadded: split with upstream's unpadded layout (step 6).
	reasonUnpadded = "cp extend, unpadded"
)

// CPCanSplitInput is the forward batch metadata Decide reads (§5.1). Fields
// other than Mode are metadata: they are only read, and only validated,
// for eligible forwards.
type CPCanSplitInput struct {
	// Mode is the forward mode, one of §5.1's seven.
	Mode ForwardMode `json:"mode"`
	// CPEnabled says whether attention context parallelism is on.
	CPEnabled bool `json:"cp_enabled"`
	// CPSize is the attention-CP group size; <= 1 means no split.
	CPSize int `json:"cp_size"`
	// UsesCPSharedKV is the fork's shared-KV flag, set on every forward when on.
	UsesCPSharedKV bool `json:"uses_cp_shared_kv"`
	// BatchSize is B, the number of requests in the forward.
	BatchSize int `json:"batch_size"`
	// ExtendLens are the extend lengths L_i (extend_seq_lens_cpu); null = missing.
	ExtendLens []int `json:"extend_lens"`
	// PrefixLens are the prefix lengths P_i (extend_prefix_lens_cpu); null = missing.
	PrefixLens []int `json:"prefix_lens"`
	// SeqLens are the sequence lengths; null skips the P_i + L_i check.
	SeqLens []int `json:"seq_lens"`
	// PageSize is the KV page size in tokens (the page plan's unit).
	PageSize int `json:"page_size"`
	// Granule is the compute-padding granule g; 0 means PageSize (§5.1:
	// g == ps for shared-KV).
	Granule int `json:"granule,omitzero"`
}

// CPCanSplitOutput is the decision (§5.1 Decision).
type CPCanSplitOutput struct {
	// Split says whether the forward is zigzag-split.
	Split bool `json:"split"`
	// Reason is one of the Reason* constants.
	Reason string `json:"reason"`
	// Layout is the CP layout when Split, else null.
	Layout *Layout `json:"layout"`
}

// CPSplitEligible is §5.2 step 2: EXTEND, or a draft extend when shared-KV
// is on. MIXED (excluded by newest upstream), DECODE, TARGET_VERIFY, IDLE
// and a draft extend without shared-KV are not context-parallel extends.
func CPSplitEligible(m ForwardMode, sharedKV bool) bool {
	switch m {
	case ModeExtend:
		return true
	case ModeDraftExtend, ModeDraftExtendV2:
		return sharedKV
	}
	return false
}

// SplitGranule is the padding granule of a shared-KV split: Granule, or
// PageSize when Granule is 0.
func SplitGranule(in CPCanSplitInput) int {
	if in.Granule == 0 {
		return in.PageSize
	}
	return in.Granule
}

// BuildSplitLayout is §5.2 step 6 for a batch that splits: the padded
// layout under shared-KV, else the unpadded one. The layout holds 2·B·2·cp
// ints, a size set by the input number cp, so it is checked against lim.
func BuildSplitLayout(lim Limits, in CPCanSplitInput) (CPCanSplitOutput, error) {
	if err := lim.CheckOutput("cp_size", int64(len(in.ExtendLens))*4*int64(in.CPSize), 8); err != nil {
		return CPCanSplitOutput{}, err
	}
	var lay Layout
	var err error
	reason := reasonUnpadded
	if in.UsesCPSharedKV {
		lay, err = buildLayoutPadded(in.CPSize, in.ExtendLens, SplitGranule(in))
		reason = ReasonPadded
	} else {
		lay, err = BuildLayoutUnpadded(in.CPSize, in.ExtendLens)
	}
	if err != nil {
		return CPCanSplitOutput{}, err
	}
	return CPCanSplitOutput{Split: true, Reason: reason, Layout: &lay}, nil
}

// NoSplit is a no-split decision for reason.
func NoSplit(reason string) CPCanSplitOutput { return CPCanSplitOutput{Reason: reason} }

// CPCanSplit decides whether a forward is CP-split (docs/spec/cp-layout.md §5.2), in
// this order:
//
//  0. Mode must be one of §5.1's modes (ErrBadEnum) — the only check before
//     eligibility.
//  1. CP off or CPSize <= 1 → no-split.
//  2. Not a CP extend (CPSplitEligible) → no-split, whatever the metadata.
//  3. CPSize > MaxCP → ErrInvalidCPSize; ExtendLens null or not B long →
//     ErrMissingExtendLens.
//  4. Shared-KV: CheckPagePlan (ErrPagePlan). Without shared-KV a
//     negative length is ErrBadLength [designed: the spec is silent].
//  5. No extend token (Σ L_i == 0) → no-split.
//  6. Shared-KV → split, buildLayoutPadded(cp, L, g); else a request below
//     2·cp tokens → no-split, else split, BuildLayoutUnpadded.
//
// The builders' own errors (ErrInvalidGranule, ErrTooLarge) pass through.
func CPCanSplit(lim Limits, in CPCanSplitInput) (CPCanSplitOutput, error) {
	if err := CheckForwardMode(in.Mode); err != nil {
		return CPCanSplitOutput{}, err
	}
	if !in.CPEnabled || in.CPSize <= 1 {
		return NoSplit(ReasonCPDisabled), nil
	}
	if !CPSplitEligible(in.Mode, in.UsesCPSharedKV) {
		return NoSplit(ReasonNotCPExtend), nil
	}
	if err := CheckCanSplitScalars(in); err != nil {
		return CPCanSplitOutput{}, err
	}
	if in.UsesCPSharedKV {
		if err := CheckPagePlan(in); err != nil {
			return CPCanSplitOutput{}, err
		}
	} else {
		for i := range in.ExtendLens {
			if err := CheckExtendLenNonNegative(in.ExtendLens, i); err != nil {
				return CPCanSplitOutput{}, err
			}
		}
	}
	// Every length is now >= 0, so Σ L_i == 0 iff none is positive (and
	// no sum that could overflow is needed).
	if !slices.ContainsFunc(in.ExtendLens, func(l int) bool { return l > 0 }) {
		return NoSplit(ReasonEmptyExtend), nil
	}
	if !in.UsesCPSharedKV {
		for _, l := range in.ExtendLens {
			if l < 2*in.CPSize {
				return NoSplit(ReasonSubThreshold), nil
			}
		}
	}
	return BuildSplitLayout(lim, in)
}
