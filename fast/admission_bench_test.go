package fast_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// admissionQueueA2 is BenchmarkAdmissionRound1000's queue with the buffer
// gate on A2's real estimator (A2.5's context at CP size 8) instead of the
// linear stand-in.
func admissionQueueA2(n int) spec.AdmissionRoundInput {
	in := catalog.AdmissionQueue(n, true)
	ctx := catalog.EstimatorA25Context(8)
	in.Config.CP.BufferModel, in.Config.CP.EstimatorContext = nil, &ctx
	return in
}

// TestAdmissionRoundA2EstimatorMatchesRef: the incremental estimator on
// the fast side prices every candidate as the reference's
// EstimateBuffers over the whole batch does, with the gate binding part
// way through the queue, and allocates per round, not per decision.
func TestAdmissionRoundA2EstimatorMatchesRef(t *testing.T) {
	in := admissionQueueA2(300)
	all, err := ref.AdmissionRound(spec.DefaultLimits(), in)
	if err != nil || len(all.Admitted) != 300 {
		t.Fatalf("unbounded gate: %d admitted, %v", len(all.Admitted), err)
	}
	limit := int64(3 << 30) // binds inside the queue
	in.Config.CP.MaxBufferSizeBytes = &limit
	want, werr := ref.AdmissionRound(spec.DefaultLimits(), in)
	got, gerr := fast.AdmissionRound(spec.DefaultLimits(), in)
	if werr != nil || gerr != nil || want.Stop.Detail != spec.DetailCPMaxBufferSize {
		t.Fatalf("ref %v (stop %+v), fast %v: want the buffer gate to stop the round", werr, want.Stop, gerr)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("fast differs from ref (-ref +fast):\n%s", d)
	}
	big := admissionQueueA2(1000)
	if n := testing.AllocsPerRun(5, func() { _, _ = fast.AdmissionRound(spec.DefaultLimits(), big) }); n > 40 {
		t.Errorf("a 1,000-request round on A2 allocated %v times, want a per-round bound (<= 40)", n)
	}
}

// BenchmarkAdmissionRound1000A2 is BenchmarkAdmissionRound1000 with the
// real A2 estimator on the buffer gate (target: <= 1 µs per decision).
func BenchmarkAdmissionRound1000A2(b *testing.B) {
	in := admissionQueueA2(1000)
	lim := spec.DefaultLimits()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fast.AdmissionRound(lim, in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/req")
}
