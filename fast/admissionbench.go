package fast

import (
	"github.com/kvtwin/kvtwin/internal/benchfault"
	"github.com/kvtwin/kvtwin/ref"
)

// AdmissionBench is the twin of ref.AdmissionBench (docs/spec/admission-serving.md
// §A3): the shared bench interpreter over the fast round (whose buffer
// gate prices candidates with the incremental A2 estimator) and the fast
// EstimateBuffers.
func AdmissionBench(lim ref.Limits, in ref.BenchInput) (ref.BenchOutput, error) {
	return AdmissionBenchWithFaults(benchfault.Faults{})(lim, in)
}

// AdmissionBenchWithFaults is AdmissionBench with historic bugs put back,
// for the bug zoo only (benchfault is internal to kvtwin).
func AdmissionBenchWithFaults(f benchfault.Faults) func(ref.Limits, ref.BenchInput) (ref.BenchOutput, error) {
	mapReq := ref.MapBenchRequest
	if f.L2AsL1 {
		mapReq = l2AsL1
	}
	d := ref.BenchDriver{Round: AdmitRound, Estimate: EstimateBuffers, Map: mapReq}
	return func(lim ref.Limits, in ref.BenchInput) (ref.BenchOutput, error) {
		return ref.RunAdmissionBench(lim, in, d)
	}
}

// l2AsL1 is A3-B1's mapping: the host hit folded into the L1 prefix, so
// no load-back happens and no fake L2 capacity is consumed.
func l2AsL1(r ref.BenchRequest) ref.Request {
	q := ref.MapBenchRequest(r)
	q.L1Prefix, q.HostHit = r.L1CachedTokens+r.L2HostHitTokens, 0
	return q
}
