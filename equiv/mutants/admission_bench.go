package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// BenchL2HitsAsL1 is A3-B1: the bench counted L2 host hits as L1 cached
// tokens, so no load-back ran and no fake L2 capacity was consumed; with no
// L2 capacity both A3.2 requests still looked 4096-token cached. A wrapper:
// the shared bench interpreter over fast's production round and estimator
// (as fast.AdmissionBench) with the historic request mapping.
func BenchL2HitsAsL1() equiv.Killable {
	return &equiv.Mutant[spec.AdmissionBenchInput, spec.AdmissionBenchOutput]{
		Spec:    equiv.AdmissionBench(),
		ID:      "bench-l2-hits-as-l1",
		Section: "admission-serving.md §A3.7 A3-B1",
		About:   "L2 host hits counted as L1 cached (no load-back, no capacity consumed): with fake_l2_load_back_capacity 0, b stops on cp_max_total_cached_tokens instead of being chunked to 4032 with cached 0",
		Fn: func(lim spec.Limits, in spec.AdmissionBenchInput) (spec.AdmissionBenchOutput, error) {
			return ref.RunAdmissionBench(lim, in, spec.BenchDriver{Round: fast.AdmissionRound, Estimate: fast.EstimateBuffers, Map: l2HitsAsL1})
		},
		Scenario: "equiv/testdata/bench_bench-l2-hits-as-l1.txt",
	}
}

// l2HitsAsL1 is A3-B1's request mapping: the host hit folded into the L1
// prefix, so no load-back happens and no fake L2 capacity is consumed.
func l2HitsAsL1(r spec.BenchRequest) spec.Request {
	q := ref.MapBenchRequest(r)
	q.L1Prefix, q.HostHit = r.L1CachedTokens+r.L2HostHitTokens, 0
	return q
}
