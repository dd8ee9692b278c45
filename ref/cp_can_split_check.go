package ref

import (
	"fmt"
	"strings"
)

// Validation for cp.can_split (docs/spec/cp-layout.md §5): its sentinels, the forward mode, the scalars and the page plan.

// CP-split sentinels (docs/spec/cp-layout.md §0.5, §5.2).
var (
	// ErrPagePlan: an eligible shared-KV extend whose prefix page plan is
	// missing or broken (§5.2 step 4).
	ErrPagePlan = NewSentinel("page_plan", "CP shared-KV page plan is missing or inconsistent")
	// ErrMissingExtendLens: an eligible CP extend without one extend length
	// per request (§5.2 step 3).
	ErrMissingExtendLens = NewSentinel("missing_extend_lens", "CP extend needs one extend length per request")
)

// forwardModes lists every mode, in §5.1's order.
var forwardModes = []ForwardMode{ModeExtend, ModeMixed, ModeDecode, ModeTargetVerify, ModeDraftExtend, ModeDraftExtendV2, ModeIdle}

// CheckForwardMode rejects a mode that is not one of §5.1's seven with
// ErrBadEnum. It is the only check made before eligibility: an unknown mode
// is not metadata of some other forward, it is no forward at all.
func CheckForwardMode(m ForwardMode) error {
	for _, x := range forwardModes {
		if m == x {
			return nil
		}
	}
	names := make([]string, len(forwardModes))
	for i, x := range forwardModes {
		names[i] = string(x)
	}
	return Reject(ErrBadEnum, "mode", string(m), "one of "+strings.Join(names, ", "))
}

// CheckCanSplitScalars applies the checks of an eligible forward that read
// no list: the CP size bound (it sizes the layout) and the extend-length
// count (§5.2 step 3).
func CheckCanSplitScalars(in CPCanSplitInput) error {
	if in.CPSize > MaxCP {
		return Reject(ErrInvalidCPSize, "cp_size", in.CPSize, fmt.Sprintf("in [2, %d]", MaxCP))
	}
	if in.ExtendLens == nil {
		return Reject(ErrMissingExtendLens, "extend_lens", nil, fmt.Sprintf("one length per request (batch_size=%d)", in.BatchSize))
	}
	if len(in.ExtendLens) != in.BatchSize {
		return Reject(ErrMissingExtendLens, "extend_lens", len(in.ExtendLens), fmt.Sprintf("len == batch_size (%d)", in.BatchSize))
	}
	return nil
}

// CheckPagePlanShape is the list-level half of CheckPagePlan (§5.2 step
// 4): a usable page size, a prefix plan of B entries, and SeqLens of B
// entries when present.
func CheckPagePlanShape(in CPCanSplitInput) error {
	if in.PageSize < 1 {
		return Reject(ErrPagePlan, "page_size", in.PageSize, ">= 1 (the page is the minimum cache unit)")
	}
	if in.PrefixLens == nil {
		return Reject(ErrPagePlan, "prefix_lens", nil, fmt.Sprintf("a prefix plan of batch_size (%d) lengths", in.BatchSize))
	}
	if len(in.PrefixLens) != in.BatchSize {
		return Reject(ErrPagePlan, "prefix_lens", len(in.PrefixLens), fmt.Sprintf("len == batch_size (%d)", in.BatchSize))
	}
	if in.SeqLens != nil && len(in.SeqLens) != in.BatchSize {
		return Reject(ErrPagePlan, "seq_lens", len(in.SeqLens), fmt.Sprintf("null or len == batch_size (%d)", in.BatchSize))
	}
	return nil
}

// CheckPagePlanRequest is the per-request half of CheckPagePlan (§5.2
// step 4) for request i: a page-aligned non-negative prefix, an extend of
// at least one token, and SeqLens[i] == P_i + L_i when SeqLens is given.
// Preconditions: CheckPagePlanShape passed.
func CheckPagePlanRequest(in CPCanSplitInput, i int) error {
	p, l := in.PrefixLens[i], in.ExtendLens[i]
	if p < 0 || p%in.PageSize != 0 {
		return Reject(ErrPagePlan, Idx("prefix_lens", i), p, fmt.Sprintf(">= 0 and a multiple of page_size (%d)", in.PageSize))
	}
	if l < 1 {
		return Reject(ErrPagePlan, Idx("extend_lens", i), l, ">= 1")
	}
	if in.SeqLens != nil {
		if s := in.SeqLens[i]; AddOverflows(int64(p), int64(l)) || s != p+l {
			return Reject(ErrPagePlan, Idx("seq_lens", i), s, fmt.Sprintf("== prefix_lens[%d] + extend_lens[%d] (%d + %d)", i, i, p, l))
		}
	}
	return nil
}

// CheckPagePlan is §5.2 step 4, fail-fast: every violation of the
// shared-KV page plan is ErrPagePlan, reported request by request.
func CheckPagePlan(in CPCanSplitInput) error {
	if err := CheckPagePlanShape(in); err != nil {
		return err
	}
	for i := range in.PrefixLens {
		if err := CheckPagePlanRequest(in, i); err != nil {
			return err
		}
	}
	return nil
}

// CheckExtendLenNonNegative rejects a negative extend length without
// shared-KV (where the page plan, which demands >= 1, is not checked): the
// spec's sub-threshold rule would otherwise turn garbage into a silent
// no-split.
func CheckExtendLenNonNegative(lens []int, i int) error {
	if lens[i] < 0 {
		return Reject(ErrBadLength, Idx("extend_lens", i), lens[i], ">= 0")
	}
	return nil
}
