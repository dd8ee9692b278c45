package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/internal/benchfault"
	"github.com/kvtwin/kvtwin/ref"
)

// BenchL2HitsAsL1 is A3-B1: the bench counted L2 host hits as L1 cached
// tokens, so no load-back ran and no fake L2 capacity was consumed; with no
// L2 capacity both A3.2 requests still looked 4096-token cached.
func BenchL2HitsAsL1() equiv.Killable {
	return &equiv.Mutant[ref.BenchInput, ref.BenchOutput]{
		Spec:     equiv.AdmissionBench(),
		ID:       "bench-l2-hits-as-l1",
		Section:  "admission-serving.md §A3.7 A3-B1",
		About:    "L2 host hits counted as L1 cached (no load-back, no capacity consumed): with fake_l2_load_back_capacity 0, b stops on cp_max_total_cached_tokens instead of being chunked to 4032 with cached 0",
		Fn:       fast.AdmissionBenchWithFaults(benchfault.Faults{L2AsL1: true}),
		Scenario: "equiv/testdata/bench_bench-l2-hits-as-l1.txt",
	}
}
