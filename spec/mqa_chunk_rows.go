package spec

// MQAChunkConfig holds the two chunk-cap knobs (§8.1); at most one is set.
type MQAChunkConfig struct {
	// MaxRows is SGLANG_NSA_MQA_LOGITS_CHUNK_MAX_ROWS, a hard row cap (> 0), or nil.
	MaxRows *int64 `json:"max_rows,omitempty"`
	// MaxGB is SGLANG_NSA_MQA_LOGITS_CHUNK_MAX_GB, a cap in GiB on one fp32
	// chunk (finite, > 0), or nil.
	MaxGB *float64 `json:"max_gb,omitempty"`
}

// MQARuntimeBudget is the runtime's memory view (§8.2 rule 4), injected:
// the free memory sampled once at init and the device's total memory, bytes.
type MQARuntimeBudget struct {
	// FreeAtInit is the free device memory sampled once at init, >= 0.
	FreeAtInit int64 `json:"free_at_init"`
	// TotalMem is the device's total memory, >= 0.
	TotalMem int64 `json:"total_mem"`
}

// MQALogitsShape is one logits matrix: q query rows by k K rows.
type MQALogitsShape struct {
	// Q is the number of query rows, in [0, 2^31).
	Q int64 `json:"q"`
	// K is the number of K rows, in [0, 2^31).
	K int64 `json:"k"`
}

// MQAPeakBatch is a batch for the §8.4 peak: its layout and the prefix
// length P_i of every request. Layout.CP == 0 is a non-CP batch (Lens give
// L_i; Granule must be 0).
type MQAPeakBatch struct {
	// Layout names the CP layout, or a non-CP batch when CP is 0.
	Layout LayoutSpec `json:"layout"`
	// Prefix are the prefix lengths P_i, one per request, >= 0.
	Prefix []int64 `json:"prefix"`
}

// MQAChunkRowsInput is the input of mqa.chunk_rows.
type MQAChunkRowsInput struct {
	// Config holds the chunk caps.
	Config MQAChunkConfig `json:"config"`
	// Runtime, when set, selects the runtime rule with this budget; nil is
	// the scheduler estimator (§8.2 rule 5), which never reads device memory.
	Runtime *MQARuntimeBudget `json:"runtime,omitempty"`
	// Shapes are logits shapes to plan directly.
	Shapes []MQALogitsShape `json:"shapes,omitempty"`
	// Batch, when set, is planned per CP rank (§8.4).
	Batch *MQAPeakBatch `json:"batch,omitempty"`
}

// MQAChunkPlan is how one logits matrix is chunked.
type MQAChunkPlan struct {
	// Q and K are the matrix's query and K rows.
	Q int64 `json:"q"`
	// K is the matrix's K rows.
	K int64 `json:"k"`
	// Rows is chunkRows(Q, K): the query rows of one chunk (0 when Q is 0).
	Rows int64 `json:"rows"`
	// Chunks is ceil(Q / Rows), 0 when Q is 0.
	Chunks int64 `json:"chunks"`
	// PeakBytes is 4·Rows·K, the fp32 chunk's size.
	PeakBytes uint64 `json:"peak_bytes"`
}

// MQAChunkRowsOutput is the output of mqa.chunk_rows.
type MQAChunkRowsOutput struct {
	// Shapes plans each input shape, in order; never nil.
	Shapes []MQAChunkPlan `json:"shapes"`
	// Ranks plans the batch per CP rank (one entry, the whole batch, for a
	// non-CP batch; empty without a batch); never nil.
	Ranks []MQAChunkPlan `json:"ranks"`
	// AdmissionPeak is max over Ranks of PeakBytes (0 without a batch).
	AdmissionPeak uint64 `json:"admission_peak"`
}
