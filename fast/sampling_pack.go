package fast

import (
	"math"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// SamplingPack is the single-pass twin of ref.SamplingPack (docs/spec/transfer.md §8,
// the seed's from_schedule_batch rewrite): one exact-size allocation for the
// packed [temperatures | top_ps | min_ps] buffer, one for top_k and one for
// seeds when deterministic, all filled and all four flags accumulated in one
// pass over the requests. Verification is folded into the pass as one
// combined test that accepts exactly what ref.NormalizeSamplingRequest
// accepts (NaN fails every comparison, ±Inf and float32 overflow fail the
// temperature bound); the first request that fails it is handed to ref for
// the exact error, so both twins report the same first violation.
func SamplingPack(_ spec.Limits, in spec.SamplingPackInput) (spec.SamplingPackOutput, error) {
	reqs := in.Requests
	bs := len(reqs)
	f := make([]float32, 3*bs)
	temps, topPs, minPs := f[:bs:bs], f[bs:2*bs:2*bs], f[2*bs:]
	topK := make([]int32, bs)
	var seeds []int64
	if in.Deterministic {
		seeds = make([]int64, bs)
	}
	greedy, needP, needK, needMin := true, false, false, false
	for i := range reqs {
		r := &reqs[i]
		t, p, k, m := r.Temperature, r.TopP, r.TopK, r.MinP
		if 0 <= t && t < spec.SamplingEps {
			t, k = 1, 1
		}
		if k == -1 {
			k = spec.TopKAll
		}
		if !(t >= 0 && t < spec.Float32Overflow && p > 0 && p <= 1 && k >= 1 && k <= math.MaxInt32 && m >= 0 && m <= 1) {
			if _, err := ref.NormalizeSamplingRequest(i, *r); err != nil {
				return spec.SamplingPackOutput{}, err
			}
		}
		temps[i], topPs[i], minPs[i], topK[i] = float32(t), float32(p), float32(m), int32(k)
		if seeds != nil {
			seeds[i] = ref.SamplingSeedOf(*r)
		}
		// Flags read the float64 sources: top_p = 1-1e-12 is 1.0f in the
		// buffer yet still needs top-p sampling.
		greedy = greedy && k <= 1
		needP = needP || p != 1.0
		needK = needK || k != spec.TopKAll
		needMin = needMin || m > 0
	}
	return spec.SamplingPackOutput{F: f, TopK: topK, Seeds: seeds,
		IsAllGreedy: greedy, NeedTopPSampling: needP, NeedTopKSampling: needK, NeedMinPSampling: needMin}, nil
}

// FilterSampling is the one-pass twin of ref.FilterSampling: exact-size
// fresh buffers (never aliasing b), each kept request's five values copied
// in the same pass that range-checks its index. Flags are copied, not
// recomputed (docs/spec/transfer.md §8).
func FilterSampling(b spec.SamplingPackOutput, keep []int64) (spec.SamplingPackOutput, error) {
	if err := ref.CheckSamplingBatch("batch", b); err != nil {
		return spec.SamplingPackOutput{}, err
	}
	bs, n := len(b.TopK), len(keep)
	f := make([]float32, 3*n)
	topK := make([]int32, n)
	var seeds []int64
	if b.Seeds != nil {
		seeds = make([]int64, n)
	}
	src := b.F[: 3*bs : 3*bs]
	for j, k := range keep {
		if uint64(k) >= uint64(bs) { // negative k wraps to a huge index
			return spec.SamplingPackOutput{}, ref.CheckSamplingKeep(keep, bs)
		}
		f[j], f[n+j], f[2*n+j] = src[k], src[int64(bs)+k], src[2*int64(bs)+k]
		topK[j] = b.TopK[k]
		if seeds != nil {
			seeds[j] = b.Seeds[k]
		}
	}
	return spec.SamplingPackOutput{F: f, TopK: topK, Seeds: seeds,
		IsAllGreedy: b.IsAllGreedy, NeedTopPSampling: b.NeedTopPSampling,
		NeedTopKSampling: b.NeedTopKSampling, NeedMinPSampling: b.NeedMinPSampling}, nil
}

// MergeSampling is the copy-based twin of ref.MergeSampling: one exact-size
// packed buffer filled by six block copies, top_k and seeds by two each;
// is_all_greedy ANDed, need_* ORed (docs/spec/transfer.md §8).
func MergeSampling(a, b spec.SamplingPackOutput) (spec.SamplingPackOutput, error) {
	if err := ref.CheckSamplingMerge(a, b); err != nil {
		return spec.SamplingPackOutput{}, err
	}
	na, nb := len(a.TopK), len(b.TopK)
	n := na + nb
	f := make([]float32, 3*n)
	for seg := range 3 {
		copy(f[seg*n:], a.F[seg*na:(seg+1)*na])
		copy(f[seg*n+na:], b.F[seg*nb:(seg+1)*nb])
	}
	topK := make([]int32, n)
	copy(topK[copy(topK, a.TopK):], b.TopK)
	var seeds []int64
	if a.Seeds != nil {
		seeds = make([]int64, n)
		copy(seeds[copy(seeds, a.Seeds):], b.Seeds)
	}
	return spec.SamplingPackOutput{F: f, TopK: topK, Seeds: seeds,
		IsAllGreedy:      a.IsAllGreedy && b.IsAllGreedy,
		NeedTopPSampling: a.NeedTopPSampling || b.NeedTopPSampling,
		NeedTopKSampling: a.NeedTopKSampling || b.NeedTopKSampling,
		NeedMinPSampling: a.NeedMinPSampling || b.NeedMinPSampling}, nil
}
