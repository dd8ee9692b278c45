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
)

// TestLargeInputsTakeTheParallelPaths checks fast against ref on inputs
// above the sizes from which fast splits work across goroutines, sizes the
// generators (which draw small cases, for shrinking) never reach: runs that
// cross the segment boundaries, and a negative id in the last segment, which
// the parallel path must report as ref does.
func TestLargeInputsTakeTheParallelPaths(t *testing.T) {
	s := GroupContiguous()
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 3<<17 + 77
	in := ref.GroupContiguousInput{Src: make([]int64, n), Dst: make([]int64, n)}
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
	if reason, diff := s.Check("fast", s.Op.Fast, in, ref.ErrNegative); reason != "" {
		t.Errorf("%d pairs, a negative dst id in the last segment: %s\n%s", n, reason, diff)
	}
}

// TestEveryStatusCodeStreamsTheSameErrorChunk runs serving.stream_error_chunk
// on an abort with every status code from 100 to 599 and no err_type, so
// each entry of S1.3's status-name table is compared, not only the few a
// generator run happens to draw.
func TestEveryStatusCodeStreamsTheSameErrorChunk(t *testing.T) {
	s := StreamErrorChunk()
	for code := 100; code <= 599; code++ {
		in := ref.StreamErrorInput{FinishReason: json.RawMessage(fmt.Sprintf(`{"type":"abort","status_code":%d,"message":"m"}`, code))}
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
	split := ref.CPSplitInput{Layout: ref.LayoutSpec{CP: 4, Lens: lens, Granule: 64}, X: ref.NewRows(w, total),
		Pad: make([]byte, w), Prefix: []int64{0, 17, 5}}
	for i := range split.X.B {
		split.X.B[i] = byte(rng.IntN(256))
	}
	s := CPSplit()
	if reason, diff := s.Check("fast", s.Op.Fast, split, nil); reason != "" {
		t.Errorf("cp.split of %d rows of %d bytes: %s\n%s", total, w, reason, diff)
	}

	const rows = 5000
	q := ref.FP8QuantizeIndexKInput{X: ref.NewRows(256, rows)}
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
	if reason, diff := qs.Check("fast", qs.Op.Fast, q, ref.ErrNonFinite); reason != "" {
		t.Errorf("fp8.quantize_index_k with NaNs in rows 3100 and 4900: %s\n%s", reason, diff)
	}
}
