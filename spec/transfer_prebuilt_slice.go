package spec

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

// TransferPrebuiltSliceInput is the input of transfer.prebuilt_slice (docs/spec/transfer.md §5).
type TransferPrebuiltSliceInput struct {
	// Requests is the batch, in batch order.
	Requests []PrebuiltRequest `json:"requests"`
	// ExtendNumTokens is the pre-allocated total; when present, the extend
	// lengths must add up to exactly it.
	ExtendNumTokens *int64 `json:"extend_num_tokens,omitempty"`
}

// TransferPrebuiltSliceOutput is the prebuilt batch's slot and length lists
// (docs/spec/transfer.md §5).
type TransferPrebuiltSliceOutput struct {
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
