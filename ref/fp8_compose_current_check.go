package ref

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for fp8.compose_current (docs/spec/cp-layout.md §7.5).

// ValidateFP8ComposeCurrent checks an fp8.compose_current input in the order both
// twins report (docs/spec/cp-layout.md §7.5): the pool; one prefix and one current
// slot list per length (ErrLengthMismatch); lengths >= 0; the contract
// (ErrBadEnum); the layout and lay.L == lens (ErrLayoutMismatch), or no
// layout with local_compute_padded (ErrRowContract); each prefix a whole
// number of pages (ErrPagePlan); every slot in range, current slot lists of
// L_b entries; the stride; the current buffer's shape and width; its row
// count (ErrRowContract); every current value finite (ErrNonFinite); the
// output bound.
func ValidateFP8ComposeCurrent(lim spec.Limits, in spec.FP8ComposeCurrentInput) (spec.FP8ComposePlan, error) {
	n, err := CheckFP8Pool("pool", in.Pool)
	if err != nil {
		return spec.FP8ComposePlan{}, err
	}
	b := len(in.Lens)
	if len(in.PrefixSlots) != b {
		return spec.FP8ComposePlan{}, spec.Reject(spec.ErrLengthMismatch, "prefix_slots", len(in.PrefixSlots), fmt.Sprintf("len(lens) = %d lists", b))
	}
	if len(in.CurrentSlots) != b {
		return spec.FP8ComposePlan{}, spec.Reject(spec.ErrLengthMismatch, "current_slots", len(in.CurrentSlots), fmt.Sprintf("len(lens) = %d lists", b))
	}
	for i, l := range in.Lens {
		if l < 0 {
			return spec.FP8ComposePlan{}, spec.Reject(spec.ErrNegative, spec.Idx("lens", i), l, ">= 0")
		}
	}
	c := in.Contract
	switch c {
	case spec.ContractLocalValid, spec.ContractLocalComputePadded, spec.ContractGlobalValid:
	default:
		return spec.FP8ComposePlan{}, spec.Reject(spec.ErrBadEnum, "contract", string(c), `"local_valid", "local_compute_padded" or "global_valid"`)
	}
	var lay *spec.Layout
	if in.Layout != nil {
		l, err := BuildLayoutAt(lim, "layout", *in.Layout)
		if err != nil {
			return spec.FP8ComposePlan{}, err
		}
		if !slices.Equal(l.L, in.Lens) {
			return spec.FP8ComposePlan{}, spec.Reject(spec.ErrLayoutMismatch, "layout.lens", fmt.Sprint(l.L), fmt.Sprintf("lens = %v", in.Lens))
		}
		lay = &l
	} else if c == spec.ContractLocalComputePadded {
		return spec.FP8ComposePlan{}, spec.Reject(spec.ErrRowContract, "contract", string(c), "a CP layout (the forward was not CP-split)")
	}
	if lay == nil || c == spec.ContractGlobalValid {
		c = spec.ContractGlobalValid
	}
	total := int64(0)
	for i, ps := range in.PrefixSlots {
		if int64(len(ps))%in.Pool.PageSize != 0 {
			return spec.FP8ComposePlan{}, spec.Reject(spec.ErrPagePlan, spec.Idx("prefix_slots", i), len(ps), fmt.Sprintf("a multiple of page_size = %d slots", in.Pool.PageSize))
		}
		for j, s := range ps {
			if s < 0 || s >= n {
				return spec.FP8ComposePlan{}, spec.Reject(spec.ErrSlotOutOfRange, fmt.Sprintf("prefix_slots[%d][%d]", i, j), s, fmt.Sprintf("in [0, numSlots=%d)", n))
			}
		}
		total += int64(len(ps)) + int64(in.Lens[i])
	}
	for i, cs := range in.CurrentSlots {
		if len(cs) != in.Lens[i] {
			return spec.FP8ComposePlan{}, spec.Reject(spec.ErrLengthMismatch, spec.Idx("current_slots", i), len(cs), fmt.Sprintf("L_%d = %d slots", i, in.Lens[i]))
		}
		for j, s := range cs {
			if s < 0 || s >= n {
				return spec.FP8ComposePlan{}, spec.Reject(spec.ErrSlotOutOfRange, fmt.Sprintf("current_slots[%d][%d]", i, j), s, fmt.Sprintf("in [0, numSlots=%d)", n))
			}
		}
	}
	if in.M < 0 {
		return spec.FP8ComposePlan{}, spec.Reject(spec.ErrNegative, "m", in.M, ">= 0")
	}
	if in.M > 0 {
		if c == spec.ContractGlobalValid {
			return spec.FP8ComposePlan{}, spec.Reject(spec.ErrStride, "m", in.M, "0 for global valid rows")
		}
		for r := range lay.CP {
			if nr := lay.RankPayload(r, contractSrc(c)); in.M < nr {
				return spec.FP8ComposePlan{}, spec.Reject(spec.ErrStride, "m", in.M, fmt.Sprintf(">= n_%d = %d rows", r, nr))
			}
		}
	}
	if err := CheckFP8Width("current", in.Current, spec.MLABF16RowBytes); err != nil {
		return spec.FP8ComposePlan{}, err
	}
	if want, got := ExpectedCurrentRows(lay, c, in.Lens, in.M), in.Current.N(); got != want {
		return spec.FP8ComposePlan{}, spec.Reject(spec.ErrRowContract, "current", got, fmt.Sprintf("contract %q: %d rows", in.Contract, want))
	}
	for i := range in.Current.N() {
		if err := FirstNonFiniteRow656(i, in.Current.Row(i)); err != nil {
			if ie, ok := spec.AsInputError(err); ok {
				return spec.FP8ComposePlan{}, spec.Reject(ie.Err, "current"+strings.TrimPrefix(ie.Field, "x"), ie.Value, ie.Bound)
			}
			return spec.FP8ComposePlan{}, err
		}
	}
	if err := lim.CheckOutput("lens", total, spec.FP8RowBytes); err != nil {
		return spec.FP8ComposePlan{}, err
	}
	return spec.FP8ComposePlan{Lay: lay, Contract: c, Total: int(total)}, nil
}
