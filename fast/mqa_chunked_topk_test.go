package fast_test

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// topkInput is q rows of kt logits drawn from 64 values (many ties), each
// row's window a random sub-range, with row-addressed offsets.
func topkInput(q, kt int, topk int64, chunk int64) spec.MQAChunkedTopKInput {
	rng := rand.New(rand.NewPCG(uint64(q), uint64(kt)))
	in := spec.MQAChunkedTopKInput{Logits: make([][]float32, q), KS: make([]int64, q), KE: make([]int64, q), Offset: make([]int32, q), TopK: topk, ChunkRows: chunk}
	for r := range q {
		row := make([]float32, kt)
		for j := range row {
			row[j] = float32(rng.IntN(64)) - 32
		}
		in.Logits[r] = row
		in.KS[r] = int64(rng.IntN(kt / 4))
		in.KE[r] = int64(kt - rng.IntN(kt/4))
		in.Offset[r] = int32(r * kt)
	}
	return in
}

// TestChunkedTopKAllocatesPerCallNotPerRow checks the fast path was taken:
// one flat output buffer, its row headers and one scratch buffer, whatever
// the number of rows (the reference allocates per row and per candidate).
func TestChunkedTopKAllocatesPerCallNotPerRow(t *testing.T) {
	for _, q := range []int{1, 8, 64} {
		in := topkInput(q, 512, 32, 4) // at most 32K candidates: one goroutine
		allocs := testing.AllocsPerRun(20, func() { _, _ = fast.MQAChunkedTopK(spec.DefaultLimits(), in) })
		if allocs != 3 {
			t.Errorf("q=%d: %v allocations per call, want 3 (output, row headers, scratch)", q, allocs)
		}
	}
}

// TestChunkedTopKParallelMatchesRef drives the goroutine-parallel path
// (256 rows × 4096 candidates) and compares it with the reference.
func TestChunkedTopKParallelMatchesRef(t *testing.T) {
	in := topkInput(256, 4096, 200, 7)
	want, err := ref.MQAChunkedTopK(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := fast.MQAChunkedTopK(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("fast != ref (-ref +fast):\n%s", d)
	}
}

// TestMQAChunkRowsOneAllocationPerList: the fast twin allocates the two
// plan lists and the rank shapes, independent of the batch size.
func TestMQAChunkRowsOneAllocationPerList(t *testing.T) {
	for _, bs := range []int{1, 10, 100} {
		lens, prefix := make([]int, bs), make([]int64, bs)
		for i := range lens {
			lens[i], prefix[i] = 100+i, int64(1000*i)
		}
		in := spec.MQAChunkRowsInput{Batch: &spec.MQAPeakBatch{Layout: spec.LayoutSpec{CP: 8, Lens: lens, Granule: 64}, Prefix: prefix}}
		// The layout build (ref's, shared) allocates per request; count it apart.
		lay := testing.AllocsPerRun(20, func() { _, _ = in.Batch.Layout.Build() })
		allocs := testing.AllocsPerRun(20, func() { _, _ = fast.MQAChunkRows(spec.DefaultLimits(), in) })
		if allocs > lay+4 {
			t.Errorf("bs=%d: %v allocations, layout build alone %v; want at most 4 more", bs, allocs, lay)
		}
	}
}

// TestNSAIndexPlanAllocatesPerCall: the plan's slices, the pattern, the
// log line and the answers: a fixed count whatever the layer count (from 33
// layers: below that the compiler keeps the pattern's buffer on the stack).
func TestNSAIndexPlanAllocatesPerCall(t *testing.T) {
	var first float64
	for i, n := range []int{33, 78, 4096} {
		four := 4
		in := spec.NSAIndexPlanInput{N: n, Freq: &four, Offset: 3}
		allocs := testing.AllocsPerRun(20, func() { _, _ = fast.NSAIndexPlan(spec.DefaultLimits(), in) })
		if i == 0 {
			first = allocs
		}
		if allocs != first {
			t.Errorf("n=%d: %v allocations, %v at n=33", n, allocs, first)
		}
	}
}
