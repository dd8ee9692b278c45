package ref

import (
	"fmt"
	"math"

	"github.com/kvtwin/kvtwin/spec"
)

// Sampling constants of docs/spec/transfer.md §8 (upstream sampling_params.py).
const (
	// defaultSamplingSeed is the seed of a request without sampling_seed
	// when deterministic inference is on.
	defaultSamplingSeed = 42
)

// NormalizeSamplingRequest normalises request i and verifies it, in the
// order both twins report violations (docs/spec/transfer.md §8): temperature
// (finite, >= 0, finite as float32), top_p (finite, in (0,1]), top_k
// (normalised, >= 1, <= MaxInt32), min_p (finite, in [0,1]). Greedy
// normalisation happens first, so a greedy request's raw top_k is never
// checked, as upstream verifies the normalised values.
func NormalizeSamplingRequest(i int, r spec.SamplingRequest) (spec.SamplingParams, error) {
	p := spec.SamplingParams{Temperature: r.Temperature, TopP: r.TopP, TopK: r.TopK, MinP: r.MinP}
	if 0 <= p.Temperature && p.Temperature < spec.SamplingEps {
		p.Temperature, p.TopK = 1, 1
	}
	if p.TopK == -1 {
		p.TopK = spec.TopKAll
	}
	if err := checkTemperature(i, p.Temperature); err != nil {
		return spec.SamplingParams{}, err
	}
	if err := checkUnitInterval(i, "top_p", p.TopP, false, spec.ErrBadTopP); err != nil {
		return spec.SamplingParams{}, err
	}
	if p.TopK < 1 {
		return spec.SamplingParams{}, spec.Reject(spec.ErrBadTopK, requestField(i, "top_k"), p.TopK, ">= 1, or -1 for all")
	}
	if p.TopK > math.MaxInt32 {
		return spec.SamplingParams{}, spec.Reject(spec.ErrTopKOverflow, requestField(i, "top_k"), p.TopK, fmt.Sprintf("<= %d (int32)", math.MaxInt32))
	}
	if err := checkUnitInterval(i, "min_p", p.MinP, true, spec.ErrBadMinP); err != nil {
		return spec.SamplingParams{}, err
	}
	return p, nil
}

func requestField(i int, name string) string { return spec.Idx("requests", i) + "." + name }

// SamplingSeedOf is request r's seed under deterministic inference.
func SamplingSeedOf(r spec.SamplingRequest) int64 {
	if r.SamplingSeed == nil {
		return defaultSamplingSeed
	}
	return *r.SamplingSeed
}

// SamplingPack builds a batch's sampling buffers the legacy way the seed
// replaced (docs/spec/transfer.md §8, §10 row 8): normalise every request, build one
// array per field, concatenate the float arrays into the packed layout, then
// compute each flag in its own pass over the float64 source values.
func SamplingPack(_ spec.Limits, in spec.SamplingPackInput) (spec.SamplingPackOutput, error) {
	params := make([]spec.SamplingParams, 0, len(in.Requests))
	for i, r := range in.Requests {
		p, err := NormalizeSamplingRequest(i, r)
		if err != nil {
			return spec.SamplingPackOutput{}, err
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
	out := spec.SamplingPackOutput{F: concatFloat32(temperatures, topPs, minPs), TopK: topKs, Seeds: seeds}
	out.IsAllGreedy, out.NeedTopPSampling, out.NeedTopKSampling, out.NeedMinPSampling = samplingFlags(params)
	return out, nil
}

// samplingFlags computes the four flags of docs/spec/transfer.md §8, one pass each, as
// upstream's all()/any() comprehensions do.
func samplingFlags(params []spec.SamplingParams) (isAllGreedy, needTopP, needTopK, needMinP bool) {
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
		if p.TopK != spec.TopKAll {
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
func FilterSampling(b spec.SamplingPackOutput, keep []int64) (spec.SamplingPackOutput, error) {
	if err := CheckSamplingBatch("batch", b); err != nil {
		return spec.SamplingPackOutput{}, err
	}
	if err := CheckSamplingKeep(keep, len(b.TopK)); err != nil {
		return spec.SamplingPackOutput{}, err
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
	return spec.SamplingPackOutput{
		F: concatFloat32(temperatures, topPs, minPs), TopK: topKs, Seeds: seeds,
		IsAllGreedy: b.IsAllGreedy, NeedTopPSampling: b.NeedTopPSampling,
		NeedTopKSampling: b.NeedTopKSampling, NeedMinPSampling: b.NeedMinPSampling,
	}, nil
}

// MergeSampling appends batch b's requests after a's (docs/spec/transfer.md §8
// merge_batch): each field's arrays are concatenated and repacked into fresh
// memory, is_all_greedy is ANDed and every need_* ORed. Both batches must be
// deterministic or neither (seeds both non-nil or both nil).
func MergeSampling(a, b spec.SamplingPackOutput) (spec.SamplingPackOutput, error) {
	if err := CheckSamplingMerge(a, b); err != nil {
		return spec.SamplingPackOutput{}, err
	}
	temperatures := concatFloat32(a.Temperatures(), b.Temperatures())
	topPs := concatFloat32(a.TopPs(), b.TopPs())
	minPs := concatFloat32(a.MinPs(), b.MinPs())
	topKs := append(append([]int32{}, a.TopK...), b.TopK...)
	var seeds []int64
	if a.Seeds != nil {
		seeds = append(append([]int64{}, a.Seeds...), b.Seeds...)
	}
	return spec.SamplingPackOutput{
		F: concatFloat32(temperatures, topPs, minPs), TopK: topKs, Seeds: seeds,
		IsAllGreedy:      a.IsAllGreedy && b.IsAllGreedy,
		NeedTopPSampling: a.NeedTopPSampling || b.NeedTopPSampling,
		NeedTopKSampling: a.NeedTopKSampling || b.NeedTopKSampling,
		NeedMinPSampling: a.NeedMinPSampling || b.NeedMinPSampling,
	}, nil
}
