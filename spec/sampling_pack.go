package spec

const (
	// SamplingEps is the temperature below which a request is greedy:
	// 0 <= temperature < SamplingEps becomes temperature 1, top_k 1.
	SamplingEps = 1e-6
	// TopKAll is the top_k that means "the whole vocabulary"; top_k = -1
	// normalises to it, and need_top_k_sampling is "some top_k != TopKAll".
	TopKAll = 1 << 30
)

// SamplingRequest is one request's sampling parameters as the client sent
// them, before normalisation (docs/spec/transfer.md §8).
type SamplingRequest struct {
	// Temperature is >= 0; below SamplingEps the request is greedy.
	Temperature float64 `json:"temperature"`
	// TopP is the nucleus mass, in (0, 1]; 1 disables top-p.
	TopP float64 `json:"top_p"`
	// TopK is >= 1, or -1 for the whole vocabulary (TopKAll); ignored on greedy requests.
	TopK int64 `json:"top_k"`
	// MinP is in [0, 1]; 0 disables min-p.
	MinP float64 `json:"min_p"`
	// SamplingSeed is the request's seed under deterministic inference; nil means defaultSamplingSeed.
	SamplingSeed *int64 `json:"sampling_seed,omitempty"`
}

// SamplingPackInput is the input of sampling.pack: a schedule batch's
// requests in batch order (docs/spec/transfer.md §8).
type SamplingPackInput struct {
	// Requests are the batch's requests; the batch size bs is len(Requests).
	Requests []SamplingRequest `json:"requests"`
	// Deterministic says deterministic inference is on, which adds Seeds.
	Deterministic bool `json:"deterministic"`
}

// SamplingPackOutput is a packed sampling batch (docs/spec/transfer.md §8). It is
// also the batch type Filter and Merge take and return.
type SamplingPackOutput struct {
	// F is the packed float buffer of 3×bs: temperatures, then top_ps, then
	// min_ps, each the float32 of the normalised float64 value. Read it
	// through Temperatures, TopPs and MinPs.
	F []float32 `json:"f"`
	// TopK is the normalised top_k of each request (bs).
	TopK []int32 `json:"top_k"`
	// Seeds is each request's seed (defaultSamplingSeed when unset) when
	// deterministic inference is on, and nil (JSON null) otherwise.
	Seeds []int64 `json:"seeds"`
	// IsAllGreedy is "every normalised top_k <= 1" (true for an empty batch).
	IsAllGreedy bool `json:"is_all_greedy"`
	// NeedTopPSampling is "some float64 top_p != 1.0".
	NeedTopPSampling bool `json:"need_top_p_sampling"`
	// NeedTopKSampling is "some normalised top_k != TopKAll".
	NeedTopKSampling bool `json:"need_top_k_sampling"`
	// NeedMinPSampling is "some float64 min_p > 0".
	NeedMinPSampling bool `json:"need_min_p_sampling"`
}

// Temperatures is the temperature segment F[0:bs] (the spec's (bs,1) view).
// Its capacity ends at the segment, so an append through it reallocates
// instead of writing into the top_p segment. Precondition: len(F) is 3×bs.
func (o SamplingPackOutput) Temperatures() []float32 {
	bs := len(o.F) / 3
	return o.F[0:bs:bs]
}

// TopPs is the top_p segment F[bs:2bs], capacity-capped like Temperatures.
func (o SamplingPackOutput) TopPs() []float32 {
	bs := len(o.F) / 3
	return o.F[bs : 2*bs : 2*bs]
}

// MinPs is the min_p segment F[2bs:3bs], capacity-capped like Temperatures.
func (o SamplingPackOutput) MinPs() []float32 {
	bs := len(o.F) / 3
	return o.F[2*bs : 3*bs : 3*bs]
}

// SamplingParams is one request after normalisation and verification: the
// float64 source values the flags are computed from (docs/spec/transfer.md §8).
type SamplingParams struct {
	// Temperature is the normalised temperature (1 for greedy requests).
	Temperature float64
	// TopP is the verified top_p.
	TopP float64
	// TopK is the normalised top_k, in [1, MaxInt32].
	TopK int64
	// MinP is the verified min_p.
	MinP float64
}
