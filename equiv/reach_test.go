// This file reaches what the generators, drawing small random cases for
// shrinking, do not: inputs above fast's parallel thresholds and every entry
// of a table the spec fixes (make coverage, docs/coverage.md).

package equiv

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestLargeInputsTakeTheParallelPaths checks fast against ref on inputs
// above the sizes from which fast splits work across goroutines, sizes the
// generators (which draw small cases, for shrinking) never reach: runs that
// cross the segment boundaries, and a negative id in the last segment, which
// the parallel path must report as ref does.
func TestLargeInputsTakeTheParallelPaths(t *testing.T) {
	s := TransferGroupContiguous()
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 3<<17 + 77
	in := spec.TransferGroupContiguousInput{Src: make([]int64, n), Dst: make([]int64, n)}
	var src, dst int64
	for i := 0; i < n; {
		run := 1 + rng.IntN(64)
		for j := 0; j < run && i < n; j++ {
			in.Src[i], in.Dst[i] = src, dst
			src, dst, i = src+1, dst+1, i+1
		}
		src += 1 + rng.Int64N(5)
		dst += int64(rng.IntN(3)) // 0: a dst jump of zero ends the run on src alone
	}
	if reason, diff := s.Check("fast", s.Op.Fast, in, nil); reason != "" {
		t.Errorf("%d pairs: %s\n%s", n, reason, diff)
	}
	in.Dst[n-5] = -1
	if reason, diff := s.Check("fast", s.Op.Fast, in, spec.ErrNegative); reason != "" {
		t.Errorf("%d pairs, a negative dst id in the last segment: %s\n%s", n, reason, diff)
	}
}

// TestEveryStatusCodeStreamsTheSameErrorChunk runs serving.stream_error_chunk
// on an abort with every status code from 100 to 599 and no err_type, so
// each entry of S1.3's status-name table is compared, not only the few a
// generator run happens to draw.
func TestEveryStatusCodeStreamsTheSameErrorChunk(t *testing.T) {
	s := ServingStreamErrorChunk()
	for code := 100; code <= 599; code++ {
		in := spec.ServingStreamErrorChunkInput{FinishReason: json.RawMessage(fmt.Sprintf(`{"type":"abort","status_code":%d,"message":"m"}`, code))}
		if reason, diff := s.Check("fast", s.Op.Fast, in, nil); reason != "" {
			t.Errorf("status %d: %s\n%s", code, reason, diff)
		}
	}
}

// TestLargeRowBuffersTakeTheParallelPaths checks the row ops whose fast
// twins cut large buffers across goroutines: cp.split past 4 MiB of output
// (runMoves) and fp8.quantize_index_k past 2,048 rows (forRowChunks).
func TestLargeRowBuffersTakeTheParallelPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const w = 64
	lens := []int{40_000, 33_333, 3}
	total := 0
	for _, l := range lens {
		total += l
	}
	split := spec.CPSplitInput{Layout: spec.LayoutSpec{CP: 4, Lens: lens, Granule: 64}, X: ref.NewRows(w, total),
		Pad: make([]byte, w), Prefix: []int64{0, 17, 5}}
	for i := range split.X.B {
		split.X.B[i] = byte(rng.IntN(256))
	}
	s := CPSplit()
	if reason, diff := s.Check("fast", s.Op.Fast, split, nil); reason != "" {
		t.Errorf("cp.split of %d rows of %d bytes: %s\n%s", total, w, reason, diff)
	}

	const rows = 5000
	q := spec.FP8QuantizeIndexKInput{X: ref.NewRows(256, rows)}
	for r := range rows {
		for j := range 128 { // finite bf16 values of every magnitude the scale sees
			v := float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(40)-20)))
			b := math.Float32bits(v) >> 16
			q.X.B[r*256+2*j], q.X.B[r*256+2*j+1] = byte(b), byte(b>>8)
		}
	}
	qs := FP8QuantizeIndexK()
	if reason, diff := qs.Check("fast", qs.Op.Fast, q, nil); reason != "" {
		t.Errorf("fp8.quantize_index_k of %d rows: %s\n%s", rows, reason, diff)
	}
	// bf16 NaNs in two chunks: the first bad row of the whole input must be
	// named, whichever chunk finishes first.
	for _, r := range []int{4900, 3100} {
		q.X.B[r*256+10], q.X.B[r*256+11] = 0xC0, 0x7F
	}
	if reason, diff := qs.Check("fast", qs.Op.Fast, q, spec.ErrNonFinite); reason != "" {
		t.Errorf("fp8.quantize_index_k with NaNs in rows 3100 and 4900: %s\n%s", reason, diff)
	}
}

// TestLargeRemapTakesTheParallelPath checks cp.remap_locs above the
// location count from which fast cuts the locations into chunks on their
// own goroutines (remapWork.run): row-scoped locations in random rows, then
// with a location outside its row's window in two chunks, where the lowest
// bad index must be the one reported, whichever chunk finishes first.
func TestLargeRemapTakesTheParallelPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const rows, pagesPerRow, ps, n = 4, 768, 64, 3<<16 + 11
	in := spec.CPRemapLocsInput{PageSize: ps, Pages: make([][]int64, rows), Locs: make([]int64, n), RowIDs: make([]int32, n)}
	for b := range in.Pages {
		in.Pages[b] = make([]int64, pagesPerRow)
		for j, p := range rng.Perm(4 * pagesPerRow)[:pagesPerRow] {
			in.Pages[b][j] = int64(p) // rows overlap: a page may sit in several windows
		}
	}
	for e := range in.Locs {
		b := rng.IntN(rows)
		in.RowIDs[e] = int32(b)
		if rng.IntN(50) == 0 {
			in.Locs[e] = -1 // padding
			continue
		}
		in.Locs[e] = in.Pages[b][rng.IntN(pagesPerRow)]*ps + rng.Int64N(ps)
	}
	s := CPRemapLocs()
	if reason, diff := s.Check("fast", s.Op.Fast, in, nil); reason != "" {
		t.Errorf("%d locations: %s\n%s", n, reason, diff)
	}
	for _, e := range []int{n - 5, n/2 + 3} {
		in.Locs[e] = (1 << 40) * ps // a page no window holds
	}
	if reason, diff := s.Check("fast", s.Op.Fast, in, spec.ErrPageNotInRow); reason != "" {
		t.Errorf("%d locations, bad at %d and %d: %s\n%s", n, n/2+3, n-5, reason, diff)
	}
}

// TestLargeTopKTakesTheParallelPath checks mqa.chunked_topk on more
// candidates than fast selects on one goroutine (topkSegments): 64 rows of
// 2,048 logits with ties, windows of every width, a top-k of 16.
func TestLargeTopKTakesTheParallelPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const q, kt = 64, 2048
	in := spec.MQAChunkedTopKInput{Logits: make([][]float32, q), KS: make([]int64, q), KE: make([]int64, q), TopK: 16, ChunkRows: 7}
	for r := range in.Logits {
		in.Logits[r] = make([]float32, kt)
		for j := range in.Logits[r] {
			in.Logits[r][j] = float32(rng.IntN(512)) / 8 // ties within a row
		}
		in.KS[r] = int64(rng.IntN(64))
		in.KE[r] = kt - int64(rng.IntN(64))
	}
	in.KS[5], in.KE[5] = 100, 103 // a window narrower than top-k
	s := MQAChunkedTopK()
	if reason, diff := s.Check("fast", s.Op.Fast, in, nil); reason != "" {
		t.Errorf("%d rows of %d logits: %s\n%s", q, kt, reason, diff)
	}
}

// TestLayoutsPastTheOutputBoundAreRefused checks the output bounds that
// only large but cheap inputs reach: cp.can_split's layout of 2·B·2·cp
// sizes at cp = MaxCP and 32,769 requests (just past 1 GiB), and
// transfer.layer_blocks' entries × runs blocks (8,192 layers of 8,192
// one-page runs, 1.5 GiB of blocks).
func TestLayoutsPastTheOutputBoundAreRefused(t *testing.T) {
	split := spec.CPCanSplitInput{Mode: spec.ModeExtend, CPEnabled: true, CPSize: spec.MaxCP, BatchSize: 32769, ExtendLens: make([]int, 32769), PageSize: 64}
	for i := range split.ExtendLens {
		split.ExtendLens[i] = 2 * spec.MaxCP
	}
	cs := CPCanSplit()
	if reason, diff := cs.Check("fast", cs.Op.Fast, split, spec.ErrTooLarge); reason != "" {
		t.Errorf("cp.can_split at cp=%d, B=%d: %s\n%s", spec.MaxCP, split.BatchSize, reason, diff)
	}

	const layers, pages = 8192, 8192
	lb := spec.TransferLayerBlocksInput{IsMLA: true, Owned: make([]int64, pages), DstPages: make([]int64, pages),
		SrcPtrs: make([]uint64, layers), DstPtrs: make([]uint64, layers), ItemLens: make([]uint64, layers)}
	for i := range pages {
		lb.Owned[i], lb.DstPages[i] = int64(2*i), int64(2*i) // every other page: one run per page
	}
	for l := range layers {
		lb.SrcPtrs[l], lb.DstPtrs[l], lb.ItemLens[l] = uint64(l)<<32, uint64(l)<<32, 64
	}
	ls := TransferLayerBlocks()
	if reason, diff := ls.Check("fast", ls.Op.Fast, lb, spec.ErrTooLarge); reason != "" {
		t.Errorf("transfer.layer_blocks of %d entries × %d runs: %s\n%s", layers, pages, reason, diff)
	}
}
