package equiv_test

import (
	"slices"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestAdmissionEstimatePropertiesCatchWrongEstimates: each A2.6 property
// (and the C5 gate's) holds on ref's estimate and fails on an estimate
// broken the way it guards against.
func TestAdmissionEstimatePropertiesCatchWrongEstimates(t *testing.T) {
	limit, gb := int64(1<<20), 0.0001
	plain := spec.AdmissionEstimateInput{
		Context:            catalog.EstimatorA25Context(2),
		Requests:           []spec.EstimateReq{{PrefixLen: 100, ExtendLen: 10}, {PrefixLen: 5, ExtendLen: 7}},
		MaxBufferSizeBytes: &limit,
	}
	capped := plain
	capped.Context.Chunk.MaxGB = &gb // 107,374 bytes
	capped.Requests = []spec.EstimateReq{{PrefixLen: 100000, ExtendLen: 4000}}
	cases := []struct {
		prop    string
		in      spec.AdmissionEstimateInput
		breakIt func(*spec.AdmissionEstimateOutput)
	}{
		// A term off by one byte.
		{"A2.4-terms", plain, func(o *spec.AdmissionEstimateOutput) { o.Estimate.TotalBytes++ }},
		// A query row credited to the wrong rank.
		{"A2.6.5-zigzag-ranks", plain, func(o *spec.AdmissionEstimateOutput) { o.Estimate.PerRank[1].QRows++ }},
		// A total above what one more request would cost.
		{"A2.6.1-monotone", plain, func(o *spec.AdmissionEstimateOutput) { o.Estimate.TotalBytes = 1 << 40 }},
		// A peak beyond the full-request product (A2-B2 and worse).
		{"A2.6.2-full-product-bound", plain, func(o *spec.AdmissionEstimateOutput) { o.Estimate.MQALogitsPeakBytes = 1 << 40 }},
		// An uncapped peak below the 2-row capped one.
		{"A2.6.3-row-cap", plain, func(o *spec.AdmissionEstimateOutput) { o.Estimate.MQALogitsPeakBytes = 0 }},
		// Two rows where the cap allows one (2·4·102000 > 107,374 and > 4K).
		{"A2.6.4-gb-cap", capped, func(o *spec.AdmissionEstimateOutput) {
			r := &o.Estimate.PerRank[0]
			r.ChunkRows, r.PeakBytes = 2, 2*4*r.KRows
		}},
		// A result that is not ref's.
		{"A2.6.6-pure", plain, func(o *spec.AdmissionEstimateOutput) { o.Estimate.WorstRank = 0 }},
		// The second request admitted over the limit (1,399,436 > 1 MiB).
		{"C5-gate", plain, func(o *spec.AdmissionEstimateOutput) { o.Gate.Admit, o.Gate.Detail = true, "" }},
	}
	props := equiv.AdmissionEstimate().Props
	seen := map[string]bool{}
	for _, c := range cases {
		good, err := ref.AdmissionEstimate(spec.DefaultLimits(), c.in)
		if err != nil {
			t.Fatal(err)
		}
		if err := propHolds(t, props, c.prop, c.in, good); err != nil {
			t.Errorf("%s fails on ref's estimate: %v", c.prop, err)
		}
		bad := good
		bad.Estimate.PerRank = slices.Clone(good.Estimate.PerRank)
		if good.Gate != nil {
			g := *good.Gate
			bad.Gate = &g
		}
		c.breakIt(&bad)
		if propHolds(t, props, c.prop, c.in, bad) == nil {
			t.Errorf("%s holds on a broken estimate %+v", c.prop, bad)
		}
		seen[c.prop] = true
	}
	for _, p := range props {
		if !seen[p.Name] {
			t.Errorf("no broken estimate for property %s", p.Name)
		}
	}
}
