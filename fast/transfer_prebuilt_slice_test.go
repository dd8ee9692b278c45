package fast_test

import (
	"runtime"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/spec"
)

// TestTransferPrebuiltSliceMakesOneExactAllocation checks the fast path was taken:
// one allocation per call backs all four output lists, and each list's
// capacity ends at its length so appending to one cannot overwrite the next.
func TestTransferPrebuiltSliceMakesOneExactAllocation(t *testing.T) {
	in := catalog.TransferPrebuiltSlice().Shapes[1].Make()
	out, err := fast.TransferPrebuiltSlice(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	for name, l := range map[string][]int64{"out_cache_loc": out.OutCacheLoc, "seq_lens": out.SeqLens, "prefix_lens": out.PrefixLens, "extend_lens": out.ExtendLens} {
		if cap(l) != len(l) {
			t.Errorf("%s has cap %d > len %d", name, cap(l), len(l))
		}
	}
	allocs := testing.AllocsPerRun(20, func() { _, _ = fast.TransferPrebuiltSlice(spec.DefaultLimits(), in) })
	if allocs != 1 {
		t.Errorf("fast.PrebuiltSlice allocated %v times per call, want 1", allocs)
	}
}

// TestTransferPrebuiltSliceWritesNothingForANegativeSlot: the sign scan runs before
// the output is allocated, so a rejected batch allocates only its error,
// not the 256 KiB output.
func TestTransferPrebuiltSliceWritesNothingForANegativeSlot(t *testing.T) {
	in := catalog.TransferPrebuiltSlice().Shapes[2].Make()
	r := &in.Requests[len(in.Requests)-1]
	r.Row[len(r.Row)-1] = -1
	const runs = 10
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		if _, err := fast.TransferPrebuiltSlice(spec.DefaultLimits(), in); err == nil {
			t.Fatal("negative copied slot accepted")
		}
	}
	runtime.ReadMemStats(&after)
	if perCall := (after.TotalAlloc - before.TotalAlloc) / runs; perCall > 4<<10 {
		t.Errorf("rejection allocated %d bytes per call", perCall)
	}
}

func BenchmarkPrebuiltSlice(b *testing.B) { benchOp(b, catalog.TransferPrebuiltSlice().Benchmarks()) }

func benchOp(b *testing.B, shapes []catalog.Bench) {
	for _, sh := range shapes {
		for _, impl := range []catalog.Impl{catalog.Ref, catalog.Fast} {
			b.Run(sh.Shape+"/"+string(impl), func(b *testing.B) {
				run, err := sh.Prepare(impl)
				if err != nil {
					b.Fatal(err)
				}
				if sh.CopyBytes > 0 {
					b.SetBytes(sh.CopyBytes)
				}
				for b.Loop() {
					if err := run(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
