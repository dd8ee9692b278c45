package ref

import (
	"fmt"
	"slices"
	"strings"
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
func ValidateFP8ComposeCurrent(lim Limits, in FP8ComposeCurrentInput) (FP8ComposePlan, error) {
	n, err := CheckFP8Pool("pool", in.Pool)
	if err != nil {
		return FP8ComposePlan{}, err
	}
	b := len(in.Lens)
	if len(in.PrefixSlots) != b {
		return FP8ComposePlan{}, Reject(ErrLengthMismatch, "prefix_slots", len(in.PrefixSlots), fmt.Sprintf("len(lens) = %d lists", b))
	}
	if len(in.CurrentSlots) != b {
		return FP8ComposePlan{}, Reject(ErrLengthMismatch, "current_slots", len(in.CurrentSlots), fmt.Sprintf("len(lens) = %d lists", b))
	}
	for i, l := range in.Lens {
		if l < 0 {
			return FP8ComposePlan{}, Reject(ErrNegative, Idx("lens", i), l, ">= 0")
		}
	}
	c := in.Contract
	switch c {
	case ContractLocalValid, ContractLocalComputePadded, ContractGlobalValid:
	default:
		return FP8ComposePlan{}, Reject(ErrBadEnum, "contract", string(c), `"local_valid", "local_compute_padded" or "global_valid"`)
	}
	var lay *Layout
	if in.Layout != nil {
		l, err := BuildLayoutAt(lim, "layout", *in.Layout)
		if err != nil {
			return FP8ComposePlan{}, err
		}
		if !slices.Equal(l.L, in.Lens) {
			return FP8ComposePlan{}, Reject(ErrLayoutMismatch, "layout.lens", fmt.Sprint(l.L), fmt.Sprintf("lens = %v", in.Lens))
		}
		lay = &l
	} else if c == ContractLocalComputePadded {
		return FP8ComposePlan{}, Reject(ErrRowContract, "contract", string(c), "a CP layout (the forward was not CP-split)")
	}
	if lay == nil || c == ContractGlobalValid {
		c = ContractGlobalValid
	}
	total := int64(0)
	for i, ps := range in.PrefixSlots {
		if int64(len(ps))%in.Pool.PageSize != 0 {
			return FP8ComposePlan{}, Reject(ErrPagePlan, Idx("prefix_slots", i), len(ps), fmt.Sprintf("a multiple of page_size = %d slots", in.Pool.PageSize))
		}
		for j, s := range ps {
			if s < 0 || s >= n {
				return FP8ComposePlan{}, Reject(ErrSlotOutOfRange, fmt.Sprintf("prefix_slots[%d][%d]", i, j), s, fmt.Sprintf("in [0, numSlots=%d)", n))
			}
		}
		total += int64(len(ps)) + int64(in.Lens[i])
	}
	for i, cs := range in.CurrentSlots {
		if len(cs) != in.Lens[i] {
			return FP8ComposePlan{}, Reject(ErrLengthMismatch, Idx("current_slots", i), len(cs), fmt.Sprintf("L_%d = %d slots", i, in.Lens[i]))
		}
		for j, s := range cs {
			if s < 0 || s >= n {
				return FP8ComposePlan{}, Reject(ErrSlotOutOfRange, fmt.Sprintf("current_slots[%d][%d]", i, j), s, fmt.Sprintf("in [0, numSlots=%d)", n))
			}
		}
	}
	if in.M < 0 {
		return FP8ComposePlan{}, Reject(ErrNegative, "m", in.M, ">= 0")
	}
	if in.M > 0 {
		if c == ContractGlobalValid {
			return FP8ComposePlan{}, Reject(ErrStride, "m", in.M, "0 for global valid rows")
		}
		for r := range lay.CP {
			if nr := lay.RankPayload(r, contractSrc(c)); in.M < nr {
				return FP8ComposePlan{}, Reject(ErrStride, "m", in.M, fmt.Sprintf(">= n_%d = %d rows", r, nr))
			}
		}
	}
	if err := CheckFP8Width("current", in.Current, MLABF16RowBytes); err != nil {
		return FP8ComposePlan{}, err
	}
	if want, got := ExpectedCurrentRows(lay, c, in.Lens, in.M), in.Current.N(); got != want {
		return FP8ComposePlan{}, Reject(ErrRowContract, "current", got, fmt.Sprintf("contract %q: %d rows", in.Contract, want))
	}
	for i := range in.Current.N() {
		if err := FirstNonFiniteRow656(i, in.Current.Row(i)); err != nil {
			if ie, ok := AsInputError(err); ok {
				return FP8ComposePlan{}, Reject(ie.Err, "current"+strings.TrimPrefix(ie.Field, "x"), ie.Value, ie.Bound)
			}
			return FP8ComposePlan{}, err
		}
	}
	if err := lim.CheckOutput("lens", total, FP8RowBytes); err != nil {
		return FP8ComposePlan{}, err
	}
	return FP8ComposePlan{Lay: lay, Contract: c, Total: int(total)}, nil
}
