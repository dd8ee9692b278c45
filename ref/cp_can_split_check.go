package ref

import (
	"fmt"
	"strings"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for cp.can_split (docs/spec/cp-layout.md §5): its sentinels, the forward mode, the scalars and the page plan.

// forwardModes lists every mode, in §5.1's order.
var forwardModes = []spec.ForwardMode{spec.ModeExtend, spec.ModeMixed, spec.ModeDecode, spec.ModeTargetVerify, spec.ModeDraftExtend, spec.ModeDraftExtendV2, spec.ModeIdle}

// CheckForwardMode rejects a mode that is not one of §5.1's seven with
// ErrBadEnum. It is the only check made before eligibility: an unknown mode
// is not metadata of some other forward, it is no forward at all.
func CheckForwardMode(m spec.ForwardMode) error {
	for _, x := range forwardModes {
		if m == x {
			return nil
		}
	}
	names := make([]string, len(forwardModes))
	for i, x := range forwardModes {
		names[i] = string(x)
	}
	return spec.Reject(spec.ErrBadEnum, "mode", string(m), "one of "+strings.Join(names, ", "))
}

// CheckCanSplitScalars applies the checks of an eligible forward that read
// no list: the CP size bound (it sizes the layout) and the extend-length
// count (§5.2 step 3).
func CheckCanSplitScalars(in spec.CPCanSplitInput) error {
	if in.CPSize > spec.MaxCP {
		return spec.Reject(spec.ErrInvalidCPSize, "cp_size", in.CPSize, fmt.Sprintf("in [2, %d]", spec.MaxCP))
	}
	if in.ExtendLens == nil {
		return spec.Reject(spec.ErrMissingExtendLens, "extend_lens", nil, fmt.Sprintf("one length per request (batch_size=%d)", in.BatchSize))
	}
	if len(in.ExtendLens) != in.BatchSize {
		return spec.Reject(spec.ErrMissingExtendLens, "extend_lens", len(in.ExtendLens), fmt.Sprintf("len == batch_size (%d)", in.BatchSize))
	}
	return nil
}

// CheckPagePlanShape is the list-level half of CheckPagePlan (§5.2 step
// 4): a usable page size, a prefix plan of B entries, and SeqLens of B
// entries when present.
func CheckPagePlanShape(in spec.CPCanSplitInput) error {
	if in.PageSize < 1 {
		return spec.Reject(spec.ErrPagePlan, "page_size", in.PageSize, ">= 1 (the page is the minimum cache unit)")
	}
	if in.PrefixLens == nil {
		return spec.Reject(spec.ErrPagePlan, "prefix_lens", nil, fmt.Sprintf("a prefix plan of batch_size (%d) lengths", in.BatchSize))
	}
	if len(in.PrefixLens) != in.BatchSize {
		return spec.Reject(spec.ErrPagePlan, "prefix_lens", len(in.PrefixLens), fmt.Sprintf("len == batch_size (%d)", in.BatchSize))
	}
	if in.SeqLens != nil && len(in.SeqLens) != in.BatchSize {
		return spec.Reject(spec.ErrPagePlan, "seq_lens", len(in.SeqLens), fmt.Sprintf("null or len == batch_size (%d)", in.BatchSize))
	}
	return nil
}

// CheckPagePlanRequest is the per-request half of CheckPagePlan (§5.2
// step 4) for request i: a page-aligned non-negative prefix, an extend of
// at least one token, and SeqLens[i] == P_i + L_i when SeqLens is given.
// Preconditions: CheckPagePlanShape passed.
func CheckPagePlanRequest(in spec.CPCanSplitInput, i int) error {
	p, l := in.PrefixLens[i], in.ExtendLens[i]
	if p < 0 || p%in.PageSize != 0 {
		return spec.Reject(spec.ErrPagePlan, spec.Idx("prefix_lens", i), p, fmt.Sprintf(">= 0 and a multiple of page_size (%d)", in.PageSize))
	}
	if l < 1 {
		return spec.Reject(spec.ErrPagePlan, spec.Idx("extend_lens", i), l, ">= 1")
	}
	if in.SeqLens != nil {
		if s := in.SeqLens[i]; spec.AddOverflows(int64(p), int64(l)) || s != p+l {
			return spec.Reject(spec.ErrPagePlan, spec.Idx("seq_lens", i), s, fmt.Sprintf("== prefix_lens[%d] + extend_lens[%d] (%d + %d)", i, i, p, l))
		}
	}
	return nil
}

// CheckPagePlan is §5.2 step 4, fail-fast: every violation of the
// shared-KV page plan is ErrPagePlan, reported request by request.
func CheckPagePlan(in spec.CPCanSplitInput) error {
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
		return spec.Reject(spec.ErrBadLength, spec.Idx("extend_lens", i), lens[i], ">= 0")
	}
	return nil
}
