package fast_test

import (
	"slices"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestTransferLayerBlocksAllocatesRunsAndBlocksOnly checks the fast path was taken
// on the GLM-5-like shape: the runs computed once, one exact-size block
// list, and nothing else (no per-layer lists, no page-sized scratch).
func TestTransferLayerBlocksAllocatesRunsAndBlocksOnly(t *testing.T) {
	in := catalog.TransferLayerBlocks().Shapes[0].Make()
	out, err := fast.TransferLayerBlocks(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(in.SrcPtrs) * len(out.Runs); len(out.Blocks) != want || cap(out.Blocks) != want {
		t.Fatalf("blocks len %d cap %d, want exactly %d", len(out.Blocks), cap(out.Blocks), want)
	}
	allocs := testing.AllocsPerRun(20, func() { _, _ = fast.TransferLayerBlocks(spec.DefaultLimits(), in) })
	if allocs != 2 {
		t.Errorf("fast.LayerBlocks allocated %v times per call, want 2 (runs, blocks)", allocs)
	}
}

// TestTransferLayerBlocksSortsRunsOnlyWhenDecodeRunsAreOutOfOrder: proving decode
// pages distinct costs one scan when the runs' decode ranges ascend, and
// one sorted copy of the runs (not of the pages) when they do not.
func TestTransferLayerBlocksSortsRunsOnlyWhenDecodeRunsAreOutOfOrder(t *testing.T) {
	in := catalog.TransferLayerBlocks().Shapes[0].Make()
	in.DstPages = slices.Clone(in.DstPages)
	slices.Reverse(in.DstPages) // every pair its own run, decode descending
	out, err := fast.TransferLayerBlocks(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Runs) != len(in.Owned) {
		t.Fatalf("%d runs, want one per page", len(out.Runs))
	}
	allocs := testing.AllocsPerRun(20, func() { _, _ = fast.TransferLayerBlocks(spec.DefaultLimits(), in) })
	if allocs != 3 {
		t.Errorf("fast.LayerBlocks allocated %v times per call, want 3 (runs, sorted runs, blocks)", allocs)
	}
}

// BenchmarkLayerBlocks times both twins on the catalog shapes.
func BenchmarkLayerBlocks(b *testing.B) {
	op, lim := catalog.TransferLayerBlocks(), spec.DefaultLimits()
	for _, sh := range op.Shapes {
		in := sh.Make()
		b.Run(sh.Name+"/fast", func(b *testing.B) {
			for b.Loop() {
				_, _ = fast.TransferLayerBlocks(lim, in)
			}
		})
		b.Run(sh.Name+"/ref", func(b *testing.B) {
			for b.Loop() {
				_, _ = ref.TransferLayerBlocks(lim, in)
			}
		})
	}
}
