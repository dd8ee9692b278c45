package fast_test

import (
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestTransferGroupContiguousAllocatesOnlyTheExactOutput checks the fast path was
// taken: no diff or break arrays, one allocation, and that one sized to the
// run count exactly.
func TestTransferGroupContiguousAllocatesOnlyTheExactOutput(t *testing.T) {
	in := catalog.TransferGroupContiguous().Shapes[1].Make() // 1024 pairs in 4 runs
	out, err := fast.TransferGroupContiguous(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Runs) != 4 || cap(out.Runs) != len(out.Runs) {
		t.Fatalf("runs len %d cap %d, want exactly 4", len(out.Runs), cap(out.Runs))
	}
	allocs := testing.AllocsPerRun(100, func() { _, _ = fast.TransferGroupContiguous(spec.DefaultLimits(), in) })
	if allocs != 1 {
		t.Errorf("fast.GroupContiguous allocated %v times per call, want 1 (the runs)", allocs)
	}
}

// onePassCapN is the rejected alternative, kept to measure against: one
// pass appending into a buffer of capacity len(src), the only bound on the
// run count known without a first pass.
func onePassCapN(src, dst []int64) []spec.Run {
	runs := make([]spec.Run, 0, len(src))
	start := 0
	for i := 1; i < len(src); i++ {
		if src[i] != src[i-1]+1 || dst[i] != dst[i-1]+1 {
			runs = append(runs, spec.Run{SrcStart: src[start], DstStart: dst[start], Count: int64(i - start)})
			start = i
		}
	}
	return append(runs, spec.Run{SrcStart: src[start], DstStart: dst[start], Count: int64(len(src) - start)})
}

// BenchmarkGroupContiguous times both twins on the catalog shapes, and the
// one-pass-into-capacity-n alternative that fast's count-then-fill beat.
func BenchmarkGroupContiguous(b *testing.B) {
	op, lim := catalog.TransferGroupContiguous(), spec.DefaultLimits()
	for _, sh := range op.Shapes {
		in := sh.Make()
		b.Run(sh.Name+"/fast", func(b *testing.B) {
			for b.Loop() {
				_, _ = fast.TransferGroupContiguous(lim, in)
			}
		})
		b.Run(sh.Name+"/ref", func(b *testing.B) {
			for b.Loop() {
				_, _ = ref.TransferGroupContiguous(lim, in)
			}
		})
		b.Run(sh.Name+"/one-pass-cap-n", func(b *testing.B) {
			for b.Loop() {
				_ = onePassCapN(in.Src, in.Dst)
			}
		})
	}
}
