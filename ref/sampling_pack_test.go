package ref_test

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

func workedExample() []spec.SamplingRequest {
	seven := int64(7)
	return []spec.SamplingRequest{
		{Temperature: 0.7, TopP: 0.9, TopK: -1, MinP: 0},
		{Temperature: 0, TopP: 1, TopK: -1, MinP: 0},
		{Temperature: 1.2, TopP: 1, TopK: 40, MinP: 0.05, SamplingSeed: &seven},
	}
}

// TestSamplingPackWorkedExample pins docs/spec/transfer.md §8's example: top_k
// normalises to [1<<30, 1, 40], the greedy request's temperature to 1, every
// flag but is_all_greedy is set, and deterministic seeds default to 42.
func TestSamplingPackWorkedExample(t *testing.T) {
	want := spec.SamplingPackOutput{
		F:                []float32{0.7, 1, 1.2, 0.9, 1, 1, 0, 0, 0.05},
		TopK:             []int32{1073741824, 1, 40},
		Seeds:            []int64{42, 42, 7},
		IsAllGreedy:      false,
		NeedTopPSampling: true, NeedTopKSampling: true, NeedMinPSampling: true,
	}
	got, err := ref.SamplingPack(spec.DefaultLimits(), spec.SamplingPackInput{Requests: workedExample(), Deterministic: true})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("deterministic (-want +got):\n%s", d)
	}
	got, err = ref.SamplingPack(spec.DefaultLimits(), spec.SamplingPackInput{Requests: workedExample()})
	if err != nil {
		t.Fatal(err)
	}
	if got.Seeds != nil {
		t.Errorf("seeds = %v without deterministic inference, want nil (JSON null)", got.Seeds)
	}
}

// TestSamplingPackTopPJustBelowOneStillNeedsTopP is §8's edge test.
func TestSamplingPackTopPJustBelowOneStillNeedsTopP(t *testing.T) {
	got, err := ref.SamplingPack(spec.DefaultLimits(), spec.SamplingPackInput{
		Requests: []spec.SamplingRequest{{Temperature: 0.7, TopP: 1 - 1e-12, TopK: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	if got.TopPs()[0] != 1.0 || !got.NeedTopPSampling {
		t.Errorf("top_p 1-1e-12: stored %v, need_top_p %v; want 1.0f and true", got.TopPs()[0], got.NeedTopPSampling)
	}
}

// TestSamplingPackEmptyBatchIsGreedyAndNeedsNothing pins §8's empty-batch
// rule and that the empty lists encode as [] (seeds too when deterministic).
func TestSamplingPackEmptyBatchIsGreedyAndNeedsNothing(t *testing.T) {
	got, err := ref.SamplingPack(spec.DefaultLimits(), spec.SamplingPackInput{Deterministic: true})
	if err != nil {
		t.Fatal(err)
	}
	want := spec.SamplingPackOutput{F: []float32{}, TopK: []int32{}, Seeds: []int64{}, IsAllGreedy: true}
	if d := cmp.Diff(want, got); d != "" || got.F == nil || got.TopK == nil || got.Seeds == nil {
		t.Errorf("empty batch (-want +got):\n%s (nil lists: f %v top_k %v seeds %v)", d, got.F == nil, got.TopK == nil, got.Seeds == nil)
	}
}

// TestSamplingGreedyThresholdIsOneMicro pins the normalisation boundary:
// temperature 1e-6 samples, the float64 just below it is greedy (§8).
func TestSamplingGreedyThresholdIsOneMicro(t *testing.T) {
	at, err := ref.NormalizeSamplingRequest(0, spec.SamplingRequest{Temperature: 1e-6, TopP: 1, TopK: 5})
	if err != nil || at.Temperature != 1e-6 || at.TopK != 5 {
		t.Errorf("temperature 1e-6: got %+v, %v; want it kept with top_k 5", at, err)
	}
	below, err := ref.NormalizeSamplingRequest(0, spec.SamplingRequest{Temperature: math.Nextafter(1e-6, 0), TopP: 1, TopK: 0})
	if err != nil || below.Temperature != 1 || below.TopK != 1 {
		t.Errorf("temperature just below 1e-6: got %+v, %v; want greedy (1, top_k 1) even with raw top_k 0", below, err)
	}
}

// TestSamplingTemperatureFloat32OverflowThreshold pins the [designed]
// float32 bound: the largest accepted temperature is the last float64 that
// float32 rounds to MaxFloat32, and the next one is rejected.
func TestSamplingTemperatureFloat32OverflowThreshold(t *testing.T) {
	halfway := 0x1p128 - 0x1p103
	last := math.Nextafter(halfway, 0)
	if float32(last) != math.MaxFloat32 || !math.IsInf(float64(float32(halfway)), 1) {
		t.Fatalf("threshold arithmetic: float32(%v) = %v, float32(%v) = %v", last, float32(last), halfway, float32(halfway))
	}
	if _, err := ref.NormalizeSamplingRequest(0, spec.SamplingRequest{Temperature: last, TopP: 1, TopK: -1}); err != nil {
		t.Errorf("temperature %v (float32 MaxFloat32) rejected: %v", last, err)
	}
	if _, err := ref.NormalizeSamplingRequest(0, spec.SamplingRequest{Temperature: halfway, TopP: 1, TopK: -1}); !errors.Is(err, spec.ErrNonFinite) {
		t.Errorf("temperature %v (float32 +Inf) gave %v, want non_finite", halfway, err)
	}
}

// TestSamplingPackRejectsBadInputNamingFieldAndBound pins §8's verify rules,
// their order within a request, and the first bad request winning.
func TestSamplingPackRejectsBadInputNamingFieldAndBound(t *testing.T) {
	ok := spec.SamplingRequest{Temperature: 0.7, TopP: 0.9, TopK: -1}
	with := func(f func(*spec.SamplingRequest)) []spec.SamplingRequest {
		r := ok
		f(&r)
		return []spec.SamplingRequest{ok, r, {Temperature: -1, TopP: 1, TopK: -1}}
	}
	cases := []struct {
		name  string
		reqs  []spec.SamplingRequest
		want  *spec.Sentinel
		field string
		value any
	}{
		{"NaN temperature (passes upstream's < 0)", with(func(r *spec.SamplingRequest) { r.Temperature = math.NaN() }), spec.ErrNonFinite, "requests[1].temperature", "NaN"},
		{"+Inf temperature", with(func(r *spec.SamplingRequest) { r.Temperature = math.Inf(1) }), spec.ErrNonFinite, "requests[1].temperature", "+Inf"},
		{"temperature beyond float32", with(func(r *spec.SamplingRequest) { r.Temperature = 1e39 }), spec.ErrNonFinite, "requests[1].temperature", 1e39},
		{"negative temperature", with(func(r *spec.SamplingRequest) { r.Temperature = -1e-7 }), spec.ErrBadTemperature, "requests[1].temperature", -1e-7},
		{"-Inf top_p", with(func(r *spec.SamplingRequest) { r.TopP = math.Inf(-1) }), spec.ErrNonFinite, "requests[1].top_p", "-Inf"},
		{"top_p zero", with(func(r *spec.SamplingRequest) { r.TopP = 0 }), spec.ErrBadTopP, "requests[1].top_p", 0.0},
		{"top_p above one", with(func(r *spec.SamplingRequest) { r.TopP = math.Nextafter(1, 2) }), spec.ErrBadTopP, "requests[1].top_p", math.Nextafter(1, 2)},
		{"top_k zero", with(func(r *spec.SamplingRequest) { r.TopK = 0 }), spec.ErrBadTopK, "requests[1].top_k", int64(0)},
		{"top_k -2", with(func(r *spec.SamplingRequest) { r.TopK = -2 }), spec.ErrBadTopK, "requests[1].top_k", int64(-2)},
		{"top_k beyond int32", with(func(r *spec.SamplingRequest) { r.TopK = math.MaxInt32 + 1 }), spec.ErrTopKOverflow, "requests[1].top_k", int64(math.MaxInt32 + 1)},
		{"NaN min_p", with(func(r *spec.SamplingRequest) { r.MinP = math.NaN() }), spec.ErrNonFinite, "requests[1].min_p", "NaN"},
		{"negative min_p", with(func(r *spec.SamplingRequest) { r.MinP = -0.01 }), spec.ErrBadMinP, "requests[1].min_p", -0.01},
		{"min_p above one", with(func(r *spec.SamplingRequest) { r.MinP = 1.5 }), spec.ErrBadMinP, "requests[1].min_p", 1.5},
		{"temperature reported before top_p", with(func(r *spec.SamplingRequest) { r.Temperature, r.TopP = -1, 2 }), spec.ErrBadTemperature, "requests[1].temperature", -1.0},
		{"top_p reported before top_k", with(func(r *spec.SamplingRequest) { r.TopP, r.TopK = 2, 0 }), spec.ErrBadTopP, "requests[1].top_p", 2.0},
		{"top_k reported before min_p", with(func(r *spec.SamplingRequest) { r.TopK, r.MinP = 0, 2 }), spec.ErrBadTopK, "requests[1].top_k", int64(0)},
	}
	for _, c := range cases {
		_, err := ref.SamplingPack(spec.DefaultLimits(), spec.SamplingPackInput{Requests: c.reqs})
		ie, ok := spec.AsInputError(err)
		if !ok || !errors.Is(err, c.want) || ie.Field != c.field || ie.Value != c.value || ie.Bound == "" {
			t.Errorf("%s: got %v, want %s on %s = %v with a bound", c.name, err, c.want.Code(), c.field, c.value)
		}
	}
}

// TestSamplingViewsAreDisjointSegmentsOfF checks the three views are
// F's segments in [temperatures | top_ps | min_ps] order (§8, [designed]),
// share F's memory, and that appending to one cannot spill into the next.
func TestSamplingViewsAreDisjointSegmentsOfF(t *testing.T) {
	b := spec.SamplingPackOutput{F: []float32{1, 2, 3, 4, 5, 6}, TopK: []int32{1, 1}}
	if d := cmp.Diff([][]float32{{1, 2}, {3, 4}, {5, 6}}, [][]float32{b.Temperatures(), b.TopPs(), b.MinPs()}); d != "" {
		t.Fatalf("views (-want +got):\n%s", d)
	}
	b.TopPs()[0] = 30
	if b.F[2] != 30 {
		t.Errorf("TopPs is not a view of F: F = %v", b.F)
	}
	_ = append(b.Temperatures(), -1)
	_ = append(b.TopPs(), -1)
	if d := cmp.Diff([]float32{1, 2, 30, 4, 5, 6}, b.F); d != "" {
		t.Errorf("append through a view wrote into the next segment (-want +got):\n%s", d)
	}
}

func packed(t *testing.T, det bool) spec.SamplingPackOutput {
	t.Helper()
	b, err := ref.SamplingPack(spec.DefaultLimits(), spec.SamplingPackInput{Requests: workedExample(), Deterministic: det})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFilterSamplingIndexesAndKeepsFlags pins §8 filter: arrays indexed in
// keep order, flags carried over unchanged (not recomputed) even though
// the kept request alone would need neither top-p nor min-p.
func TestFilterSamplingIndexesAndKeepsFlags(t *testing.T) {
	b := packed(t, true)
	got, err := ref.FilterSampling(b, []int64{1, 1})
	if err != nil {
		t.Fatal(err)
	}
	want := spec.SamplingPackOutput{F: []float32{1, 1, 1, 1, 0, 0}, TopK: []int32{1, 1}, Seeds: []int64{42, 42},
		IsAllGreedy: false, NeedTopPSampling: true, NeedTopKSampling: true, NeedMinPSampling: true}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestMergeSamplingConcatenatesAndCombinesFlags pins §8 merge:
// is_all_greedy ANDed, need_* ORed, each segment concatenated.
func TestMergeSamplingConcatenatesAndCombinesFlags(t *testing.T) {
	greedy, err := ref.SamplingPack(spec.DefaultLimits(), spec.SamplingPackInput{Requests: []spec.SamplingRequest{{Temperature: 0, TopP: 1, TopK: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ref.MergeSampling(greedy, packed(t, false))
	if err != nil {
		t.Fatal(err)
	}
	want := spec.SamplingPackOutput{
		F:    []float32{1, 0.7, 1, 1.2, 1, 0.9, 1, 1, 0, 0, 0, 0.05},
		TopK: []int32{1, 1 << 30, 1, 40}, IsAllGreedy: false,
		NeedTopPSampling: true, NeedTopKSampling: true, NeedMinPSampling: true,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestFilterAndMergeResultsDoNotAliasTheSource is §8's "after filter/merge,
// mutating the packed buffer leaves the results unchanged".
func TestFilterAndMergeResultsDoNotAliasTheSource(t *testing.T) {
	b := packed(t, true)
	f, _ := ref.FilterSampling(b, []int64{0, 1, 2})
	m, _ := ref.MergeSampling(b, spec.SamplingPackOutput{F: []float32{}, TopK: []int32{}, Seeds: []int64{}})
	want := packed(t, true)
	for i := range b.F {
		b.F[i] = -1
	}
	b.TopK[0], b.Seeds[0] = -1, -1
	if d := cmp.Diff(want, f); d != "" {
		t.Errorf("filter result changed with its source (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want, m); d != "" {
		t.Errorf("merge result changed with its source (-want +got):\n%s", d)
	}
}

// TestFilterAndMergeRejectBadBatchesNamingField pins the library
// functions' errors: malformed batches, keep indices out of range, and
// merging a deterministic batch with a non-deterministic one.
func TestFilterAndMergeRejectBadBatchesNamingField(t *testing.T) {
	det, plain := packed(t, true), packed(t, false)
	short := det
	short.F = short.F[:8]
	seedless := det
	seedless.Seeds = det.Seeds[:2]
	cases := []struct {
		name  string
		err   error
		want  *spec.Sentinel
		field string
	}{
		{"filter: f not 3×bs", second(ref.FilterSampling(short, nil)), spec.ErrLengthMismatch, "batch.f"},
		{"filter: seeds not bs", second(ref.FilterSampling(seedless, nil)), spec.ErrLengthMismatch, "batch.seeds"},
		{"filter: negative keep", second(ref.FilterSampling(det, []int64{0, -1})), spec.ErrNegative, "keep[1]"},
		{"filter: keep past bs", second(ref.FilterSampling(det, []int64{2, 3})), ref.ErrKeepIndexOutOfRange, "keep[1]"},
		{"merge: a malformed", second(ref.MergeSampling(short, det)), spec.ErrLengthMismatch, "a.f"},
		{"merge: b malformed", second(ref.MergeSampling(det, seedless)), spec.ErrLengthMismatch, "b.seeds"},
		{"merge: mixed determinism", second(ref.MergeSampling(det, plain)), ref.ErrMixedDeterminism, "b.seeds"},
	}
	for _, c := range cases {
		ie, ok := spec.AsInputError(c.err)
		if !ok || !errors.Is(c.err, c.want) || ie.Field != c.field || ie.Bound == "" {
			t.Errorf("%s: got %v, want %s on %s with a bound", c.name, c.err, c.want.Code(), c.field)
		}
	}
}

func second[T any](_ T, err error) error { return err }
