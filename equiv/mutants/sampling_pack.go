package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/spec"
)

// FlagsFromFloat32 is the hazard of docs/spec/transfer.md §8's single-pass rewrite,
// re-introduced on top of fast.SamplingPack: the need_* flags read the
// float32 copies in the packed buffer instead of the float64 sources, so
// top_p = 1 − 1e-12 (stored as 1.0f) leaves need_top_p_sampling false and
// a min_p below float32's range (stored as 0f) leaves need_min_p_sampling
// false. The seed itself describes a speed-up (38.8 → 18.2 µs at bs=8), not
// a correctness bug; this is the easy mistake when fusing the flag passes
// into the packing pass, which upstream's definitions rule out.
func FlagsFromFloat32() equiv.Killable {
	return &equiv.Mutant[spec.SamplingPackInput, spec.SamplingPackOutput]{
		Spec:    equiv.SamplingPack(),
		ID:      "flags-from-float32",
		Section: "transfer.md §8",
		About:   "need_* flags computed from the float32 copies: top_p = 1-1e-12 is 1.0f, so need_top_p_sampling is false",
		Fn:      flagsFromFloat32,
	}
}

// flagsFromFloat32 runs the fast twin, then recomputes the two float flags
// from the packed float32 copies, as a fused packing pass easily would.
func flagsFromFloat32(lim spec.Limits, in spec.SamplingPackInput) (spec.SamplingPackOutput, error) {
	out, err := fast.SamplingPack(lim, in)
	if err != nil {
		return out, err
	}
	bs := len(in.Requests)
	out.NeedTopPSampling, out.NeedMinPSampling = false, false
	for i := range bs {
		out.NeedTopPSampling = out.NeedTopPSampling || out.F[bs+i] != 1.0 // the bug: the float32 copy
		out.NeedMinPSampling = out.NeedMinPSampling || out.F[2*bs+i] > 0  // the bug: the float32 copy
	}
	return out, nil
}
