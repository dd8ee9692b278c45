package fast_test

import (
	"errors"
	"math"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestAdmissionRoundAllocatesPerRoundNotPerRequest checks the fast path was
// taken: a 1,000-request round with every CP gate running allocates a
// bounded number of times (the rid set, the batch and the estimator view),
// not once per decision as the reference's per-read recomputation does.
func TestAdmissionRoundAllocatesPerRoundNotPerRequest(t *testing.T) {
	in := catalog.AdmissionQueue(1000, true)
	out, err := fast.AdmissionRound(spec.DefaultLimits(), in)
	if err != nil || len(out.Admitted) != 1000 || out.Stop.Detail != spec.DetailQueueExhausted {
		t.Fatalf("shape no longer admits the whole queue: %d admitted, stop %+v, %v", len(out.Admitted), out.Stop, err)
	}
	if n := testing.AllocsPerRun(5, func() { _, _ = fast.AdmissionRound(spec.DefaultLimits(), in) }); n > 40 {
		t.Errorf("a 1,000-request round allocated %v times, want a per-round bound (<= 40)", n)
	}
}

// BenchmarkAdmissionRound1000 is the target: one admission
// decision per request on a 1,000-request queue, every CP gate and the
// buffer model evaluated, all requests admitted (fast <= 1 µs per decision).
func BenchmarkAdmissionRound1000(b *testing.B) {
	in := catalog.AdmissionQueue(1000, true)
	lim := spec.DefaultLimits()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fast.AdmissionRound(lim, in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/req")
}

// BenchmarkAdmissionRound1000Ref is the reference on the same queue, for
// the ratio (it recomputes every budget from the batch on each read).
func BenchmarkAdmissionRound1000Ref(b *testing.B) {
	in := catalog.AdmissionQueue(1000, true)
	lim := spec.DefaultLimits()
	for b.Loop() {
		if _, err := ref.AdmissionRound(lim, in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/req")
}

// TestAdmissionBufferOverflowMatchesRef: the incremental linear buffer
// model fails with the reference's error (same batch index) when the
// batch's estimate overflows int64, rather than wrapping.
func TestAdmissionBufferOverflowMatchesRef(t *testing.T) {
	maxBuf := int64(math.MaxInt64)
	in := spec.AdmissionRoundInput{
		Config: spec.AdderConfig{PageSize: 1, MaxPrefillTokens: 1 << 20, MaxRunningRequests: 1000,
			CP: &spec.CPAdmission{MaxBufferSizeBytes: &maxBuf, BufferModel: &spec.LinearBuffer{PerPrefixToken: spec.MaxLinearBufferCoeff}}},
		Pool: spec.PoolState{Available: 1 << 20},
	}
	for i := range 200 {
		in.Queue = append(in.Queue, spec.Request{RID: string(rune('A'+i%26)) + string(rune('a'+i/26)), InputLen: spec.MaxAdmitTokens, L1Prefix: spec.MaxAdmitTokens - 1})
	}
	_, rerr := ref.AdmissionRound(spec.DefaultLimits(), in)
	_, ferr := fast.AdmissionRound(spec.DefaultLimits(), in)
	if !errors.Is(ferr, spec.ErrOverflow) || rerr == nil || rerr.Error() != ferr.Error() {
		t.Errorf("ref %v, fast %v: want the same overflow error", rerr, ferr)
	}
}
