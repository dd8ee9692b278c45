package spec

const (
	// DefaultEstimatorPageSize is the CP shared-KV page size.
	DefaultEstimatorPageSize = 64
	// MQALogitsElemBytes is one fp32 logit.
	MQALogitsElemBytes = 4
	// BufferGateDetail is the stop detail of a batch the gate refuses (A1.9 C5).
	BufferGateDetail = "cp_max_buffer_size"
)

// EstimateReq is one request of the batch (A2.2): its prefix after
// load-back and the extend this forward runs.
type EstimateReq struct {
	// PrefixLen is P_i, tokens already in the KV cache, >= 0.
	PrefixLen int64 `json:"prefix_len"`
	// ExtendLen is E_i, tokens computed this forward, >= 0.
	ExtendLen int64 `json:"extend_len"`
}

// EstimatorContext is the static information the estimator reads (A2.2).
// The MQA chunk caps reuse mqa.chunk_rows' MQAChunkConfig (A2.2 calls it
// MQAChunkCap), validated here with A2.7's stricter rules.
type EstimatorContext struct {
	// PageSize is the KV page size in tokens, >= 1.
	PageSize int64 `json:"page_size"`
	// CPSize is the attention CP size c, in [1, MaxCP].
	CPSize int64 `json:"cp_size"`
	// MLARowBytes is one materialized MLA KV row, >= 1 (default 656).
	MLARowBytes int64 `json:"mla_row_bytes"`
	// IndexRowBytes is one materialized NSA index-K row, >= 1 (default 132).
	IndexRowBytes int64 `json:"index_row_bytes"`
	// VocabSize is the logits width, >= 1.
	VocabSize int64 `json:"vocab_size"`
	// LogitRowsPerReq is the logits rows kept per request, >= 0 (default 1).
	LogitRowsPerReq int64 `json:"logit_rows_per_req"`
	// TransferEnabled turns on the PD per-layer transfer descriptors.
	TransferEnabled bool `json:"transfer_enabled"`
	// TransferLayers is the number of KV buffers transferred (MTP included), >= 0.
	TransferLayers int64 `json:"transfer_layers"`
	// DescriptorBytes is one transfer descriptor, >= 1 (default 24).
	DescriptorBytes int64 `json:"descriptor_bytes"`
	// PageDescriptorBytes is one row-scoped page descriptor, >= 1 (default 16).
	PageDescriptorBytes int64 `json:"page_descriptor_bytes"`
	// RowRemapBytes is one row-aware loc remap entry, >= 1 (default 8).
	RowRemapBytes int64 `json:"row_remap_bytes"`
	// Chunk holds the MQA-logits chunk caps, at most one set.
	Chunk MQAChunkConfig `json:"chunk"`
	// BsGt1L1PrefetchEnabled adds the next layer's dense buffers (A2.4).
	BsGt1L1PrefetchEnabled bool `json:"bs_gt1_l1_prefetch_enabled"`
}

// RankMQA is one CP rank's fused MQA-logits matrix (A2.3).
type RankMQA struct {
	// Rank is r.
	Rank int64 `json:"rank"`
	// QRows is Q_r, the query rows of r's two zigzag segments over the batch.
	QRows int64 `json:"q_rows"`
	// KRows is K_r, each request's prefix plus its extend up to the end of r's later segment.
	KRows int64 `json:"k_rows"`
	// chunkRows is R_r, the query rows of one chunk under the cap.
	ChunkRows int64 `json:"chunk_rows"`
	// PeakBytes is R_r·K_r·4.
	PeakBytes int64 `json:"peak_bytes"`
}

// Estimate is the estimator's result (A2.4), every term in bytes.
type Estimate struct {
	// MLAMaterializeBytes is rows·MLARowBytes.
	MLAMaterializeBytes int64 `json:"mla_materialize_bytes"`
	// IndexMaterializeBytes is rows·IndexRowBytes.
	IndexMaterializeBytes int64 `json:"index_materialize_bytes"`
	// RemapMetadataBytes is Σ (pages_i·PageDescriptorBytes + ctx_i·RowRemapBytes).
	RemapMetadataBytes int64 `json:"remap_metadata_bytes"`
	// TransferDescriptorBytes is Σ ceil(E_i/PageSize)·TransferLayers·DescriptorBytes, or 0.
	TransferDescriptorBytes int64 `json:"transfer_descriptor_bytes"`
	// LogitsWindowBytes is n_reqs·LogitRowsPerReq·VocabSize·4.
	LogitsWindowBytes int64 `json:"logits_window_bytes"`
	// MQALogitsPeakBytes is the worst rank's PeakBytes.
	MQALogitsPeakBytes int64 `json:"mqa_logits_peak_bytes"`
	// PrefetchBytes is MLA + index materialization with L1 prefetch on, else 0.
	PrefetchBytes int64 `json:"prefetch_bytes"`
	// LayerForwardPeakBytes is MLA + index + MQA.
	LayerForwardPeakBytes int64 `json:"layer_forward_peak_bytes"`
	// PerForwardBytes is remap + transfer + logits window.
	PerForwardBytes int64 `json:"per_forward_bytes"`
	// TotalBytes is per-forward + layer-forward peak + prefetch.
	TotalBytes int64 `json:"total_bytes"`
	// WorstRank is the smallest rank attaining MQALogitsPeakBytes.
	WorstRank int64 `json:"worst_rank"`
	// PerRank lists every rank's matrix, ascending; len == CPSize.
	PerRank []RankMQA `json:"per_rank"`
}

// BufferGate is the --cp-shared-kv-prefill-max-buffer-size decision on
// the last request of a batch (A1.9 C5): the batch before it is already
// admitted, and it may join unless the estimate of the whole batch exceeds
// the limit. A batch of one is never refused (no deadlock).
type BufferGate struct {
	// MaxBufferSizeBytes is the limit, >= 1.
	MaxBufferSizeBytes int64 `json:"max_buffer_size_bytes"`
	// Admit says the last request may join the batch.
	Admit bool `json:"admit"`
	// AloneOverLimit marks a single request whose own estimate exceeds the
	// limit, admitted alone (A1.9 logs one WARNING for it).
	AloneOverLimit bool `json:"alone_over_limit"`
	// Detail is BufferGateDetail when the request is refused; omitted otherwise.
	Detail string `json:"detail,omitempty"`
}

// AdmissionEstimateInput is the input of admission.estimate.
type AdmissionEstimateInput struct {
	// Context is the estimator's static information.
	Context EstimatorContext `json:"context"`
	// Requests is the batch in admission order; the last one is the
	// gate's candidate. May be empty.
	Requests []EstimateReq `json:"requests"`
	// MaxBufferSizeBytes, when set, applies the gate; nil turns it off.
	MaxBufferSizeBytes *int64 `json:"max_buffer_size_bytes,omitempty"`
}

// AdmissionEstimateOutput is the output of admission.estimate.
type AdmissionEstimateOutput struct {
	// Estimate is the batch's buffer estimate.
	Estimate Estimate `json:"estimate"`
	// Gate is the max-buffer-size decision; omitted when no limit is set.
	Gate *BufferGate `json:"gate,omitempty"`
}

// The operands each summed term reports on overflow: its formula, which
// does not depend on where the running sum first overflowed.
const (
	OperandsRows      = "Σ ceil((prefix_len+extend_len)/page_size)·page_size"
	OperandsMLA       = "rows·mla_row_bytes"
	OperandsIndex     = "rows·index_row_bytes"
	OperandsRemap     = "Σ (pages·page_descriptor_bytes + ctx·row_remap_bytes)"
	OperandsTransfer  = "Σ ceil(extend_len/page_size)·transfer_layers·descriptor_bytes"
	OperandsLogits    = "n_reqs·logit_rows_per_req·vocab_size·4"
	OperandsPrefetch  = "mla + index materialization"
	OperandsLayerPeak = "mla + index + mqa"
	OperandsPerFwd    = "remap + transfer + logits window"
	OperandsTotal     = "per-forward + layer-forward peak + prefetch"
)
