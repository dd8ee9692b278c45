package spec

// AdmissionRoundInput is one scheduling step: the adder's configuration and pool,
// the running batch, the request chunked in the previous round and the
// waiting queue in priority order (§A1.10).
type AdmissionRoundInput struct {
	// Config configures the adder.
	Config AdderConfig `json:"config"`
	// Pool is the device pool at the start of the round.
	Pool PoolState `json:"pool"`
	// Running are the decoding requests.
	Running []RunningReq `json:"running"`
	// Chunked is the request chunked in the previous round, or nil. Its
	// prefix is already locked by itself and it loads nothing back, so its
	// L1PrefixEvictable and HostHit must be 0 (NextChunked builds it).
	Chunked *Request `json:"chunked"`
	// Queue is the waiting queue in priority order.
	Queue []Request `json:"queue"`
	// L2LoadBackCapacity is the bench's fake L2 load-back capacity (A3.3);
	// nil is unlimited (a real scheduler).
	L2LoadBackCapacity *int64 `json:"l2_load_back_capacity,omitempty"`
}

// AdmissionRoundOutput is one round's batch, stop reason and budget snapshot (§A1.10).
type AdmissionRoundOutput struct {
	// Admitted is the batch in admission order (continuing chunk first).
	Admitted []AdmittedReq `json:"admitted"`
	// Stop says why the walk ended.
	Stop RoundStop `json:"stop"`
	// BatchIsFull is the scheduler's batch_is_full after the round.
	BatchIsFull bool `json:"batch_is_full"`
	// NextChunkedRID is the request to continue next round; omitted when none.
	NextChunkedRID string `json:"next_chunked_rid,omitempty"`
	// RemTotalTokens is rem_total_tokens after the round.
	RemTotalTokens float64 `json:"rem_total_tokens"`
	// CurRemTokens is cur_rem_tokens after the round.
	CurRemTokens int64 `json:"cur_rem_tokens"`
	// RemInputTokens is rem_input_tokens after the round.
	RemInputTokens int64 `json:"rem_input_tokens"`
	// RemChunkTokens is rem_chunk_tokens after the round; nil without chunking.
	RemChunkTokens *int64 `json:"rem_chunk_tokens"`
	// EffectiveCPExtendLimit is C1's limit; omitted without CP or when unlimited.
	EffectiveCPExtendLimit *int64 `json:"effective_cp_extend_limit,omitempty"`
	// CumExtend is Σ charged extend of the batch (CP only, else 0).
	CumExtend int64 `json:"cum_extend"`
	// CumCached is Σ prefix_len of the batch (CP only, else 0).
	CumCached int64 `json:"cum_cached"`
	// LogHitTokens is Σ prefix_len charged (upstream log_hit_tokens).
	LogHitTokens int64 `json:"log_hit_tokens"`
	// LogInputTokens is Σ page-ceiled charges (upstream log_input_tokens).
	LogInputTokens int64 `json:"log_input_tokens"`
	// L2Loaded is every successful load-back of the round, refused requests included (A3.4).
	L2Loaded int64 `json:"l2_loaded"`
	// Warnings are the single-oversized-request records of §A1.9 (one per rid).
	Warnings []string `json:"warnings,omitempty"`
	// Pool is the pool after the round (locks and load-backs applied).
	Pool PoolState `json:"pool"`
}
