package ref

import (
	"fmt"
	"math"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for transfer.prebuilt_slice (docs/spec/transfer.md §5): its sentinels, the lengths, each request and the slots.

// validatePrebuiltSlice checks in against docs/spec/transfer.md §5 and returns
// Σ extend_len. The length checks of every request come first and the scan
// of the copied slots last, so a twin that folds the scan into its copy pass
// reports the same first error.
func validatePrebuiltSlice(lim spec.Limits, in spec.TransferPrebuiltSliceInput) (int64, error) {
	total, err := CheckPrebuiltSliceLengths(lim, in)
	if err != nil {
		return 0, err
	}
	return total, CheckPrebuiltSlots(in)
}

// CheckPrebuiltSliceLengths is validatePrebuiltSlice without the scan of
// the copied slots: extend_num_tokens, then each request's lengths in batch
// order, then the total, then the output size against lim.
func CheckPrebuiltSliceLengths(lim spec.Limits, in spec.TransferPrebuiltSliceInput) (int64, error) {
	if in.ExtendNumTokens != nil && *in.ExtendNumTokens < 0 {
		return 0, spec.Reject(spec.ErrNegative, "extend_num_tokens", *in.ExtendNumTokens, ">= 0")
	}
	var sum int64
	for i, r := range in.Requests {
		if err := checkPrebuiltRequest(i, r); err != nil {
			return 0, err
		}
		// Unreachable while each extend_len <= len(row), but the sum is
		// checked rather than argued about.
		if spec.AddOverflows(sum, r.ExtendLen) {
			return 0, spec.Reject(spec.ErrOverflow, fieldOf(i, "extend_len"), r.ExtendLen,
				fmt.Sprintf("Σ extend_len through requests[%d] <= %d", i, int64(math.MaxInt64)))
		}
		sum += r.ExtendLen
		// Named at the request that crosses the total, as upstream's running
		// assert does, so the caller sees which request over-ran.
		if in.ExtendNumTokens != nil && sum > *in.ExtendNumTokens {
			return 0, spec.Reject(spec.ErrExceedsTotal, fieldOf(i, "extend_len"), r.ExtendLen,
				fmt.Sprintf("Σ extend_len through requests[%d] (%d) <= extend_num_tokens (%d)", i, sum, *in.ExtendNumTokens))
		}
	}
	if in.ExtendNumTokens != nil && sum != *in.ExtendNumTokens {
		return 0, spec.Reject(spec.ErrExceedsTotal, "extend_num_tokens", *in.ExtendNumTokens, fmt.Sprintf("== Σ extend_len (%d)", sum))
	}
	if err := lim.CheckOutput("extend_num_tokens", sum, 8); err != nil {
		return 0, err
	}
	return sum, nil
}

// checkPrebuiltRequest checks one request's lengths: signs, then the slice
// bounds, then the seq_len rule.
func checkPrebuiltRequest(i int, r spec.PrebuiltRequest) error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"prefix_len", r.PrefixLen}, {"extend_len", r.ExtendLen}, {"origin_len", r.OriginLen}, {"num_outputs", r.NumOutputs}} {
		if f.v < 0 {
			return spec.Reject(spec.ErrNegative, fieldOf(i, f.name), f.v, ">= 0")
		}
	}
	if spec.AddOverflows(r.PrefixLen, r.ExtendLen) {
		return spec.Reject(spec.ErrOverflow, fieldOf(i, "extend_len"), r.ExtendLen,
			fmt.Sprintf("<= %d - prefix_len (%d)", int64(math.MaxInt64), r.PrefixLen))
	}
	if end := r.PrefixLen + r.ExtendLen; end > int64(len(r.Row)) {
		return spec.Reject(spec.ErrRowTooShort, fieldOf(i, "row"), len(r.Row),
			fmt.Sprintf("len(row) >= prefix_len + extend_len (%d)", end))
	}
	decoded := max(0, r.NumOutputs-1)
	if spec.AddOverflows(r.OriginLen, decoded) {
		return spec.Reject(spec.ErrOverflow, fieldOf(i, "origin_len"), r.OriginLen,
			fmt.Sprintf("<= %d - max(0, num_outputs-1) (%d)", int64(math.MaxInt64), decoded))
	}
	// With no outputs yet, seq_len is origin_len, and the transferred range
	// must be exactly the uncached part of it.
	if r.NumOutputs == 0 && r.OriginLen-r.PrefixLen != r.ExtendLen {
		return spec.Reject(spec.ErrSeqLenMismatch, fieldOf(i, "origin_len"), r.OriginLen,
			fmt.Sprintf("seq_len = origin_len == prefix_len + extend_len (%d) when num_outputs == 0", r.PrefixLen+r.ExtendLen))
	}
	return nil
}

// CheckPrebuiltSlots rejects the first negative slot, in batch order, among
// the slots each request copies (row[prefix_len : prefix_len+extend_len]).
// Slots outside the copied range are never read, so they are not checked.
// Precondition: CheckPrebuiltSliceLengths accepted in.
func CheckPrebuiltSlots(in spec.TransferPrebuiltSliceInput) error {
	for i, r := range in.Requests {
		for k := r.PrefixLen; k < r.PrefixLen+r.ExtendLen; k++ {
			if r.Row[k] < 0 {
				return spec.Reject(spec.ErrNegative, spec.Idx(fieldOf(i, "row"), int(k)), r.Row[k], ">= 0 (a copied token slot)")
			}
		}
	}
	return nil
}

func fieldOf(i int, name string) string { return spec.Idx("requests", i) + "." + name }
