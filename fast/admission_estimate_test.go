package fast_test

import (
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// estimateShape is the catalog's cp8-bs64 benchmark input.
func estimateShape(t testing.TB, name string) spec.AdmissionEstimateInput {
	t.Helper()
	for _, sh := range catalog.AdmissionEstimate().Shapes {
		if sh.Name == name {
			return sh.Make()
		}
	}
	t.Fatalf("no shape %s", name)
	return spec.AdmissionEstimateInput{}
}

// TestAdmissionEstimateFastPath: the fast twin walks each request once in
// closed form (no per-request layout, no big integers), so a whole batch
// costs a fixed handful of allocations (estimator, two rank sums, the
// per-rank list, the gate), however many requests it holds.
func TestAdmissionEstimateFastPath(t *testing.T) {
	in := estimateShape(t, "cp8-bs64-high-hit")
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := fast.AdmissionEstimate(spec.DefaultLimits(), in); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 6 {
		t.Errorf("fast.AdmissionEstimate: %.0f allocations for 64 requests, want <= 6", allocs)
	}
}

// TestBufferEstimatorPricesWithoutAllocating: the adder's per-candidate
// question (A1.9 C5) allocates nothing and leaves the batch unchanged.
func TestBufferEstimatorPricesWithoutAllocating(t *testing.T) {
	in := estimateShape(t, "cp8-bs64-high-hit")
	est, err := fast.NewBufferEstimator(in.Context)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range in.Requests[:63] {
		if err := est.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	last := in.Requests[63]
	var total int64
	allocs := testing.AllocsPerRun(100, func() {
		if total, err = est.TotalWith(last); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("TotalWith: %.0f allocations, want 0", allocs)
	}
	want, err := ref.EstimateBuffers(in.Context, in.Requests)
	if err != nil || total != want.TotalBytes || est.Len() != 63 {
		t.Errorf("TotalWith = %d (len %d), ref %d (%v)", total, est.Len(), want.TotalBytes, err)
	}
}

// BenchmarkEstimateTotalWith is the admission hot path's estimator cost:
// pricing one more request against a 63-request CP-8 batch (A1.9 C5).
func BenchmarkEstimateTotalWith(b *testing.B) {
	in := estimateShape(b, "cp8-bs64-high-hit")
	est, err := fast.NewBufferEstimator(in.Context)
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range in.Requests[:63] {
		if err := est.Add(r); err != nil {
			b.Fatal(err)
		}
	}
	last := in.Requests[63]
	for b.Loop() {
		if _, err := est.TotalWith(last); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEstimateBatch64 estimates the cp8-bs64 batch from scratch,
// fast twin and reference.
func BenchmarkEstimateBatch64(b *testing.B) {
	in := estimateShape(b, "cp8-bs64-high-hit")
	for _, impl := range []struct {
		name string
		f    func(spec.Limits, spec.AdmissionEstimateInput) (spec.AdmissionEstimateOutput, error)
	}{{"fast", fast.AdmissionEstimate}, {"ref", ref.AdmissionEstimate}} {
		b.Run(impl.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := impl.f(spec.DefaultLimits(), in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
