package fast_test

import (
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/spec"
)

func servingBatch(t testing.TB, bs int, det bool) spec.SamplingPackInput {
	t.Helper()
	for _, sh := range catalog.SamplingPack().Shapes {
		if in := sh.Make(); len(in.Requests) == bs && in.Deterministic == det {
			return in
		}
	}
	t.Fatalf("no sampling.pack bench shape with bs=%d deterministic=%v", bs, det)
	return spec.SamplingPackInput{}
}

// TestSamplingPackTakesTheOneBufferPath checks the fast path was taken: F is
// one exact-size buffer the three views are windows of (no per-field
// arrays), and a call allocates exactly F, top_k and seeds.
func TestSamplingPackTakesTheOneBufferPath(t *testing.T) {
	in := servingBatch(t, 200, true)
	out, err := fast.SamplingPack(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.F) != 600 || cap(out.F) != 600 {
		t.Fatalf("len(f)=%d cap(f)=%d, want an exact 3×bs = 600 buffer", len(out.F), cap(out.F))
	}
	if &out.Temperatures()[0] != &out.F[0] || &out.TopPs()[0] != &out.F[200] || &out.MinPs()[0] != &out.F[400] {
		t.Error("views are not windows of the packed buffer")
	}
	for _, c := range []struct {
		det  bool
		want float64
	}{{true, 3}, {false, 2}} {
		in.Deterministic = c.det
		allocs := testing.AllocsPerRun(100, func() { _, _ = fast.SamplingPack(spec.DefaultLimits(), in) })
		if allocs != c.want {
			t.Errorf("deterministic=%v: %v allocations per call, want %v (f, top_k%s)", c.det, allocs, c.want, map[bool]string{true: ", seeds"}[c.det])
		}
	}
}

// TestFilterAndMergeAllocateOnlyTheirFreshBuffers checks Filter and Merge
// build f, top_k and seeds with one exact-size allocation each, and that the
// results share no memory with their sources (§8): scribbling over the
// source leaves them as they were.
func TestFilterAndMergeAllocateOnlyTheirFreshBuffers(t *testing.T) {
	b, err := fast.SamplingPack(spec.DefaultLimits(), servingBatch(t, 32, false))
	if err != nil {
		t.Fatal(err)
	}
	b.Seeds = make([]int64, 32)
	keep := []int64{0, 3, 5, 31, 31}
	if a := testing.AllocsPerRun(100, func() { _, _ = fast.FilterSampling(b, keep) }); a != 3 {
		t.Errorf("FilterSampling: %v allocations, want 3", a)
	}
	if a := testing.AllocsPerRun(100, func() { _, _ = fast.MergeSampling(b, b) }); a != 3 {
		t.Errorf("MergeSampling: %v allocations, want 3", a)
	}
	f, _ := fast.FilterSampling(b, keep)
	m, _ := fast.MergeSampling(b, b)
	wantF, wantM := catalog.Canonical(f, nil), catalog.Canonical(m, nil)
	for i := range b.F {
		b.F[i] = -1
	}
	for i := range b.TopK {
		b.TopK[i], b.Seeds[i] = -1, -1
	}
	if got := catalog.Canonical(f, nil); string(got) != string(wantF) {
		t.Errorf("filter result aliases its source:\nwas %s\nnow %s", wantF, got)
	}
	if got := catalog.Canonical(m, nil); string(got) != string(wantM) {
		t.Errorf("merge result aliases its source:\nwas %s\nnow %s", wantM, got)
	}
}

// BenchmarkSamplingPack times both twins on the catalog's serving-mix
// shapes (the seed's bs = 8, 32, 200).
func BenchmarkSamplingPack(b *testing.B) {
	op := catalog.SamplingPack()
	for _, sh := range op.Shapes {
		in := sh.Make()
		for _, impl := range []catalog.Impl{catalog.Ref, catalog.Fast} {
			f, err := op.Func(impl)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(sh.Name+"/"+string(impl), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := f(spec.DefaultLimits(), in); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
