package equiv_test

import (
	"bytes"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestBufferEstimatorTracksRef drives fast.BufferEstimator (the adder's
// incremental estimator, A1.9 C5) with one sequence of steps and, after
// every step, compares it with ref.EstimateBuffers on the committed batch:
// With and TotalWith price a candidate without changing the batch, Add
// commits it, a refused Add (negative length) leaves the batch as it was,
// Reset empties it. Lengths sometimes reach int64's edge, so overflow
// errors are compared too.
func TestBufferEstimatorTracksRef(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ctx := equiv.EstimateContextGen(t)
		est, err := fast.NewBufferEstimator(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var batch []spec.EstimateReq
		length := rapid.OneOf(
			rapid.Int64Range(0, 300), rapid.Int64Range(0, 1<<20),
			rapid.Int64Range(-3, -1), rapid.Int64Range(math.MaxInt64/8, math.MaxInt64),
		)
		for range rapid.IntRange(1, 12).Draw(t, "steps") {
			r := spec.EstimateReq{PrefixLen: length.Draw(t, "prefix_len"), ExtendLen: length.Draw(t, "extend_len")}
			with := append(append([]spec.EstimateReq{}, batch...), r)
			want, werr := ref.EstimateBuffers(ctx, with)
			got, gerr := est.With(r)
			sameResult(t, "With", want, werr, got, gerr)
			total, terr := est.TotalWith(r)
			sameResult(t, "TotalWith", want.TotalBytes, werr, total, terr)
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 0:
				est.Reset()
				batch = nil
			case 1, 2, 3:
				before, berr := est.Estimate()
				if aerr := est.Add(r); aerr != nil {
					after, afterErr := est.Estimate()
					sameResult(t, "estimate after a refused Add", before, berr, after, afterErr)
					if ref.CheckEstimateReq(len(batch), r) == nil {
						t.Fatalf("Add refused a valid request: %v", aerr)
					}
					continue
				}
				batch = with
			}
			if est.Len() != len(batch) {
				t.Fatalf("Len %d, batch %d", est.Len(), len(batch))
			}
			want, werr = ref.EstimateBuffers(ctx, batch)
			got, gerr = est.Estimate()
			sameResult(t, "Estimate", want, werr, got, gerr)
		}
	})
}

func sameResult[T any](t *rapid.T, what string, want T, werr error, got T, gerr error) {
	t.Helper()
	if w, g := catalog.Canonical(want, werr), catalog.Canonical(got, gerr); !bytes.Equal(w, g) {
		t.Fatalf("%s:\n ref  %s\n fast %s", what, w, g)
	}
}

// TestEstimatorTwinsRejectNonFiniteCapsAlike: a NaN or ±Inf GiB cap cannot
// travel in JSON; both twins reject it with the same canonical error.
func TestEstimatorTwinsRejectNonFiniteCapsAlike(t *testing.T) {
	for _, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		in := spec.AdmissionEstimateInput{Context: catalog.EstimatorA25Context(2), Requests: []spec.EstimateReq{{PrefixLen: 1, ExtendLen: 1}}}
		in.Context.Chunk.MaxGB = &x
		rout, rerr := ref.AdmissionEstimate(spec.DefaultLimits(), in)
		fout, ferr := fast.AdmissionEstimate(spec.DefaultLimits(), in)
		if rerr == nil || !bytes.Equal(catalog.Canonical(rout, rerr), catalog.Canonical(fout, ferr)) {
			t.Errorf("max_gb %v: ref %v, fast %v", x, rerr, ferr)
		}
	}
}
