package catalog

import (
	"math/rand/v2"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// SamplingPack registers sampling.pack (docs/spec/transfer.md §8).
func SamplingPack() *Op[spec.SamplingPackInput, spec.SamplingPackOutput] {
	seven := int64(7)
	return &Op[spec.SamplingPackInput, spec.SamplingPackOutput]{
		OpName:  "sampling.pack",
		SpecRef: "transfer.md §8",
		Summary: "a batch's sampling params packed into one float32 buffer plus top_k, seeds and the four need/greedy flags",
		Ref:     ref.SamplingPack,
		Fast:    fast.SamplingPack,
		Sample: spec.SamplingPackInput{Requests: []spec.SamplingRequest{
			{Temperature: 0.7, TopP: 0.9, TopK: -1, MinP: 0},
			{Temperature: 0, TopP: 1, TopK: -1, MinP: 0},
			{Temperature: 1.2, TopP: 1, TopK: 40, MinP: 0.05, SamplingSeed: &seven},
		}, Deterministic: true},
		Shapes: []Shape[spec.SamplingPackInput]{
			{Name: "bs8", Make: func() spec.SamplingPackInput { return servingMix(8, false) }},
			{Name: "bs32", Make: func() spec.SamplingPackInput { return servingMix(32, false) }},
			{Name: "bs200", Make: func() spec.SamplingPackInput { return servingMix(200, false) }},
			{Name: "bs200-deterministic", Make: func() spec.SamplingPackInput { return servingMix(200, true) }},
		},
	}
}

// servingMix is a decode batch as a chat server sees it: about a quarter
// greedy (temperature 0), half on common chat presets (temperature
// 0.6–1.0, top_p 0.8–0.95, top_k -1/20/40/50, some min_p), the rest on
// all-defaults (temperature 1, top_p 1, top_k -1, min_p 0); a few carry a
// seed.
func servingMix(bs int, deterministic bool) spec.SamplingPackInput {
	rng := rand.New(rand.NewPCG(8, uint64(bs)))
	temps := []float64{0.6, 0.7, 0.8, 1.0}
	topPs := []float64{0.8, 0.9, 0.95, 1}
	topKs := []int64{-1, 20, 40, 50}
	minPs := []float64{0, 0, 0.05, 0.1}
	reqs := make([]spec.SamplingRequest, bs)
	for i := range reqs {
		var r spec.SamplingRequest
		switch u := rng.IntN(4); {
		case u == 0:
			r = spec.SamplingRequest{Temperature: 0, TopP: 1, TopK: -1}
		case u <= 2:
			r = spec.SamplingRequest{Temperature: temps[rng.IntN(4)], TopP: topPs[rng.IntN(4)], TopK: topKs[rng.IntN(4)], MinP: minPs[rng.IntN(4)]}
		default:
			r = spec.SamplingRequest{Temperature: 1, TopP: 1, TopK: -1}
		}
		if rng.IntN(8) == 0 {
			seed := rng.Int64()
			r.SamplingSeed = &seed
		}
		reqs[i] = r
	}
	return spec.SamplingPackInput{Requests: reqs, Deterministic: deterministic}
}
