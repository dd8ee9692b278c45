package spec

import (
	"encoding/json"
	"fmt"
)

// AddReqResult is the adder's answer for one request (§A1.2).
type AddReqResult uint8

const (
	// Continue: keep adding requests.
	Continue AddReqResult = iota
	// NoToken: memory exhausted; the scheduler marks batch_is_full.
	NoToken
	// Other: any other reason to stop adding (compute budget, CP gate, ...).
	Other
)

var addReqResultNames = [...]string{"CONTINUE", "NO_TOKEN", "OTHER"}

// String spells the result as A3.4 does: CONTINUE, NO_TOKEN or OTHER.
func (r AddReqResult) String() string {
	if int(r) < len(addReqResultNames) {
		return addReqResultNames[r]
	}
	return fmt.Sprintf("AddReqResult(%d)", uint8(r))
}

// MarshalJSON encodes the result by name, so fixtures read like the spec.
func (r AddReqResult) MarshalJSON() ([]byte, error) { return json.Marshal(r.String()) }

// UnmarshalJSON decodes a result name; an unknown name is ErrBadEnum.
func (r *AddReqResult) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	for i, n := range addReqResultNames {
		if n == s {
			*r = AddReqResult(i)
			return nil
		}
	}
	return Reject(ErrBadEnum, "result", s, "one of CONTINUE, NO_TOKEN, OTHER")
}

// StopDetail explains why a round stopped (§A1.10); the upstream result
// alone is too coarse for the bench (A3).
type StopDetail string

const (
	// DetailQueueExhausted: the queue ran out (result CONTINUE).
	DetailQueueExhausted StopDetail = "queue_exhausted"
	// DetailMaxRunning: running + admitted reached max_running_requests.
	DetailMaxRunning StopDetail = "max_running_requests"
	// DetailRemTotal: §A1.6 step 3/4: total tokens do not fit rem_total_tokens.
	DetailRemTotal StopDetail = "rem_total_tokens"
	// DetailRemInput: §A1.6 step 3/6: the input does not fit rem_input_tokens.
	DetailRemInput StopDetail = "rem_input_tokens"
	// DetailRemChunk: §A1.6 step 7: the chunk budget holds no whole page.
	DetailRemChunk StopDetail = "rem_chunk_tokens"
	// DetailTruncationAlign: §A1.6 step 7: the cut is below truncation_align_size.
	DetailTruncationAlign StopDetail = "truncation_align"
	// DetailBudgetTotal: budget_state after admission: rem_total_tokens <= 0.
	DetailBudgetTotal StopDetail = "budget_total"
	// DetailBudgetCurrent: budget_state after admission: cur_rem_tokens <= 0.
	DetailBudgetCurrent StopDetail = "budget_current"
	// DetailBudgetInput: budget_state after admission: rem_input_tokens <= 0.
	DetailBudgetInput StopDetail = "budget_input"
	// DetailBudgetChunk: budget_state after admission: rem_chunk_tokens <= 0.
	DetailBudgetChunk StopDetail = "budget_chunk"
	// DetailCPMaxRequests: CP gate C2: request count.
	DetailCPMaxRequests StopDetail = "cp_max_requests"
	// DetailCPMaxExtendTokens: CP gate C4: total extend tokens.
	DetailCPMaxExtendTokens StopDetail = "cp_max_total_extend_tokens"
	// DetailCPMaxCachedTokens: CP gate C3: total cached tokens after load-back.
	DetailCPMaxCachedTokens StopDetail = "cp_max_total_cached_tokens"
	// DetailCPMaxBufferSize: CP gate C5: buffer estimate.
	DetailCPMaxBufferSize StopDetail = "cp_max_buffer_size"
)

// PlannedEntry is one (prefix_len, run_extend) pair of a CP shared-KV
// batch: the estimator's input (§A1.9 C5, A2.2 EstimateReq).
type PlannedEntry struct {
	// PrefixLen is the prefix after L2 load-back, in tokens.
	PrefixLen int64 `json:"prefix_len"`
	// RunExtend is the extend run this forward, in tokens.
	RunExtend int64 `json:"run_extend"`
}

// BufferEstimator returns the temporary bytes one CP shared-KV forward over
// batch needs (A2's Estimate(batch).TotalBytes). It must be deterministic
// and must not retain batch (the fast twin reuses it).
type BufferEstimator func(batch []PlannedEntry) (int64, error)

// LinearBuffer is a JSON-expressible buffer model used by the catalog ops
// when no BufferEstimator is supplied: PerRequest + PerPrefixToken·prefix +
// PerExtendToken·extend, summed over the batch. It stands in for A2's
// estimator in fixtures; callers with A2 set CPAdmission.Estimator.
type LinearBuffer struct {
	// PerRequest is bytes per batch entry, in [0, 2^16].
	PerRequest int64 `json:"per_request"`
	// PerPrefixToken is bytes per prefix token, in [0, 2^16].
	PerPrefixToken int64 `json:"per_prefix_token"`
	// PerExtendToken is bytes per extend token, in [0, 2^16].
	PerExtendToken int64 `json:"per_extend_token"`
}

// Estimate is the LinearBuffer BufferEstimator; it fails with ErrOverflow
// rather than wrap.
func (m LinearBuffer) Estimate(batch []PlannedEntry) (int64, error) {
	var total int64
	for i, e := range batch {
		b := m.PerRequest + m.PerPrefixToken*e.PrefixLen + m.PerExtendToken*e.RunExtend // each term < 2^57
		if AddOverflows(total, b) {
			return 0, Reject(ErrOverflow, Idx("buffer_estimate.batch", i), b, "running total fits int64")
		}
		total += b
	}
	return total, nil
}

// CPAdmission enables the CP shared-KV bs>1 admission gates (§A1.9).
type CPAdmission struct {
	// MaxRequests caps the batch's request count; nil = unlimited.
	MaxRequests *int64 `json:"max_requests"`
	// MaxTotalExtendTokens is the user extend limit; nil defaults from the chunk budget (C1).
	MaxTotalExtendTokens *int64 `json:"max_total_extend_tokens"`
	// MaxTotalCachedTokens caps Σ prefix_len after load-back; nil = unlimited.
	MaxTotalCachedTokens *int64 `json:"max_total_cached_tokens"`
	// MaxBufferSizeBytes caps the batch's buffer estimate; nil = gate off.
	MaxBufferSizeBytes *int64 `json:"max_buffer_size_bytes"`
	// BufferModel is the linear stand-in estimator (kept for hand-written
	// fixtures); at most one of BufferModel and EstimatorContext is set, and
	// one of them (or Estimator) is required when MaxBufferSizeBytes is set.
	BufferModel *LinearBuffer `json:"buffer_model,omitempty"`
	// EstimatorContext selects A2's real estimator (EstimateBuffers) for
	// gate C5, from JSON: the block admission.bench builds from its
	// cp.estimator (A3.2). The fast twin prices it incrementally.
	EstimatorContext *EstimatorContext `json:"estimator,omitempty"`
	// Estimator is A2's estimator for Go callers (the bench); not encoded.
	Estimator BufferEstimator `json:"-"`
}

// AdderConfig configures one PrefillAdder (§A1.2).
type AdderConfig struct {
	// PageSize is the KV page size in tokens, >= 1.
	PageSize int64 `json:"page_size"`
	// NewTokenRatio scales running requests' decode reservation, in [0, 1].
	NewTokenRatio float64 `json:"new_token_ratio"`
	// MaxPrefillTokens is --max-prefill-tokens, >= 1.
	MaxPrefillTokens int64 `json:"max_prefill_tokens"`
	// ChunkedPrefillSize is --chunked-prefill-size; nil or <= 0 disables chunking.
	ChunkedPrefillSize *int64 `json:"chunked_prefill_size"`
	// MixedDecodeTokens is the mixed-chunk running batch size, >= 0.
	MixedDecodeTokens int64 `json:"mixed_decode_tokens"`
	// TruncationAlignSize aligns chunk cuts (deterministic inference); nil or >= 1.
	TruncationAlignSize *int64 `json:"truncation_align_size"`
	// HierarchicalCache (HiCache) changes batch_is_full on NoToken.
	HierarchicalCache bool `json:"hierarchical_cache"`
	// MaxRunningRequests caps running + admitted, >= 1 (round driver).
	MaxRunningRequests int64 `json:"max_running_requests"`
	// CP enables the CP shared-KV bs>1 gates; nil disables them.
	CP *CPAdmission `json:"cp"`
}

// PoolState is the device KV pool as the adder sees it.
type PoolState struct {
	// Available is the free KV slots in L1.
	Available int64 `json:"available"`
	// Evictable is the slots held by unlocked radix nodes.
	Evictable int64 `json:"evictable"`
}

// RunningReq is a request already decoding (its decode reservation, §A1.3).
type RunningReq struct {
	// MaxNewTokens is its sampling max_new_tokens, >= 0.
	MaxNewTokens int64 `json:"max_new_tokens"`
	// OutputLen is the tokens it generated so far, >= 0.
	OutputLen int64 `json:"output_len"`
}

// Request is a waiting request (§A1.2). ExtendLen = InputLen − prefix_len.
type Request struct {
	// RID identifies the request; unique within a round.
	RID string `json:"rid"`
	// InputLen is the fill length (origin input + output so far), >= 1.
	InputLen int64 `json:"input_len"`
	// OutputLen is tokens already generated (retracted requests), >= 0.
	OutputLen int64 `json:"output_len"`
	// MaxNewTokens is sampling max_new_tokens, >= 0.
	MaxNewTokens int64 `json:"max_new_tokens"`
	// IgnoreEOS is carried for completeness; the ignore-EOS path (§A1.8)
	// needs the prefix cache off, which this model never is.
	IgnoreEOS bool `json:"ignore_eos"`
	// L1Prefix is the device prefix-match length.
	L1Prefix int64 `json:"l1_prefix"`
	// L1PrefixEvictable is the part of L1Prefix that was evictable before this request locked it.
	L1PrefixEvictable int64 `json:"l1_prefix_evictable"`
	// HostHit is the L2 host-hit length beyond L1Prefix (load-back candidate).
	HostHit int64 `json:"host_hit"`
}

// AdmittedReq is one entry of the built batch (§A1.10).
type AdmittedReq struct {
	// RID is the request's id.
	RID string `json:"rid"`
	// PrefixLen is the prefix after L2 load-back.
	PrefixLen int64 `json:"prefix_len"`
	// LoadedFromL2 is the tokens loaded back from L2 for it (0 or its HostHit).
	LoadedFromL2 int64 `json:"loaded_from_l2"`
	// RunExtend is the tokens it runs this forward.
	RunExtend int64 `json:"run_extend"`
	// ChargedExtend is the page-ceiled extend charged to the budgets.
	ChargedExtend int64 `json:"charged_extend"`
	// Chunked is true when it did not run to its end this forward.
	Chunked bool `json:"chunked"`
}

// RoundStop says why the queue walk ended and at which request (§A1.10).
type RoundStop struct {
	// Result is the adder's (or driver's) answer.
	Result AddReqResult `json:"result"`
	// Detail names the budget or gate.
	Detail StopDetail `json:"detail"`
	// RID is the stopping request, "" when the queue ran out.
	RID string `json:"rid"`
	// Admitted is whether the stopping request was appended to the batch.
	Admitted bool `json:"admitted"`
}

// Budgets are an adder's construction-time budgets (§A1.4, C1).
type Budgets struct {
	// RemInput is rem_input_tokens, lifted by C1.
	RemInput int64
	// RemChunk is rem_chunk_tokens, nil when chunking is off.
	RemChunk *int64
	// EffLimit is C1's effective CP extend limit, nil when unlimited or without CP.
	EffLimit *int64
}
