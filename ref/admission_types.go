package ref

// Shared types, validation and arithmetic of the prefill adder and its round
// driver (docs/spec/admission-serving.md §A1). Both twins take and return these types
// and call ValidateAdmissionRound, so they reject bad input with byte-equal errors.

import (
	"encoding/json"
	"fmt"
	"strings"
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

// Stop details (§A1.10).
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
	// detailNone: no stop (Continue).
	detailNone StopDetail = ""
)

const (
	// admissionClip is SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION (§A1.3).
	admissionClip = 4096
	// admissionLoadBackThreshold is hiradix_cache's load_back_threshold (§A1.6 step 5).
	admissionLoadBackThreshold = 10
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

// CeilPage is ceil(x/ps)·ps for x >= 0 (§0).
func CeilPage(x, ps int64) int64 { return (x + ps - 1) / ps * ps }

// FloorPage is floor(x/ps)·ps with floor (Python //) division, defined for
// negative x too (§0): FloorPage(-24, 64) = -64.
func FloorPage(x, ps int64) int64 {
	q := x / ps
	if x%ps != 0 && x < 0 {
		q--
	}
	return q * ps
}

// RunningOffset is min(MaxNewTokens − OutputLen, CLIP) · ratio (§A1.3).
func RunningOffset(r RunningReq, ratio float64) float64 {
	return float64(min(r.MaxNewTokens-r.OutputLen, admissionClip)) * ratio
}

// ChargeMaxNew is min(MaxNewTokens, CLIP): an admitted request's full decode reservation (§A1.5).
func ChargeMaxNew(maxNew int64) int64 { return min(maxNew, admissionClip) }

// TotalTokens is §A1.6 step 2's ExtendLen + min(max(MaxNewTokens−OutputLen, 0), CLIP).
func TotalTokens(extend int64, r *Request) int64 {
	return extend + min(max(r.MaxNewTokens-r.OutputLen, 0), admissionClip)
}

// LoadBackOK is §A1.6 step 5's all-or-nothing rule: hit >= 10, within the
// pool and (bench) within the fake L2 capacity (nil = unlimited).
func LoadBackOK(hit int64, pool PoolState, l2Left *int64) bool {
	return hit >= admissionLoadBackThreshold && hit <= pool.Available+pool.Evictable && (l2Left == nil || hit <= *l2Left)
}

// ApplyLoadBack takes hit slots from Available first and evicts the rest (§A1.6 step 5).
func ApplyLoadBack(pool *PoolState, hit int64) {
	take := min(hit, pool.Available)
	pool.Available -= take
	pool.Evictable -= hit - take
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

// InitialBudgets computes §A1.4 and C1 from a validated config.
func InitialBudgets(cfg AdderConfig) Budgets {
	b := Budgets{RemInput: cfg.MaxPrefillTokens - cfg.MixedDecodeTokens}
	if c := cfg.ChunkedPrefillSize; c != nil && *c > 0 {
		v := *c - cfg.MixedDecodeTokens
		b.RemChunk = &v
	}
	if cfg.CP == nil {
		return b
	}
	user := cfg.CP.MaxTotalExtendTokens
	switch {
	case user == nil && b.RemChunk != nil:
		v := *b.RemChunk
		b.EffLimit = &v
	case user != nil && b.RemChunk == nil:
		v := *user
		b.EffLimit = &v
	case user != nil:
		v := min(*user, *b.RemChunk)
		b.EffLimit = &v
	}
	if b.EffLimit != nil {
		b.RemInput = max(b.RemInput, *b.EffLimit)
	}
	return b
}

// BufferEstimatorOf returns the estimator gate C5 uses: cp.Estimator, else
// A2's estimator over cp.EstimatorContext, else the linear model, else nil
// (gate off).
func BufferEstimatorOf(cp *CPAdmission) BufferEstimator {
	switch {
	case cp == nil || cp.MaxBufferSizeBytes == nil:
		return nil
	case cp.Estimator != nil:
		return cp.Estimator
	case cp.EstimatorContext != nil:
		return a2Estimator(*cp.EstimatorContext)
	case cp.BufferModel != nil:
		return cp.BufferModel.Estimate
	}
	return nil
}

// SingleOversizedWarning is §A1.9's WARNING record for a lone request whose
// own estimate exceeds the max buffer size.
func SingleOversizedWarning(rid string, estimate, maxBytes int64) string {
	return fmt.Sprintf("cp shared-kv prefill: single request rid=%s estimate=%d bytes exceeds max-buffer-size=%d; admitting alone", rid, estimate, maxBytes)
}

// a2Estimator adapts A2's estimator to gate C5: the batch's
// EstimateBuffers(ctx, batch).TotalBytes. ctx must be valid
// (CheckEstimatorContext); an overflow is EstimateBuffers' error.
func a2Estimator(ctx EstimatorContext) BufferEstimator {
	return func(batch []PlannedEntry) (int64, error) {
		reqs := make([]EstimateReq, len(batch))
		for i, e := range batch {
			reqs[i] = EstimateReq{PrefixLen: e.PrefixLen, ExtendLen: e.RunExtend}
		}
		est, err := EstimateBuffers(ctx, reqs)
		return est.TotalBytes, err
	}
}

// reroot returns err with its JSON path's prefix from replaced by to, so a
// nested validator's error names the field where the caller's input holds
// it. Errors that are not input errors, or whose path lacks the prefix,
// are returned as they are.
func reroot(err error, from, to string) error {
	ie, ok := AsInputError(err)
	if !ok || !strings.HasPrefix(ie.Field, from) {
		return err
	}
	return Reject(ie.Err, to+strings.TrimPrefix(ie.Field, from), ie.Value, ie.Bound)
}

// NextChunked is the request to pass as AdmissionRoundInput.Chunked next round:
// the round's chunked entry (new or continuing) with its prefix grown by
// the tokens it ran, nothing to load back and its own lock. It returns nil
// when the round left no request chunked. in must be the round's input and
// out its accepted result.
func NextChunked(in AdmissionRoundInput, out AdmissionRoundOutput) *Request {
	if out.NextChunkedRID == "" {
		return nil
	}
	var src *Request
	if in.Chunked != nil && in.Chunked.RID == out.NextChunkedRID {
		src = in.Chunked
	}
	for i := range in.Queue {
		if in.Queue[i].RID == out.NextChunkedRID {
			src = &in.Queue[i]
		}
	}
	if src == nil {
		return nil
	}
	next := *src
	for _, a := range out.Admitted {
		if a.RID == out.NextChunkedRID {
			next.L1Prefix, next.L1PrefixEvictable, next.HostHit = a.PrefixLen+a.RunExtend, 0, 0
		}
	}
	return &next // a continuing chunk that could not run carries over unchanged
}
