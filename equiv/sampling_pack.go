package equiv

import (
	"fmt"
	"math"
	"math/big"
	"slices"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/spec"
)

// SamplingPack is the differential spec of sampling.pack (docs/spec/transfer.md §8).
// Canonical JSON writes each float32 as its shortest round-tripping decimal
// ("-0" included), so byte-equal outputs are bit-equal buffers.
func SamplingPack() *Spec[spec.SamplingPackInput, spec.SamplingPackOutput] {
	return &Spec[spec.SamplingPackInput, spec.SamplingPackOutput]{
		Op:          catalog.SamplingPack(),
		Valid:       rapid.Custom(samplingValid),
		Invalid:     rapid.Custom(samplingInvalid),
		Boundary:    samplingBoundary(),
		Regressions: samplingRegressions(),
		Props: []Prop[spec.SamplingPackInput, spec.SamplingPackOutput]{
			{"legacy-arrays-bit-equal", samplingLegacyArrays},
			{"float32-round-to-nearest-even", samplingRoundToNearestEven},
			{"top-p-edge-stored-as-1f-needs-top-p", samplingTopPEdge},
			{"min-p-edge-stored-as-0f-needs-min-p", samplingMinPEdge},
			{"flag-definitions", samplingFlagDefinitions},
			{"views-disjoint", samplingViewsDisjoint},
		},
	}
}

// Value pools, as functions so that no package state is shared between
// generators. Each profile is how a class of real clients sets its params;
// "edge" holds the values where float32 rounding, the greedy threshold or
// TopKAll make a difference.

func chatTemperatures() []float64 { return []float64{0.6, 0.7, 0.8, 1.0, 1.2} }
func chatTopPs() []float64        { return []float64{0.8, 0.9, 0.95, 1} }
func chatTopKs() []int64          { return []int64{-1, -1, 1, 20, 40, 50} }
func chatMinPs() []float64        { return []float64{0, 0, 0.05, 0.1} }

func greedyTemperatures() []float64 {
	return []float64{0, 0, math.Copysign(0, -1), 1e-7, math.Nextafter(spec.SamplingEps, 0), 5e-324}
}

// greedyTopKs: a greedy request's raw top_k is normalised away, valid or not.
func greedyTopKs() []int64 { return []int64{-1, -1, 0, 1, 40, -7, math.MinInt64, math.MaxInt64} }

func edgeTemperatures() []float64 {
	return []float64{spec.SamplingEps, 1 + 0x1p-24, 1 + 3*0x1p-24, 0.1, math.MaxFloat32,
		math.Nextafter(spec.Float32Overflow, 0), 1e30, 1e-5}
}

func edgeTopPs() []float64 {
	return []float64{1, 1, 1 - 1e-12, math.Nextafter(1, 0), 1 - 0x1p-25, 5e-324, 1e-46, 0.5 + 0x1p-25}
}

func edgeTopKs() []int64 {
	return []int64{-1, 1, 2, spec.TopKAll - 1, spec.TopKAll, spec.TopKAll + 1, math.MaxInt32}
}

func edgeMinPs() []float64 {
	return []float64{0, 0, math.Copysign(0, -1), 1e-46, 5e-324, 0x1p-149, 0.5 + 0x1p-25, 1}
}

// samplingValid draws a batch shaped like serving traffic: 0–64 requests,
// all on one profile (all-defaults, chat presets, greedy or edge values) or
// each on its own, with or without deterministic seeds.
func samplingValid(t *rapid.T) spec.SamplingPackInput {
	bs := rapid.OneOf(rapid.IntRange(0, 8), rapid.IntRange(0, 64)).Draw(t, "bs")
	profile := rapid.IntRange(0, 4).Draw(t, "profile")
	reqs := make([]spec.SamplingRequest, bs)
	for i := range reqs {
		p := profile
		if p == 4 { // a mixed batch: each request on its own profile
			p = rapid.IntRange(0, 3).Draw(t, "request_profile")
		}
		reqs[i] = samplingRequest(t, p)
	}
	return spec.SamplingPackInput{Requests: reqs, Deterministic: rapid.Bool().Draw(t, "deterministic")}
}

// samplingRequest draws one valid request: 0 all-defaults, 1 chat preset,
// 2 greedy, 3 edge values.
func samplingRequest(t *rapid.T, profile int) spec.SamplingRequest {
	var r spec.SamplingRequest
	switch profile {
	case 0:
		r = spec.SamplingRequest{Temperature: 1, TopP: 1, TopK: -1}
	case 1:
		r = spec.SamplingRequest{
			Temperature: rapid.OneOf(rapid.SampledFrom(chatTemperatures()), rapid.Float64Range(spec.SamplingEps, 2)).Draw(t, "temperature"),
			TopP:        rapid.OneOf(rapid.SampledFrom(chatTopPs()), rapid.Float64Range(0.01, 1)).Draw(t, "top_p"),
			TopK:        rapid.OneOf(rapid.SampledFrom(chatTopKs()), rapid.Int64Range(1, 1000)).Draw(t, "top_k"),
			MinP:        rapid.SampledFrom(chatMinPs()).Draw(t, "min_p"),
		}
	case 2:
		r = spec.SamplingRequest{
			Temperature: rapid.SampledFrom(greedyTemperatures()).Draw(t, "temperature"),
			TopP:        rapid.SampledFrom(chatTopPs()).Draw(t, "top_p"),
			TopK:        rapid.SampledFrom(greedyTopKs()).Draw(t, "top_k"),
			MinP:        rapid.SampledFrom(chatMinPs()).Draw(t, "min_p"),
		}
	default:
		r = spec.SamplingRequest{
			Temperature: rapid.SampledFrom(edgeTemperatures()).Draw(t, "temperature"),
			TopP:        rapid.SampledFrom(edgeTopPs()).Draw(t, "top_p"),
			TopK:        rapid.SampledFrom(edgeTopKs()).Draw(t, "top_k"),
			MinP:        rapid.SampledFrom(edgeMinPs()).Draw(t, "min_p"),
		}
	}
	if rapid.IntRange(0, 3).Draw(t, "has_seed") == 0 {
		seed := rapid.Int64().Draw(t, "seed")
		r.SamplingSeed = &seed
	}
	return r
}

// samplingInvalid breaks one field of one request. Every violation here is
// JSON-representable: the suite and the golden fixtures encode inputs, and
// JSON has no NaN or Inf, so NaN/±Inf inputs are covered by the typed
// differential TestSamplingPackRejectsNonFiniteAlike instead. The float32
// overflow of a finite temperature is the JSON-reachable ErrNonFinite.
func samplingInvalid(t *rapid.T) Bad[spec.SamplingPackInput] {
	in := samplingValid(t)
	if len(in.Requests) == 0 {
		in.Requests = []spec.SamplingRequest{samplingRequest(t, rapid.IntRange(0, 3).Draw(t, "profile"))}
	}
	i := rapid.IntRange(0, len(in.Requests)-1).Draw(t, "bad_request")
	r := &in.Requests[i]
	// A greedy request ignores its top_k; make this one sample so a broken
	// top_k is seen (temperature is checked first, so this adds no error).
	nonGreedy := func() {
		if 0 <= r.Temperature && r.Temperature < spec.SamplingEps {
			r.Temperature = 0.7
		}
	}
	switch rapid.IntRange(0, 5).Draw(t, "violation") {
	case 0:
		r.Temperature = rapid.OneOf(rapid.SampledFrom([]float64{-1e-7, -5e-324, -1, -math.MaxFloat64}), rapid.Float64Range(-10, -1e-9)).Draw(t, "negative_temperature")
		return Bad[spec.SamplingPackInput]{in, spec.ErrBadTemperature}
	case 1:
		r.Temperature = rapid.SampledFrom([]float64{spec.Float32Overflow, 0x1p128, 1e39, 1e300, math.MaxFloat64}).Draw(t, "huge_temperature")
		return Bad[spec.SamplingPackInput]{in, spec.ErrNonFinite}
	case 2:
		r.TopP = rapid.OneOf(rapid.SampledFrom([]float64{0, math.Copysign(0, -1), -0.5, math.Nextafter(1, 2), 1 + 1e-12, 1.5, 1e300, -1e300}),
			rapid.Float64Range(1.0001, 100)).Draw(t, "bad_top_p")
		return Bad[spec.SamplingPackInput]{in, spec.ErrBadTopP}
	case 3:
		nonGreedy()
		r.TopK = rapid.OneOf(rapid.SampledFrom([]int64{0, -2, math.MinInt64}), rapid.Int64Range(math.MinInt64, -2)).Draw(t, "bad_top_k")
		return Bad[spec.SamplingPackInput]{in, spec.ErrBadTopK}
	case 4:
		nonGreedy()
		r.TopK = rapid.OneOf(rapid.SampledFrom([]int64{math.MaxInt32 + 1, math.MaxInt64}), rapid.Int64Range(math.MaxInt32+1, math.MaxInt64)).Draw(t, "huge_top_k")
		return Bad[spec.SamplingPackInput]{in, spec.ErrTopKOverflow}
	default:
		r.MinP = rapid.OneOf(rapid.SampledFrom([]float64{-5e-324, -0.01, math.Nextafter(1, 2), 1.5, 1e300, -1e300}),
			rapid.Float64Range(1.0001, 100)).Draw(t, "bad_min_p")
		return Bad[spec.SamplingPackInput]{in, spec.ErrBadMinP}
	}
}

// samplingBoundary: batch sizes straddling the seed's benchmark sizes (8,
// 32, 200), the empty batch, each threshold of §8 on both sides, RNE ties,
// and the worked example with and without deterministic seeds.
func samplingBoundary() []Case[spec.SamplingPackInput] {
	var cs []Case[spec.SamplingPackInput]
	for _, det := range []bool{false, true} {
		cs = append(cs,
			Case[spec.SamplingPackInput]{fmt.Sprintf("empty-deterministic-%v", det), spec.SamplingPackInput{Requests: []spec.SamplingRequest{}, Deterministic: det}},
			Case[spec.SamplingPackInput]{fmt.Sprintf("worked-example-deterministic-%v", det), spec.SamplingPackInput{Requests: samplingWorkedExample(), Deterministic: det}},
		)
		for _, bs := range []int{1, 2, 7, 8, 9, 31, 32, 33, 199, 200, 201} {
			cs = append(cs, Case[spec.SamplingPackInput]{fmt.Sprintf("bs%d-mixed-deterministic-%v", bs, det), spec.SamplingPackInput{Requests: cycleProfiles(bs), Deterministic: det}})
		}
	}
	one := func(name string, r spec.SamplingRequest) {
		cs = append(cs, Case[spec.SamplingPackInput]{name, spec.SamplingPackInput{Requests: []spec.SamplingRequest{r}, Deterministic: true}})
	}
	def := spec.SamplingRequest{Temperature: 1, TopP: 1, TopK: -1}
	with := func(f func(*spec.SamplingRequest)) spec.SamplingRequest { r := def; f(&r); return r }
	one("temperature-at-eps-samples", with(func(r *spec.SamplingRequest) { r.Temperature = spec.SamplingEps }))
	one("temperature-below-eps-is-greedy", with(func(r *spec.SamplingRequest) { r.Temperature = math.Nextafter(spec.SamplingEps, 0) }))
	one("temperature-negative-zero-is-greedy", with(func(r *spec.SamplingRequest) { r.Temperature = math.Copysign(0, -1) }))
	one("greedy-ignores-top-k-zero", with(func(r *spec.SamplingRequest) { r.Temperature, r.TopK = 0, 0 }))
	one("greedy-ignores-top-k-beyond-int32", with(func(r *spec.SamplingRequest) { r.Temperature, r.TopK = 0, math.MaxInt64 }))
	one("temperature-max-float32", with(func(r *spec.SamplingRequest) { r.Temperature = math.MaxFloat32 }))
	one("temperature-just-below-float32-overflow", with(func(r *spec.SamplingRequest) { r.Temperature = math.Nextafter(spec.Float32Overflow, 0) }))
	one("temperature-rne-tie-to-even-down", with(func(r *spec.SamplingRequest) { r.Temperature = 1 + 0x1p-24 }))
	one("temperature-rne-tie-to-even-up", with(func(r *spec.SamplingRequest) { r.Temperature = 1 + 3*0x1p-24 }))
	one("top-p-one-minus-1e-12", with(func(r *spec.SamplingRequest) { r.TopP = 1 - 1e-12 }))
	one("top-p-next-below-one", with(func(r *spec.SamplingRequest) { r.TopP = math.Nextafter(1, 0) }))
	one("top-p-smallest-positive-stored-as-0f", with(func(r *spec.SamplingRequest) { r.TopP = 5e-324 }))
	one("min-p-one", with(func(r *spec.SamplingRequest) { r.MinP = 1 }))
	one("min-p-negative-zero", with(func(r *spec.SamplingRequest) { r.MinP = math.Copysign(0, -1) }))
	one("min-p-tiny-stored-as-0f", with(func(r *spec.SamplingRequest) { r.MinP = 1e-46 }))
	one("min-p-smallest-float32-subnormal", with(func(r *spec.SamplingRequest) { r.MinP = 0x1p-149 }))
	for _, k := range []int64{-1, 1, 2, spec.TopKAll - 1, spec.TopKAll, spec.TopKAll + 1, math.MaxInt32} {
		one(fmt.Sprintf("top-k-%d", k), with(func(r *spec.SamplingRequest) { r.TopK = k }))
	}
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	cs = append(cs, Case[spec.SamplingPackInput]{"seeds-extremes-and-default", spec.SamplingPackInput{Requests: []spec.SamplingRequest{
		with(func(r *spec.SamplingRequest) { r.SamplingSeed = &lo }),
		def,
		with(func(r *spec.SamplingRequest) { r.SamplingSeed = &hi }),
	}, Deterministic: true}})
	return cs
}

// samplingWorkedExample is the three requests of docs/spec/transfer.md §8's example
// (the greedy one's raw top_k, unstated there, is -1).
func samplingWorkedExample() []spec.SamplingRequest {
	seven := int64(7)
	return []spec.SamplingRequest{
		{Temperature: 0.7, TopP: 0.9, TopK: -1, MinP: 0},
		{Temperature: 0, TopP: 1, TopK: -1, MinP: 0},
		{Temperature: 1.2, TopP: 1, TopK: 40, MinP: 0.05, SamplingSeed: &seven},
	}
}

// cycleProfiles is a deterministic mixed batch: defaults, chat presets,
// greedy and edge requests in turn, request i seeded when i%3 == 0.
func cycleProfiles(bs int) []spec.SamplingRequest {
	ct, cp, ck, cm := chatTemperatures(), chatTopPs(), chatTopKs(), chatMinPs()
	gt, gk := greedyTemperatures(), greedyTopKs()
	et, ep, ek, em := edgeTemperatures(), edgeTopPs(), edgeTopKs(), edgeMinPs()
	reqs := make([]spec.SamplingRequest, bs)
	for i := range reqs {
		switch i % 4 {
		case 0:
			reqs[i] = spec.SamplingRequest{Temperature: 1, TopP: 1, TopK: -1}
		case 1:
			reqs[i] = spec.SamplingRequest{Temperature: ct[i%len(ct)], TopP: cp[i%len(cp)], TopK: ck[i%len(ck)], MinP: cm[i%len(cm)]}
		case 2:
			reqs[i] = spec.SamplingRequest{Temperature: gt[i%len(gt)], TopP: 1, TopK: gk[i%len(gk)]}
		default:
			reqs[i] = spec.SamplingRequest{Temperature: et[i%len(et)], TopP: ep[i%len(ep)], TopK: ek[i%len(ek)], MinP: em[i%len(em)]}
		}
		if i%3 == 0 {
			seed := int64(i) * 7919
			reqs[i].SamplingSeed = &seed
		}
	}
	return reqs
}

// samplingRegressions: the flags-from-float32 input. top_p = 1 − 1e-12 is
// stored as 1.0f, so flags read from the float32 copies miss top-p.
func samplingRegressions() []Case[spec.SamplingPackInput] {
	return []Case[spec.SamplingPackInput]{
		{"flags-from-float32", spec.SamplingPackInput{Requests: []spec.SamplingRequest{{Temperature: 0.7, TopP: 1 - 1e-12, TopK: -1, MinP: 0}}}},
	}
}

// The helpers below re-derive §8's normalisation from the spec text,
// independently of ref, for the properties.

func greedy(r spec.SamplingRequest) bool { return r.Temperature >= 0 && r.Temperature < 1e-6 }

func normTemperature(r spec.SamplingRequest) float64 {
	if greedy(r) {
		return 1
	}
	return r.Temperature
}

func normTopK(r spec.SamplingRequest) int64 {
	switch {
	case greedy(r):
		return 1
	case r.TopK == -1:
		return 1 << 30
	}
	return r.TopK
}

// samplingLegacyArrays is §8 "the single pass equals the legacy one array
// per field construction, bit for bit" (§10 row 8), against arrays rebuilt
// here: F is [temperatures | top_ps | min_ps] of float32(normalised value),
// top_k the normalised int32, seeds the request's seed or 42, and nil
// exactly when not deterministic.
func samplingLegacyArrays(_ spec.Limits, in spec.SamplingPackInput, out spec.SamplingPackOutput) error {
	bs := len(in.Requests)
	if len(out.F) != 3*bs || len(out.TopK) != bs {
		return fmt.Errorf("len(f)=%d len(top_k)=%d, want %d and %d", len(out.F), len(out.TopK), 3*bs, bs)
	}
	if (out.Seeds != nil) != in.Deterministic || (in.Deterministic && len(out.Seeds) != bs) {
		return fmt.Errorf("seeds %v with deterministic=%v and bs=%d", out.Seeds, in.Deterministic, bs)
	}
	for i, r := range in.Requests {
		for seg, x := range []float64{normTemperature(r), r.TopP, r.MinP} {
			if got, want := math.Float32bits(out.F[seg*bs+i]), math.Float32bits(float32(x)); got != want {
				return fmt.Errorf("f[%d] bits %#08x, want float32(%v) = %#08x", seg*bs+i, got, x, want)
			}
		}
		if want := int32(normTopK(r)); out.TopK[i] != want {
			return fmt.Errorf("top_k[%d] = %d, want %d", i, out.TopK[i], want)
		}
		if in.Deterministic {
			want := int64(42)
			if r.SamplingSeed != nil {
				want = *r.SamplingSeed
			}
			if out.Seeds[i] != want {
				return fmt.Errorf("seeds[%d] = %d, want %d", i, out.Seeds[i], want)
			}
		}
	}
	return nil
}

// samplingRoundToNearestEven is §8 "float32 conversion is IEEE
// round-to-nearest-even": each stored value equals the software RNE of
// math/big (not the hardware conversion the twins use) of its source.
func samplingRoundToNearestEven(_ spec.Limits, in spec.SamplingPackInput, out spec.SamplingPackOutput) error {
	bs := len(in.Requests)
	for i, r := range in.Requests {
		for seg, x := range []float64{normTemperature(r), r.TopP, r.MinP} {
			want, _ := new(big.Float).SetMode(big.ToNearestEven).SetFloat64(x).Float32()
			if got := out.F[seg*bs+i]; math.Float32bits(got) != math.Float32bits(want) {
				return fmt.Errorf("f[%d] = %v (%#08x), want RNE(%v) = %v (%#08x)",
					seg*bs+i, got, math.Float32bits(got), x, want, math.Float32bits(want))
			}
		}
	}
	return nil
}

// samplingTopPEdge is §8's edge test: a top_p below 1 that float32 rounds
// to 1 (1 − 1e-12) is stored as 1.0f, yet need_top_p_sampling is true.
func samplingTopPEdge(_ spec.Limits, in spec.SamplingPackInput, out spec.SamplingPackOutput) error {
	bs := len(in.Requests)
	for i, r := range in.Requests {
		if r.TopP != 1 && float32(r.TopP) == 1 {
			if out.F[bs+i] != 1 || !out.NeedTopPSampling {
				return fmt.Errorf("top_p[%d] = %v: stored %v, need_top_p_sampling %v; want 1.0f and true", i, r.TopP, out.F[bs+i], out.NeedTopPSampling)
			}
		}
	}
	return nil
}

// samplingMinPEdge is the same rule for min_p (§8: flags from the float64
// sources): a positive min_p below float32's range is stored as 0f, yet
// need_min_p_sampling is true.
func samplingMinPEdge(_ spec.Limits, in spec.SamplingPackInput, out spec.SamplingPackOutput) error {
	bs := len(in.Requests)
	for i, r := range in.Requests {
		if r.MinP > 0 && float32(r.MinP) == 0 {
			if out.F[2*bs+i] != 0 || !out.NeedMinPSampling {
				return fmt.Errorf("min_p[%d] = %v: stored %v, need_min_p_sampling %v; want 0f and true", i, r.MinP, out.F[2*bs+i], out.NeedMinPSampling)
			}
		}
	}
	return nil
}

// samplingFlagDefinitions is §8's flag definitions over the float64 source
// values, re-derived here: is_all_greedy = ∀ top_k ≤ 1, need_top_p = ∃
// top_p ≠ 1, need_top_k = ∃ top_k ≠ 1<<30, need_min_p = ∃ min_p > 0 (so an
// empty batch is greedy and needs nothing).
func samplingFlagDefinitions(_ spec.Limits, in spec.SamplingPackInput, out spec.SamplingPackOutput) error {
	want := [4]bool{true, false, false, false}
	for _, r := range in.Requests {
		k := normTopK(r)
		want[0] = want[0] && k <= 1
		want[1] = want[1] || r.TopP != 1
		want[2] = want[2] || k != 1<<30
		want[3] = want[3] || r.MinP > 0
	}
	got := [4]bool{out.IsAllGreedy, out.NeedTopPSampling, out.NeedTopKSampling, out.NeedMinPSampling}
	if got != want {
		return fmt.Errorf("flags [greedy top_p top_k min_p] = %v, want %v", got, want)
	}
	return nil
}

// samplingViewsDisjoint is §8 "writing through one view never changes
// another": on a copy of the buffer, overwriting a whole view, and
// appending to it, leaves the other two views as they were.
func samplingViewsDisjoint(_ spec.Limits, _ spec.SamplingPackInput, out spec.SamplingPackOutput) error {
	views := []func(spec.SamplingPackOutput) []float32{
		spec.SamplingPackOutput.Temperatures, spec.SamplingPackOutput.TopPs, spec.SamplingPackOutput.MinPs,
	}
	names := []string{"temperatures", "top_ps", "min_ps"}
	for w := range views {
		c := out
		c.F = slices.Clone(out.F)
		v := views[w](c)
		for j := range v {
			v[j] = -7
		}
		if grown := append(v, -7); grown[len(v)] != -7 {
			return fmt.Errorf("append to %s lost its element", names[w])
		}
		for o := range views {
			if o != w && !slices.Equal(views[o](c), views[o](out)) {
				return fmt.Errorf("writing %s changed %s: %v, was %v", names[w], names[o], views[o](c), views[o](out))
			}
		}
	}
	return nil
}
