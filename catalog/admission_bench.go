package catalog

import (
	"fmt"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// AdmissionBench registers admission.bench (docs/spec/admission-serving.md §A3): the
// offline admission benchmark, a thin driver around admission.round.
func AdmissionBench() *Op[spec.AdmissionBenchInput, spec.AdmissionBenchOutput] {
	return &Op[spec.AdmissionBenchInput, spec.AdmissionBenchOutput]{
		OpName:  "admission.bench",
		SpecRef: "admission-serving.md §A3",
		Summary: "offline admission benchmark: rounds of prefill admission over a request list with fake L1/L2 capacity; batches, stop reasons, L2 load-back use and buffer estimates",
		Ref:     ref.AdmissionBench,
		Fast:    fast.AdmissionBench,
		Sample:  AdmissionBenchA32(),
		Shapes: []Shape[spec.AdmissionBenchInput]{
			{Name: "1000-requests-cp-buffer-gate", Make: func() spec.AdmissionBenchInput { return admissionBenchQueue(1000) }},
		},
	}
}

// AdmissionBenchA32 is A3.2's example input (deterministic): two requests
// with 4096-token host hits under a 4096-token cached budget.
func AdmissionBenchA32() spec.AdmissionBenchInput {
	size := spec.ByteSize("2GiB")
	return spec.AdmissionBenchInput{
		PageSize: 64, CPSize: 8, MaxPrefillTokens: 16384, ChunkedPrefillSize: ptr(8192),
		NewTokenRatio: 0.7, MaxRunningRequests: 64, HierarchicalCache: true,
		FakeL1: spec.PoolState{Available: 400000}, FakeL2LoadBackCapacity: 65536,
		CP: &spec.BenchCP{MaxRequests: ptr(10), MaxTotalCachedTokens: ptr(4096), MaxBufferSize: &size,
			Estimator: &spec.BenchEstimator{VocabSize: ptr(154880), TransferEnabled: true, TransferLayers: 79}},
		MaxRounds: 100, Deterministic: true,
		Requests: []spec.BenchRequest{
			{RID: "a", L2HostHitTokens: 4096, ExtendTokens: 64, MaxNewTokens: 16},
			{RID: "b", L2HostHitTokens: 4096, ExtendTokens: 64, MaxNewTokens: 16},
		},
	}
}

// admissionBenchQueue is the performance shape: n requests with L1 and L2
// hits under every CP gate, the real estimator on the buffer gate.
func admissionBenchQueue(n int) spec.AdmissionBenchInput {
	in := AdmissionBenchA32()
	in.FakeL1 = spec.PoolState{Available: 1 << 22, Evictable: 1 << 22}
	in.CP.MaxTotalCachedTokens = ptr(64 << 10)
	in.MaxRounds = spec.MaxBenchRounds
	in.Requests = make([]spec.BenchRequest, n)
	for i := range in.Requests {
		in.Requests[i] = spec.BenchRequest{RID: fmt.Sprintf("r%d", i), L1CachedTokens: int64(512 * (i % 8)),
			L2HostHitTokens: int64(512 * (i % 3)), ExtendTokens: int64(64 + (i*977)%6000), MaxNewTokens: int64(16 + i%300)}
	}
	return in
}
