package ref

import (
	"fmt"
	"math"
)

// Sentinels of transfer.prebuilt_slice (docs/spec/transfer.md §5).
var (
	// ErrRowTooShort: prefix_len + extend_len is past the end of the
	// request's req_to_token row (docs/spec/transfer.md §5 "Bad input").
	ErrRowTooShort = NewSentinel("row_too_short", "prefix_len + extend_len exceeds the req_to_token row")
	// ErrExceedsTotal: the extend lengths do not add up to the pre-allocated
	// extend_num_tokens; upstream asserts "Exceeds total size" (docs/spec/transfer.md §5).
	ErrExceedsTotal = NewSentinel("exceeds_total", "extend lengths do not add up to extend_num_tokens")
	// ErrSeqLenMismatch: a request with no outputs yet has
	// seq_len - prefix_len != extend_len (docs/spec/transfer.md §5).
	ErrSeqLenMismatch = NewSentinel("seq_len_mismatch", "seq_len - prefix_len != extend_len for a request with no outputs")
)

// PrebuiltRequest is one request of the decode-side prebuilt batch
// (docs/spec/transfer.md §5): its req_to_token row and the lengths that say which part
// of the row arrived from prefill.
type PrebuiltRequest struct {
	// Row is req_to_token[req_pool_idx]: entry i is the device token slot of
	// token position i. Only the copied range must hold valid (>= 0) slots.
	Row []int64 `json:"row"`
	// PrefixLen is len(prefix_indices), the decode-side cached prefix.
	PrefixLen int64 `json:"prefix_len"`
	// ExtendLen is the length of the newly transferred suffix.
	ExtendLen int64 `json:"extend_len"`
	// OriginLen is len(origin_input_ids).
	OriginLen int64 `json:"origin_len"`
	// NumOutputs is len(output_ids).
	NumOutputs int64 `json:"num_outputs"`
}

// PrebuiltSliceInput is the input of transfer.prebuilt_slice (docs/spec/transfer.md §5).
type PrebuiltSliceInput struct {
	// Requests is the batch, in batch order.
	Requests []PrebuiltRequest `json:"requests"`
	// ExtendNumTokens is the pre-allocated total; when present, the extend
	// lengths must add up to exactly it.
	ExtendNumTokens *int64 `json:"extend_num_tokens,omitempty"`
}

// PrebuiltSliceOutput is the prebuilt batch's slot and length lists
// (docs/spec/transfer.md §5).
type PrebuiltSliceOutput struct {
	// OutCacheLoc is the concatenation, in batch order, of each request's
	// row[prefix_len : prefix_len+extend_len].
	OutCacheLoc []int64 `json:"out_cache_loc"`
	// SeqLens[i] is origin_len + max(0, num_outputs-1) of request i.
	SeqLens []int64 `json:"seq_lens"`
	// PrefixLens[i] is request i's prefix_len.
	PrefixLens []int64 `json:"prefix_lens"`
	// ExtendLens[i] is request i's extend_len.
	ExtendLens []int64 `json:"extend_lens"`
	// ExtendNumTokens is Σ extend_len, the length of OutCacheLoc.
	ExtendNumTokens int64 `json:"extend_num_tokens"`
}

// ValidatePrebuiltSlice checks in against docs/spec/transfer.md §5 and returns
// Σ extend_len. The length checks of every request come first and the scan
// of the copied slots last, so a twin that folds the scan into its copy pass
// reports the same first error.
func ValidatePrebuiltSlice(lim Limits, in PrebuiltSliceInput) (int64, error) {
	total, err := CheckPrebuiltSliceLengths(lim, in)
	if err != nil {
		return 0, err
	}
	return total, CheckPrebuiltSlots(in)
}

// CheckPrebuiltSliceLengths is ValidatePrebuiltSlice without the scan of
// the copied slots: extend_num_tokens, then each request's lengths in batch
// order, then the total, then the output size against lim.
func CheckPrebuiltSliceLengths(lim Limits, in PrebuiltSliceInput) (int64, error) {
	if in.ExtendNumTokens != nil && *in.ExtendNumTokens < 0 {
		return 0, Reject(ErrNegative, "extend_num_tokens", *in.ExtendNumTokens, ">= 0")
	}
	var sum int64
	for i, r := range in.Requests {
		if err := checkPrebuiltRequest(i, r); err != nil {
			return 0, err
		}
		// Unreachable while each extend_len <= len(row), but the sum is
		// checked rather than argued about.
		if AddOverflows(sum, r.ExtendLen) {
			return 0, Reject(ErrOverflow, fieldOf(i, "extend_len"), r.ExtendLen,
				fmt.Sprintf("Σ extend_len through requests[%d] <= %d", i, int64(math.MaxInt64)))
		}
		sum += r.ExtendLen
		// Named at the request that crosses the total, as upstream's running
		// assert does, so the caller sees which request over-ran.
		if in.ExtendNumTokens != nil && sum > *in.ExtendNumTokens {
			return 0, Reject(ErrExceedsTotal, fieldOf(i, "extend_len"), r.ExtendLen,
				fmt.Sprintf("Σ extend_len through requests[%d] (%d) <= extend_num_tokens (%d)", i, sum, *in.ExtendNumTokens))
		}
	}
	if in.ExtendNumTokens != nil && sum != *in.ExtendNumTokens {
		return 0, Reject(ErrExceedsTotal, "extend_num_tokens", *in.ExtendNumTokens, fmt.Sprintf("== Σ extend_len (%d)", sum))
	}
	if err := lim.CheckOutput("extend_num_tokens", sum, 8); err != nil {
		return 0, err
	}
	return sum, nil
}

// checkPrebuiltRequest checks one request's lengths: signs, then the slice
// bounds, then the seq_len rule.
func checkPrebuiltRequest(i int, r PrebuiltRequest) error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"prefix_len", r.PrefixLen}, {"extend_len", r.ExtendLen}, {"origin_len", r.OriginLen}, {"num_outputs", r.NumOutputs}} {
		if f.v < 0 {
			return Reject(ErrNegative, fieldOf(i, f.name), f.v, ">= 0")
		}
	}
	if AddOverflows(r.PrefixLen, r.ExtendLen) {
		return Reject(ErrOverflow, fieldOf(i, "extend_len"), r.ExtendLen,
			fmt.Sprintf("<= %d - prefix_len (%d)", int64(math.MaxInt64), r.PrefixLen))
	}
	if end := r.PrefixLen + r.ExtendLen; end > int64(len(r.Row)) {
		return Reject(ErrRowTooShort, fieldOf(i, "row"), len(r.Row),
			fmt.Sprintf("len(row) >= prefix_len + extend_len (%d)", end))
	}
	decoded := max(0, r.NumOutputs-1)
	if AddOverflows(r.OriginLen, decoded) {
		return Reject(ErrOverflow, fieldOf(i, "origin_len"), r.OriginLen,
			fmt.Sprintf("<= %d - max(0, num_outputs-1) (%d)", int64(math.MaxInt64), decoded))
	}
	// With no outputs yet, seq_len is origin_len, and the transferred range
	// must be exactly the uncached part of it.
	if r.NumOutputs == 0 && r.OriginLen-r.PrefixLen != r.ExtendLen {
		return Reject(ErrSeqLenMismatch, fieldOf(i, "origin_len"), r.OriginLen,
			fmt.Sprintf("seq_len = origin_len == prefix_len + extend_len (%d) when num_outputs == 0", r.PrefixLen+r.ExtendLen))
	}
	return nil
}

// CheckPrebuiltSlots rejects the first negative slot, in batch order, among
// the slots each request copies (row[prefix_len : prefix_len+extend_len]).
// Slots outside the copied range are never read, so they are not checked.
// Precondition: CheckPrebuiltSliceLengths accepted in.
func CheckPrebuiltSlots(in PrebuiltSliceInput) error {
	for i, r := range in.Requests {
		for k := r.PrefixLen; k < r.PrefixLen+r.ExtendLen; k++ {
			if r.Row[k] < 0 {
				return Reject(ErrNegative, Idx(fieldOf(i, "row"), int(k)), r.Row[k], ">= 0 (a copied token slot)")
			}
		}
	}
	return nil
}

func fieldOf(i int, name string) string { return Idx("requests", i) + "." + name }

// PrebuiltSlice builds the decode-side prebuilt batch (docs/spec/transfer.md §5): for
// each request in batch order it appends the newly transferred suffix
// row[prefix_len : prefix_len+extend_len] to out_cache_loc. Slicing from
// prefix_len, not 0, is the fix of the seed's bug: with a decode-side cache
// hit the row starts with the cached prefix's slots.
func PrebuiltSlice(lim Limits, in PrebuiltSliceInput) (PrebuiltSliceOutput, error) {
	total, err := ValidatePrebuiltSlice(lim, in)
	if err != nil {
		return PrebuiltSliceOutput{}, err
	}
	out := PrebuiltSliceOutput{OutCacheLoc: []int64{}, SeqLens: []int64{}, PrefixLens: []int64{}, ExtendLens: []int64{}, ExtendNumTokens: total}
	for _, r := range in.Requests {
		out.OutCacheLoc = append(out.OutCacheLoc, r.Row[r.PrefixLen:r.PrefixLen+r.ExtendLen]...)
		out.SeqLens = append(out.SeqLens, r.OriginLen+max(0, r.NumOutputs-1))
		out.PrefixLens = append(out.PrefixLens, r.PrefixLen)
		out.ExtendLens = append(out.ExtendLens, r.ExtendLen)
	}
	return out, nil
}
