package fast_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// loadBenchOp is LoadBenchScript's op and pools.
func loadBenchOp(layers, pages, runs int) (spec.LoadPools, spec.LoadOp) {
	in := catalog.LoadBenchScript(layers, pages, runs)
	return in.Pools, in.Ops[0]
}

// TestPreparedPathBuildsOnceAndCopiesWithoutAllocating: the fast path was
// taken — BeginLoad allocates the descriptor and its runs only, every
// layer's submit allocates nothing and walks the runs built once.
func TestPreparedPathBuildsOnceAndCopiesWithoutAllocating(t *testing.T) {
	p, op := loadBenchOp(8, 1024, 16)
	ld, err := fast.NewLoader(spec.DefaultLimits(), p)
	if err != nil {
		t.Fatal(err)
	}
	var d spec.LoadDescriptor
	begin := testing.AllocsPerRun(10, func() {
		d, err = ld.BeginLoad(op.OpID, op.HostIdx, op.DevIdx, op.PageSize, spec.LoadBackend{})
		if err != nil {
			t.Fatal(err)
		}
	})
	if begin > 3 {
		t.Errorf("BeginLoad allocates %v times; want the descriptor and its runs", begin)
	}
	if len(d.Runs()) != 16 {
		t.Fatalf("%d runs, want 16", len(d.Runs()))
	}
	l := 0
	submit := testing.AllocsPerRun(p.Layers-1, func() {
		if err := d.SubmitLayer(op.OpID, l); err != nil {
			t.Fatal(err)
		}
		l++
	})
	if submit != 0 || d.Builds() != 1 {
		t.Errorf("SubmitLayer allocates %v times, builds %d; want 0 and 1", submit, d.Builds())
	}
}

// TestFastMatchesRefOnBenchShapes: the benchmark shapes (1, 16 and 1,024
// runs) give ref's canonical result, device digest included.
func TestFastMatchesRefOnBenchShapes(t *testing.T) {
	for _, runs := range []int{1, 16, 1024} {
		in := catalog.LoadBenchScript(5, 2048, runs)
		want, err := ref.HiCacheLoadScript(spec.DefaultLimits(), in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := fast.HiCacheLoadScript(spec.DefaultLimits(), in)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" || len(got.Trace[0].Runs) != runs {
			t.Fatalf("%d runs: (-ref +fast):\n%s", runs, diff)
		}
	}
}
