package ref

import (
	"fmt"
	"math"
)

// Sampling constants of docs/spec/transfer.md §8 (upstream sampling_params.py).
const (
	// SamplingEps is the temperature below which a request is greedy:
	// 0 <= temperature < SamplingEps becomes temperature 1, top_k 1.
	SamplingEps = 1e-6
	// TopKAll is the top_k that means "the whole vocabulary"; top_k = -1
	// normalises to it, and need_top_k_sampling is "some top_k != TopKAll".
	TopKAll = 1 << 30
	// defaultSamplingSeed is the seed of a request without sampling_seed
	// when deterministic inference is on.
	defaultSamplingSeed = 42
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

// NormalizeSamplingRequest normalises request i and verifies it, in the
// order both twins report violations (docs/spec/transfer.md §8): temperature
// (finite, >= 0, finite as float32), top_p (finite, in (0,1]), top_k
// (normalised, >= 1, <= MaxInt32), min_p (finite, in [0,1]). Greedy
// normalisation happens first, so a greedy request's raw top_k is never
// checked, as upstream verifies the normalised values.
func NormalizeSamplingRequest(i int, r SamplingRequest) (SamplingParams, error) {
	p := SamplingParams{Temperature: r.Temperature, TopP: r.TopP, TopK: r.TopK, MinP: r.MinP}
	if 0 <= p.Temperature && p.Temperature < SamplingEps {
		p.Temperature, p.TopK = 1, 1
	}
	if p.TopK == -1 {
		p.TopK = TopKAll
	}
	if err := checkTemperature(i, p.Temperature); err != nil {
		return SamplingParams{}, err
	}
	if err := checkUnitInterval(i, "top_p", p.TopP, false, ErrBadTopP); err != nil {
		return SamplingParams{}, err
	}
	if p.TopK < 1 {
		return SamplingParams{}, Reject(ErrBadTopK, requestField(i, "top_k"), p.TopK, ">= 1, or -1 for all")
	}
	if p.TopK > math.MaxInt32 {
		return SamplingParams{}, Reject(ErrTopKOverflow, requestField(i, "top_k"), p.TopK, fmt.Sprintf("<= %d (int32)", math.MaxInt32))
	}
	if err := checkUnitInterval(i, "min_p", p.MinP, true, ErrBadMinP); err != nil {
		return SamplingParams{}, err
	}
	return p, nil
}

func requestField(i int, name string) string { return Idx("requests", i) + "." + name }

// SamplingSeedOf is request r's seed under deterministic inference.
func SamplingSeedOf(r SamplingRequest) int64 {
	if r.SamplingSeed == nil {
		return defaultSamplingSeed
	}
	return *r.SamplingSeed
}

// SamplingPack builds a batch's sampling buffers the legacy way the seed
// replaced (docs/spec/transfer.md §8, §10 row 8): normalise every request, build one
// array per field, concatenate the float arrays into the packed layout, then
// compute each flag in its own pass over the float64 source values.
func SamplingPack(_ Limits, in SamplingPackInput) (SamplingPackOutput, error) {
	params := make([]SamplingParams, 0, len(in.Requests))
	for i, r := range in.Requests {
		p, err := NormalizeSamplingRequest(i, r)
		if err != nil {
			return SamplingPackOutput{}, err
		}
		params = append(params, p)
	}
	temperatures := []float32{}
	for _, p := range params {
		temperatures = append(temperatures, float32(p.Temperature))
	}
	topPs := []float32{}
	for _, p := range params {
		topPs = append(topPs, float32(p.TopP))
	}
	topKs := []int32{}
	for _, p := range params {
		topKs = append(topKs, int32(p.TopK))
	}
	minPs := []float32{}
	for _, p := range params {
		minPs = append(minPs, float32(p.MinP))
	}
	var seeds []int64
	if in.Deterministic {
		seeds = []int64{}
		for _, r := range in.Requests {
			seeds = append(seeds, SamplingSeedOf(r))
		}
	}
	out := SamplingPackOutput{F: concatFloat32(temperatures, topPs, minPs), TopK: topKs, Seeds: seeds}
	out.IsAllGreedy, out.NeedTopPSampling, out.NeedTopKSampling, out.NeedMinPSampling = samplingFlags(params)
	return out, nil
}

// samplingFlags computes the four flags of docs/spec/transfer.md §8, one pass each, as
// upstream's all()/any() comprehensions do.
func samplingFlags(params []SamplingParams) (isAllGreedy, needTopP, needTopK, needMinP bool) {
	isAllGreedy = true
	for _, p := range params {
		if p.TopK > 1 {
			isAllGreedy = false
		}
	}
	for _, p := range params {
		if p.TopP != 1.0 {
			needTopP = true
		}
	}
	for _, p := range params {
		if p.TopK != TopKAll {
			needTopK = true
		}
	}
	for _, p := range params {
		if p.MinP > 0 {
			needMinP = true
		}
	}
	return isAllGreedy, needTopP, needTopK, needMinP
}

// concatFloat32 concatenates into a fresh, non-nil slice (slices.Concat
// returns nil for an empty result, which would encode as null).
func concatFloat32(parts ...[]float32) []float32 {
	out := []float32{}
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// FilterSampling keeps the requests at keep, in keep's order (docs/spec/transfer.md §8
// filter_batch). Every array is indexed into fresh memory that never aliases
// b; the flags are copied, not recomputed, so they stay a conservative
// superset of the kept requests' needs, as upstream's are. The legacy form:
// each field's array is gathered on its own, then repacked.
func FilterSampling(b SamplingPackOutput, keep []int64) (SamplingPackOutput, error) {
	if err := CheckSamplingBatch("batch", b); err != nil {
		return SamplingPackOutput{}, err
	}
	if err := CheckSamplingKeep(keep, len(b.TopK)); err != nil {
		return SamplingPackOutput{}, err
	}
	temperatures, topPs, minPs := []float32{}, []float32{}, []float32{}
	topKs := []int32{}
	for _, k := range keep {
		temperatures = append(temperatures, b.Temperatures()[k])
	}
	for _, k := range keep {
		topPs = append(topPs, b.TopPs()[k])
	}
	for _, k := range keep {
		minPs = append(minPs, b.MinPs()[k])
	}
	for _, k := range keep {
		topKs = append(topKs, b.TopK[k])
	}
	var seeds []int64
	if b.Seeds != nil {
		seeds = []int64{}
		for _, k := range keep {
			seeds = append(seeds, b.Seeds[k])
		}
	}
	return SamplingPackOutput{
		F: concatFloat32(temperatures, topPs, minPs), TopK: topKs, Seeds: seeds,
		IsAllGreedy: b.IsAllGreedy, NeedTopPSampling: b.NeedTopPSampling,
		NeedTopKSampling: b.NeedTopKSampling, NeedMinPSampling: b.NeedMinPSampling,
	}, nil
}

// MergeSampling appends batch b's requests after a's (docs/spec/transfer.md §8
// merge_batch): each field's arrays are concatenated and repacked into fresh
// memory, is_all_greedy is ANDed and every need_* ORed. Both batches must be
// deterministic or neither (seeds both non-nil or both nil).
func MergeSampling(a, b SamplingPackOutput) (SamplingPackOutput, error) {
	if err := CheckSamplingMerge(a, b); err != nil {
		return SamplingPackOutput{}, err
	}
	temperatures := concatFloat32(a.Temperatures(), b.Temperatures())
	topPs := concatFloat32(a.TopPs(), b.TopPs())
	minPs := concatFloat32(a.MinPs(), b.MinPs())
	topKs := append(append([]int32{}, a.TopK...), b.TopK...)
	var seeds []int64
	if a.Seeds != nil {
		seeds = append(append([]int64{}, a.Seeds...), b.Seeds...)
	}
	return SamplingPackOutput{
		F: concatFloat32(temperatures, topPs, minPs), TopK: topKs, Seeds: seeds,
		IsAllGreedy:      a.IsAllGreedy && b.IsAllGreedy,
		NeedTopPSampling: a.NeedTopPSampling || b.NeedTopPSampling,
		NeedTopKSampling: a.NeedTopKSampling || b.NeedTopKSampling,
		NeedMinPSampling: a.NeedMinPSampling || b.NeedMinPSampling,
	}, nil
}
