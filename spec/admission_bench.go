package spec

import (
	"encoding/json"
	"math"
	"regexp"
	"strconv"
)

// Termination values (A3.3).
const (
	// BenchDrained: the queue emptied and no chunk is left.
	BenchDrained = "drained"
	// BenchStalled: a round admitted nothing and carried no chunk.
	BenchStalled = "stalled"
	// BenchMaxRounds: max_rounds rounds ran with requests left.
	BenchMaxRounds = "max_rounds"
)

// ByteSize is a byte count written as a JSON integer or as a string: an
// integer, or a decimal number followed by KB, MB, GB, KiB, MiB or GiB (all
// binary, 1GB = 2^30; truncated to an integer), as A1.9's
// --cp-shared-kv-prefill-max-buffer-size. It is parsed by Bytes during
// validation, so a bad value is reported with its JSON path.
type ByteSize string

// UnmarshalJSON keeps a JSON string's text or a JSON number's literal.
func (b *ByteSize) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		*b = ByteSize(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(data, &n); err != nil {
		return err
	}
	*b = ByteSize(n.String())
	return nil
}

// MarshalJSON writes a plain integer as a number and anything else as a string.
func (b ByteSize) MarshalJSON() ([]byte, error) {
	if _, err := strconv.ParseInt(string(b), 10, 64); err == nil {
		return []byte(b), nil
	}
	return json.Marshal(string(b))
}

var byteSizeRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)(KB|MB|GB|KiB|MiB|GiB)$`)

// byteSizeUnit is a size suffix's multiplier: all binary, so 1GB = 2^30 (A1.9).
func byteSizeUnit(suffix string) float64 {
	switch suffix {
	case "KB", "KiB":
		return 1 << 10
	case "MB", "MiB":
		return 1 << 20
	}
	return 1 << 30 // GB, GiB: the only other suffixes byteSizeRE admits
}

// Bytes parses the size (A1.9): the result is >= 1, else ErrBenchConfig
// naming field.
func (b ByteSize) Bytes(field string) (int64, error) {
	const want = "bytes or <n>{KB,MB,GB,KiB,MiB,GiB}, >= 1"
	s := string(b)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 1 {
			return 0, Reject(ErrBenchConfig, field, n, want)
		}
		return n, nil
	}
	m := byteSizeRE.FindStringSubmatch(s)
	if m == nil {
		return 0, Reject(ErrBenchConfig, field, s, want)
	}
	f, err := strconv.ParseFloat(m[1], 64)
	v := f * byteSizeUnit(m[2])
	if err != nil || v >= math.MaxInt64 || int64(v) < 1 {
		return 0, Reject(ErrBenchConfig, field, s, want)
	}
	return int64(v), nil
}

// BenchEstimator is A3.2's cp.estimator block: A2.2's context without the
// page and CP sizes (taken from the bench's top level) and without the
// chunk caps (taken from mqa_chunk). Omitted numbers default as in A2.2.
type BenchEstimator struct {
	// MLARowBytes defaults to 656.
	MLARowBytes *int64 `json:"mla_row_bytes,omitempty"`
	// IndexRowBytes defaults to 132.
	IndexRowBytes *int64 `json:"index_row_bytes,omitempty"`
	// VocabSize defaults to 154880.
	VocabSize *int64 `json:"vocab_size,omitempty"`
	// LogitRowsPerReq defaults to 1.
	LogitRowsPerReq *int64 `json:"logit_rows_per_req,omitempty"`
	// TransferEnabled turns on the transfer descriptors.
	TransferEnabled bool `json:"transfer_enabled"`
	// TransferLayers is the transferred KV buffers (0 when omitted).
	TransferLayers int64 `json:"transfer_layers"`
	// DescriptorBytes defaults to 24.
	DescriptorBytes *int64 `json:"descriptor_bytes,omitempty"`
	// PageDescriptorBytes defaults to 16.
	PageDescriptorBytes *int64 `json:"page_descriptor_bytes,omitempty"`
	// RowRemapBytes defaults to 8.
	RowRemapBytes *int64 `json:"row_remap_bytes,omitempty"`
	// BsGt1L1PrefetchEnabled adds the prefetch term.
	BsGt1L1PrefetchEnabled bool `json:"bs_gt1_l1_prefetch_enabled"`
}

// BenchCP is A3.2's cp block (A1.9's knobs; nil = unlimited / gate off).
type BenchCP struct {
	// MaxRequests is --cp-max-requests.
	MaxRequests *int64 `json:"max_requests"`
	// MaxTotalExtendTokens is --cp-max-total-extend-tokens.
	MaxTotalExtendTokens *int64 `json:"max_total_extend_tokens"`
	// MaxTotalCachedTokens is --cp-max-total-cached-tokens.
	MaxTotalCachedTokens *int64 `json:"max_total_cached_tokens"`
	// MaxBufferSize is --cp-max-buffer-size; nil turns the buffer gate off.
	MaxBufferSize *ByteSize `json:"max_buffer_size"`
	// Estimator configures A2's estimator; nil is all defaults.
	Estimator *BenchEstimator `json:"estimator"`
}

// BenchRequest is one bench request (A3.2).
type BenchRequest struct {
	// RID identifies the request; unique in the bench.
	RID string `json:"rid"`
	// L1CachedTokens is the device prefix hit.
	L1CachedTokens int64 `json:"l1_cached_tokens"`
	// L2HostHitTokens is the host hit beyond it (a load-back candidate).
	L2HostHitTokens int64 `json:"l2_host_hit_tokens"`
	// ExtendTokens is the tokens to compute without any L2 hit, >= 1.
	ExtendTokens int64 `json:"extend_tokens"`
	// MaxNewTokens is sampling max_new_tokens, >= 0.
	MaxNewTokens int64 `json:"max_new_tokens"`
}

// AdmissionBenchInput is admission.bench's input (A3.2).
type AdmissionBenchInput struct {
	// PageSize is the KV page size, >= 1.
	PageSize int64 `json:"page_size"`
	// CPSize is the attention CP size (the estimator's c), in [1, MaxCP].
	CPSize int64 `json:"cp_size"`
	// MaxPrefillTokens is --max-prefill-tokens, >= 1.
	MaxPrefillTokens int64 `json:"max_prefill_tokens"`
	// ChunkedPrefillSize is --chunked-prefill-size; nil or <= 0 is off.
	ChunkedPrefillSize *int64 `json:"chunked_prefill_size"`
	// NewTokenRatio is in [0, 1] (no running batch: it scales nothing).
	NewTokenRatio float64 `json:"new_token_ratio"`
	// MaxRunningRequests is >= 1.
	MaxRunningRequests int64 `json:"max_running_requests"`
	// HierarchicalCache changes batch_is_full on NoToken.
	HierarchicalCache bool `json:"hierarchical_cache"`
	// FakeL1 is the device pool every round starts from.
	FakeL1 PoolState `json:"fake_l1"`
	// FakeL2LoadBackCapacity is every round's fresh L2 load-back capacity, >= 0.
	FakeL2LoadBackCapacity int64 `json:"fake_l2_load_back_capacity"`
	// CP enables the CP shared-KV gates; nil disables them.
	CP *BenchCP `json:"cp"`
	// MQAChunk holds the estimator's MQA chunk caps.
	MQAChunk MQAChunkConfig `json:"mqa_chunk"`
	// MaxRounds is in [1, MaxBenchRounds].
	MaxRounds int64 `json:"max_rounds"`
	// QueueWindow, when > 0, shows each round only the first QueueWindow
	// waiting requests (the arrivals a scheduler has seen; trace mode);
	// 0 is A3.3's whole remaining queue. [designed: A3 is silent]
	QueueWindow int64 `json:"queue_window,omitempty"`
	// Deterministic emits every duration_us as 0 (fixtures, A3.3).
	Deterministic bool `json:"deterministic,omitempty"`
	// Requests are the requests in queue order, at most MaxBenchRequests.
	Requests []BenchRequest `json:"requests"`
}

// BenchRound is one round of the output (A3.4).
type BenchRound struct {
	// Round is the round's index from 0.
	Round int64 `json:"round"`
	// Admitted are the rids of the batch, continuing chunk first.
	Admitted []string `json:"admitted"`
	// Chunked is the rid carried to the next round, or null.
	Chunked *string `json:"chunked"`
	// Stop is why the queue walk ended.
	Stop RoundStop `json:"stop"`
	// BatchIsFull is the scheduler's batch_is_full.
	BatchIsFull bool `json:"batch_is_full"`
	// TotalExtendTokens is Σ page-ceiled charged extend (log_input_tokens).
	TotalExtendTokens int64 `json:"total_extend_tokens"`
	// TotalCachedTokens is Σ prefix_len after load-back of the batch.
	TotalCachedTokens int64 `json:"total_cached_tokens"`
	// L2LoadedTokens is every successful load-back, refused requests included.
	L2LoadedTokens int64 `json:"l2_loaded_tokens"`
	// L2CapacityLeft is the fake L2 capacity left.
	L2CapacityLeft int64 `json:"l2_capacity_left"`
	// EffectiveCPExtendLimit is C1's limit; null without CP or when unlimited.
	EffectiveCPExtendLimit *int64 `json:"effective_cp_extend_limit"`
	// RemInputTokens is rem_input_tokens after the round.
	RemInputTokens int64 `json:"rem_input_tokens"`
	// EstimatedBufferBytes is Estimate(admitted).TotalBytes with the buffer gate on, else 0.
	EstimatedBufferBytes int64 `json:"estimated_buffer_bytes"`
	// DurationUS is the round call's wall time in µs; 0 when deterministic.
	DurationUS int64 `json:"duration_us"`
}

// BenchSummary totals the rounds (A3.4).
type BenchSummary struct {
	// Rounds is the number of rounds run.
	Rounds int64 `json:"rounds"`
	// RequestsAdmitted counts distinct requests admitted at least once.
	RequestsAdmitted int64 `json:"requests_admitted"`
	// StopReasons maps each stop detail to its round count (keys sorted by encoding/json).
	StopReasons map[StopDetail]int64 `json:"stop_reasons"`
}

// AdmissionBenchOutput is admission.bench's output (A3.4).
type AdmissionBenchOutput struct {
	// Rounds are the rounds in order.
	Rounds []BenchRound `json:"rounds"`
	// Termination is drained, stalled or max_rounds.
	Termination string `json:"termination"`
	// Summary totals the rounds.
	Summary BenchSummary `json:"summary"`
}

// EstimateFunc is a twin's A2 estimator (EstimateBuffers).
type EstimateFunc func(EstimatorContext, []EstimateReq) (Estimate, error)

// BenchDriver is what a twin plugs into RunAdmissionBench.
type BenchDriver struct {
	// Round is the twin's AdmissionRound.
	Round RoundFunc
	// Estimate is the twin's EstimateBuffers (estimated_buffer_bytes).
	Estimate EstimateFunc
	// Map turns a bench request into an A1 request; MapBenchRequest
	// unless a bug-zoo mutant puts a historic mapping back.
	Map func(BenchRequest) Request
}
