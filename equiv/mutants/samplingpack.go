package mutants

import (
	"math"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/ref"
)

// FlagsFromFloat32 is the hazard of transfer.md §8's single-pass rewrite,
// re-introduced into a copy of fast.SamplingPack: the need_* flags read the
// float32 copies in the packed buffer instead of the float64 sources, so
// top_p = 1 − 1e-12 (stored as 1.0f) leaves need_top_p_sampling false and
// a min_p below float32's range (stored as 0f) leaves need_min_p_sampling
// false. The seed itself describes a speed-up (38.8 → 18.2 µs at bs=8), not
// a correctness bug; this is the easy mistake when fusing the flag passes
// into the packing pass, which upstream's definitions rule out.
func FlagsFromFloat32() equiv.Killable {
	return &equiv.Mutant[ref.SamplingPackInput, ref.SamplingPackOutput]{
		Spec:    equiv.SamplingPack(),
		ID:      "flags-from-float32",
		Section: "transfer.md §8",
		About:   "need_* flags computed from the float32 copies: top_p = 1-1e-12 is 1.0f, so need_top_p_sampling is false",
		Fn:      flagsFromFloat32,
	}
}

func flagsFromFloat32(_ ref.Limits, in ref.SamplingPackInput) (ref.SamplingPackOutput, error) {
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
		if 0 <= t && t < ref.SamplingEps {
			t, k = 1, 1
		}
		if k == -1 {
			k = ref.TopKAll
		}
		if !(t >= 0 && t < ref.Float32Overflow && p > 0 && p <= 1 && k >= 1 && k <= math.MaxInt32 && m >= 0 && m <= 1) {
			if _, err := ref.NormalizeSamplingRequest(i, *r); err != nil {
				return ref.SamplingPackOutput{}, err
			}
		}
		temps[i], topPs[i], minPs[i], topK[i] = float32(t), float32(p), float32(m), int32(k)
		if seeds != nil {
			seeds[i] = ref.SamplingSeedOf(*r)
		}
		greedy = greedy && topK[i] <= 1
		needP = needP || topPs[i] != 1.0 // the bug: the float32 copy
		needK = needK || topK[i] != ref.TopKAll
		needMin = needMin || minPs[i] > 0 // the bug: the float32 copy
	}
	return ref.SamplingPackOutput{F: f, TopK: topK, Seeds: seeds,
		IsAllGreedy: greedy, NeedTopPSampling: needP, NeedTopKSampling: needK, NeedMinPSampling: needMin}, nil
}
