package ref

import (
	"slices"

	"github.com/kvtwin/kvtwin/spec"
)

// cp.can_split (docs/spec/cp-layout.md §5): decide per forward whether to zigzag-split
// it across the CP group. The order of the steps is the contract: the
// eligibility check comes before the page-plan validation, so forwards that
// are not context-parallel extends never fail on metadata they do not own.

// The reasons Decide reports (canonical output: both twins use these).
const (
	// reasonUnpadded: split with upstream's unpadded layout (step 6).
	reasonUnpadded = "cp extend, unpadded"
)

// CPSplitEligible is §5.2 step 2: EXTEND, or a draft extend when shared-KV
// is on. MIXED (excluded by newest upstream), DECODE, TARGET_VERIFY, IDLE
// and a draft extend without shared-KV are not context-parallel extends.
func CPSplitEligible(m spec.ForwardMode, sharedKV bool) bool {
	switch m {
	case spec.ModeExtend:
		return true
	case spec.ModeDraftExtend, spec.ModeDraftExtendV2:
		return sharedKV
	}
	return false
}

// SplitGranule is the padding granule of a shared-KV split: Granule, or
// PageSize when Granule is 0.
func SplitGranule(in spec.CPCanSplitInput) int {
	if in.Granule == 0 {
		return in.PageSize
	}
	return in.Granule
}

// BuildSplitLayout is §5.2 step 6 for a batch that splits: the padded
// layout under shared-KV, else the unpadded one. The layout holds 2·B·2·cp
// ints, a size set by the input number cp, so it is checked against lim.
func BuildSplitLayout(lim spec.Limits, in spec.CPCanSplitInput) (spec.CPCanSplitOutput, error) {
	if err := lim.CheckOutput("cp_size", int64(len(in.ExtendLens))*4*int64(in.CPSize), 8); err != nil {
		return spec.CPCanSplitOutput{}, err
	}
	var lay spec.Layout
	var err error
	reason := reasonUnpadded
	if in.UsesCPSharedKV {
		lay, err = spec.BuildLayoutPadded(in.CPSize, in.ExtendLens, SplitGranule(in))
		reason = spec.ReasonPadded
	} else {
		lay, err = spec.BuildLayoutUnpadded(in.CPSize, in.ExtendLens)
	}
	if err != nil {
		return spec.CPCanSplitOutput{}, err
	}
	return spec.CPCanSplitOutput{Split: true, Reason: reason, Layout: &lay}, nil
}

// NoSplit is a no-split decision for reason.
func NoSplit(reason string) spec.CPCanSplitOutput { return spec.CPCanSplitOutput{Reason: reason} }

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
//  6. Shared-KV → split, BuildLayoutPadded(cp, L, g); else a request below
//     2·cp tokens → no-split, else split, BuildLayoutUnpadded.
//
// The builders' own errors (ErrInvalidGranule, ErrTooLarge) pass through.
func CPCanSplit(lim spec.Limits, in spec.CPCanSplitInput) (spec.CPCanSplitOutput, error) {
	if err := CheckForwardMode(in.Mode); err != nil {
		return spec.CPCanSplitOutput{}, err
	}
	if !in.CPEnabled || in.CPSize <= 1 {
		return NoSplit(spec.ReasonCPDisabled), nil
	}
	if !CPSplitEligible(in.Mode, in.UsesCPSharedKV) {
		return NoSplit(spec.ReasonNotCPExtend), nil
	}
	if err := CheckCanSplitScalars(in); err != nil {
		return spec.CPCanSplitOutput{}, err
	}
	if in.UsesCPSharedKV {
		if err := CheckPagePlan(in); err != nil {
			return spec.CPCanSplitOutput{}, err
		}
	} else {
		for i := range in.ExtendLens {
			if err := CheckExtendLenNonNegative(in.ExtendLens, i); err != nil {
				return spec.CPCanSplitOutput{}, err
			}
		}
	}
	// Every length is now >= 0, so Σ L_i == 0 iff none is positive (and
	// no sum that could overflow is needed).
	if !slices.ContainsFunc(in.ExtendLens, func(l int) bool { return l > 0 }) {
		return NoSplit(spec.ReasonEmptyExtend), nil
	}
	if !in.UsesCPSharedKV {
		for _, l := range in.ExtendLens {
			if l < 2*in.CPSize {
				return NoSplit(spec.ReasonSubThreshold), nil
			}
		}
	}
	return BuildSplitLayout(lim, in)
}
