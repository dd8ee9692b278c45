package catalog

import (
	"fmt"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// AdmissionRound registers admission.round (docs/spec/admission-serving.md §A1): one
// PrefillAdder queue walk with its stop reason and budget snapshot.
func AdmissionRound() *Op[spec.AdmissionRoundInput, spec.AdmissionRoundOutput] {
	return &Op[spec.AdmissionRoundInput, spec.AdmissionRoundOutput]{
		OpName:  "admission.round",
		SpecRef: "admission-serving.md §A1",
		Summary: "prefill admission: walk the waiting queue under total, input, chunk and CP shared-KV budgets; the batch, stop reason and budgets",
		Ref:     ref.AdmissionRound,
		Fast:    fast.AdmissionRound,
		Sample:  admissionSample(),
		Shapes: []Shape[spec.AdmissionRoundInput]{
			{Name: "queue-1000-all-admitted", Make: func() spec.AdmissionRoundInput { return AdmissionQueue(1000, false) }},
			{Name: "queue-1000-cp-gates", Make: func() spec.AdmissionRoundInput { return AdmissionQueue(1000, true) }},
		},
	}
}

func ptr(v int64) *int64 { return &v }

// admissionSample is §A1.12 E6, the seed's bench case.
func admissionSample() spec.AdmissionRoundInput {
	return spec.AdmissionRoundInput{
		Config: spec.AdderConfig{PageSize: 64, NewTokenRatio: 0.7, MaxPrefillTokens: 16384, ChunkedPrefillSize: ptr(8192),
			MaxRunningRequests: 64, HierarchicalCache: true, CP: &spec.CPAdmission{MaxTotalCachedTokens: ptr(4096)}},
		Pool: spec.PoolState{Available: 100000},
		Queue: []spec.Request{{RID: "A", InputLen: 4160, MaxNewTokens: 16, HostHit: 4096},
			{RID: "B", InputLen: 4160, MaxNewTokens: 16, HostHit: 4096}},
	}
}

// AdmissionQueue is the performance shape: n requests, every one admitted
// (budgets sized to the queue), with L1 prefixes, some host hits and, when
// cp is set, every CP gate configured (and passing) including the buffer
// model, so each decision runs the whole §A1.6 path.
func AdmissionQueue(n int, cp bool) spec.AdmissionRoundInput {
	in := spec.AdmissionRoundInput{
		Config: spec.AdderConfig{PageSize: 64, NewTokenRatio: 0.7, MaxPrefillTokens: 1 << 36, MaxRunningRequests: int64(n) + 1},
		Pool:   spec.PoolState{Available: 1 << 36, Evictable: 1 << 30},
		Queue:  make([]spec.Request, n),
	}
	if cp {
		in.Config.CP = &spec.CPAdmission{MaxRequests: ptr(int64(n) + 1), MaxTotalExtendTokens: ptr(1 << 36), MaxTotalCachedTokens: ptr(1 << 36),
			MaxBufferSizeBytes: ptr(1 << 60), BufferModel: &spec.LinearBuffer{PerRequest: 4096, PerPrefixToken: 656, PerExtendToken: 788}}
	}
	for i := range in.Queue {
		l1 := int64(64 * (i % 8))
		in.Queue[i] = spec.Request{RID: fmt.Sprintf("r%d", i), InputLen: l1 + int64(64*(i%4)) + 500 + int64(i%97), MaxNewTokens: int64(16 + i%300),
			L1Prefix: l1, L1PrefixEvictable: l1 / 2, HostHit: int64(64 * (i % 4))}
	}
	return in
}
