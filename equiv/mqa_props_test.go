package equiv_test

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// checkBroken runs every property of props on ref's good result (must
// hold) and on the broken result listed for it (must fail).
func checkBroken[In, Out any](t *testing.T, props []equiv.Prop[In, Out], in In, good Out, broken map[string]Out) {
	t.Helper()
	for _, p := range props {
		if err := p.Holds(spec.DefaultLimits(), in, good); err != nil {
			t.Errorf("%s fails on ref's result: %v", p.Name, err)
		}
		bad, ok := broken[p.Name]
		if !ok {
			t.Errorf("no broken result for property %s", p.Name)
			continue
		}
		if propHolds(t, props, p.Name, in, bad) == nil {
			t.Errorf("%s holds on a broken result %+v", p.Name, bad)
		}
	}
}

// TestMQAChunkRowsPropertiesCatchWrongPlans: each §8.2/§8.4 property holds
// on ref's plan and fails on a plan broken the way it guards against.
func TestMQAChunkRowsPropertiesCatchWrongPlans(t *testing.T) {
	two := int64(2)
	in := spec.MQAChunkRowsInput{
		Config:  spec.MQAChunkConfig{MaxRows: &two},
		Runtime: &spec.MQARuntimeBudget{FreeAtInit: 1 << 20, TotalMem: 1 << 30},
		Shapes:  []spec.MQALogitsShape{{Q: 5, K: 7}},
		Batch:   &spec.MQAPeakBatch{Layout: spec.LayoutSpec{CP: 2, Lens: []int{8}}, Prefix: []int64{64}},
	}
	good, err := ref.MQAChunkRows(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	with := func(f func(*spec.MQAChunkRowsOutput)) spec.MQAChunkRowsOutput {
		out := good
		out.Shapes, out.Ranks = slices.Clone(good.Shapes), slices.Clone(good.Ranks)
		f(&out)
		return out
	}
	broken := map[string]spec.MQAChunkRowsOutput{
		// 2 chunks of 2 rows leave row 5 out.
		"chunks-cover-q": with(func(o *spec.MQAChunkRowsOutput) { o.Shapes[0].Chunks = 2 }),
		// The row cap ignored (§8.6 bug 3), with the plan otherwise consistent.
		"chunk-bytes-capped": with(func(o *spec.MQAChunkRowsOutput) {
			o.Shapes[0] = spec.MQAChunkPlan{Q: 5, K: 7, Rows: 5, Chunks: 1, PeakBytes: 140}
		}),
		// A runtime plan with more rows than the estimator's.
		"estimator-conservative": with(func(o *spec.MQAChunkRowsOutput) {
			o.Ranks[1] = spec.MQAChunkPlan{Q: 4, K: 138, Rows: 3, Chunks: 2, PeakBytes: 4 * 3 * 138}
		}),
		// Full-request accounting (§8.6 bug 1).
		"cp-rank-shapes": with(func(o *spec.MQAChunkRowsOutput) {
			full := spec.MQAChunkPlan{Q: 8, K: 72, Rows: 2, Chunks: 4, PeakBytes: 576}
			o.Ranks[0], o.Ranks[1], o.AdmissionPeak = full, full, 576
		}),
	}
	checkBroken(t, equiv.MQAChunkRows().Props, in, good, broken)
	// The GiB cap's and the runtime budget's halves of chunk-bytes-capped.
	gb := float64(64) / (1 << 30) // 64 bytes: 2 rows of K=8
	capped := spec.MQAChunkRowsInput{Config: spec.MQAChunkConfig{MaxGB: &gb}, Shapes: []spec.MQALogitsShape{{Q: 5, K: 8}}}
	over := spec.MQAChunkRowsOutput{Shapes: []spec.MQAChunkPlan{{Q: 5, K: 8, Rows: 3, Chunks: 2, PeakBytes: 96}}, Ranks: []spec.MQAChunkPlan{}}
	if propHolds(t, equiv.MQAChunkRows().Props, "chunk-bytes-capped", capped, over) == nil {
		t.Error("chunk-bytes-capped holds on a 96 B chunk under a 64 B cap")
	}
	// free 32M: the runtime's chunks hold at most 16 MB, 1000 rows of K=4000.
	budget := spec.MQAChunkRowsInput{Runtime: &spec.MQARuntimeBudget{FreeAtInit: 32_000_000, TotalMem: 1 << 40}, Shapes: []spec.MQALogitsShape{{Q: 2000, K: 4000}}}
	tooBig := spec.MQAChunkRowsOutput{Shapes: []spec.MQAChunkPlan{{Q: 2000, K: 4000, Rows: 1500, Chunks: 2, PeakBytes: 4 * 1500 * 4000}}, Ranks: []spec.MQAChunkPlan{}}
	if propHolds(t, equiv.MQAChunkRows().Props, "chunk-bytes-capped", budget, tooBig) == nil {
		t.Error("chunk-bytes-capped holds on a 24 MB chunk with 32 MB free")
	}
}

// TestMQAChunkedTopKPropertiesCatchWrongRows: each §8.3 property holds on
// ref's rows and fails on rows broken the way it guards against.
func TestMQAChunkedTopKPropertiesCatchWrongRows(t *testing.T) {
	in := spec.MQAChunkedTopKInput{
		Logits: [][]float32{{5, 1, 2, 0}, {1, 5, 2, 0}, {0, 0, 9, 1}},
		KS:     []int64{0, 0, 1}, KE: []int64{4, 2, 4}, TopK: 2, Offset: []int32{0, 10, 40}, ChunkRows: 2,
	}
	good, err := ref.MQAChunkedTopK(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	// good: [[0 2] [10 11] [41 42]]
	broken := map[string]spec.MQAChunkedTopKOutput{
		"row-shape":                {Indices: [][]int32{{2, 0}, {10, 11}, {41, 42}}}, // not ascending
		"selects-the-best":         {Indices: [][]int32{{0, 1}, {10, 11}, {41, 42}}}, // 1 chosen over 2
		"chunked-equals-unchunked": {Indices: [][]int32{{0, 2}, {10, 11}, {1, 2}}},   // row 2 lost its offset
	}
	checkBroken(t, equiv.MQAChunkedTopK().Props, in, good, broken)
}

// TestNSAIndexPlanPropertiesCatchWrongPlans: each §9.4 property holds on
// ref's plan and fails on a plan broken the way it guards against.
func TestNSAIndexPlanPropertiesCatchWrongPlans(t *testing.T) {
	four := 4
	in := spec.NSAIndexPlanInput{N: 6, Freq: &four, Offset: 3, Queries: []spec.NSAIndexQuery{
		{Kind: spec.NSAQueryPrefetchAfter, Layer: 2}, {Kind: spec.NSAQuerySlotOf, Layer: 1}, {Kind: spec.NSAQuerySharedInput, Layer: 4},
	}}
	good, err := ref.NSAIndexPlan(spec.DefaultLimits(), in) // FFFSSS
	if err != nil {
		t.Fatal(err)
	}
	with := func(f func(*spec.NSAIndexPlanOutput)) spec.NSAIndexPlanOutput {
		out := good
		out.Skip, out.NextSkip, out.Slot = slices.Clone(good.Skip), slices.Clone(good.NextSkip), slices.Clone(good.Slot)
		out.Active, out.Answers, out.Warnings = slices.Clone(good.Active), slices.Clone(good.Answers), slices.Clone(good.Warnings)
		f(&out)
		return out
	}
	inactive := spec.ErrorObjectOf(spec.Reject(spec.ErrInactiveIndexLayer, "layer", 3, "an F layer"))
	broken := map[string]spec.NSAIndexPlanOutput{
		"P9.1-layer0-full": with(func(o *spec.NSAIndexPlanOutput) { o.Skip[0] = true }),
		// Upstream's next_skip of the last layer (the [deviation]).
		"P9.2-next-skip":      with(func(o *spec.NSAIndexPlanOutput) { o.NextSkip[5] = true }),
		"P9.3-slot-bijection": with(func(o *spec.NSAIndexPlanOutput) { o.Slot[3] = 3 }),
		// The offset ignored (the erratum's SGLang): FFSSSF's skip under FFFSSS's pattern.
		"P9.4-freq-offset-equals-pattern": with(func(o *spec.NSAIndexPlanOutput) { o.Skip[2], o.Skip[5] = true, false }),
		// The ungated prefetcher (§9.5 bug 2).
		"P9.5-prefetch-gated": with(func(o *spec.NSAIndexPlanOutput) { o.Answers[0] = spec.NSAIndexAnswer{Err: &inactive} }),
		// Index bytes for every layer (§9.5 bug 4).
		"P9.6-hicache-bytes":   with(func(o *spec.NSAIndexPlanOutput) { o.HiCacheBytesPerToken = 6*656 + 6*132 }),
		"warning-iff-shadowed": with(func(o *spec.NSAIndexPlanOutput) { o.Warnings = []string{spec.NSAPatternShadowsFreq} }),
	}
	checkBroken(t, equiv.NSAIndexPlan().Props, in, good, broken)
	// P9.5's other rules: an unrefused shared layer, a slot for an S layer.
	slot := 2
	for name, a := range map[string]spec.NSAIndexAnswer{"shared_input": {}, "slot_of": {Slot: &slot}} {
		bad := with(func(o *spec.NSAIndexPlanOutput) {
			if name == "shared_input" {
				o.Answers[2] = a
			} else {
				o.Answers[1] = a
			}
		})
		if name == "slot_of" {
			in2 := in
			in2.Queries = slices.Clone(in.Queries)
			in2.Queries[1].Layer = 3 // S layer, answered with a slot
			if propHolds(t, equiv.NSAIndexPlan().Props, "P9.5-prefetch-gated", in2, bad) == nil {
				t.Errorf("P9.5 holds on %s answered %+v", name, a)
			}
			continue
		}
		if propHolds(t, equiv.NSAIndexPlan().Props, "P9.5-prefetch-gated", in, bad) == nil {
			t.Errorf("P9.5 holds on %s answered %+v", name, a)
		}
	}
}

// TestChunkedTopKNonFiniteAlike is the differential for NaN (both signs),
// ±Inf and −0, which JSON cannot carry (the golden fixtures hold finite
// logits only): typed inputs, both twins, byte-equal results, and §8.3's
// properties, with P8.1 (chunked == unchunked) among them.
func TestChunkedTopKNonFiniteAlike(t *testing.T) {
	sp := equiv.MQAChunkedTopK()
	rapid.Check(t, func(t *rapid.T) {
		in := equiv.TopKValid(t, true)
		lim := spec.DefaultLimits()
		rout, rerr := ref.MQAChunkedTopK(lim, in)
		fout, ferr := fast.MQAChunkedTopK(lim, in)
		if rerr != nil || ferr != nil {
			t.Fatalf("ref %v, fast %v on a valid input", rerr, ferr)
		}
		if d := cmp.Diff(rout, fout); d != "" {
			t.Fatalf("ref != fast (-ref +fast):\n%s", d)
		}
		for _, p := range sp.Props {
			if err := p.Holds(lim, in, fout); err != nil {
				t.Fatalf("%s: %v", p.Name, err)
			}
		}
	})
}

// TestMQAChunkConfigRejectsNonFiniteAlike: a NaN or ±Inf GiB cap (§8.1)
// cannot travel in JSON; both twins must reject it with the same
// canonical error, the value written as a string.
func TestMQAChunkConfigRejectsNonFiniteAlike(t *testing.T) {
	valid := equiv.MQAChunkRows().Valid
	rapid.Check(t, func(t *rapid.T) {
		in := valid.Draw(t, "in")
		x := rapid.SampledFrom([]float64{math.NaN(), math.Inf(1), math.Inf(-1)}).Draw(t, "non_finite")
		in.Config = spec.MQAChunkConfig{MaxGB: &x}
		rout, rerr := ref.MQAChunkRows(spec.DefaultLimits(), in)
		fout, ferr := fast.MQAChunkRows(spec.DefaultLimits(), in)
		ie, ok := spec.AsInputError(rerr)
		if !ok || !errors.Is(rerr, spec.ErrConfig) || ie.Field != "config.max_gb" {
			t.Fatalf("ref: %v, want config error on config.max_gb", rerr)
		}
		if _, isString := ie.Value.(string); !isString {
			t.Fatalf("value %v is not a string; the error object would not encode", ie.Value)
		}
		if rb, fb := catalog.Canonical(rout, rerr), catalog.Canonical(fout, ferr); !bytes.Equal(rb, fb) {
			t.Fatalf("canonical errors differ:\nref  %s\nfast %s", rb, fb)
		}
	})
}
