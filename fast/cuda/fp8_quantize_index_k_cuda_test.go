//go:build cuda

package cuda_test

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestFP8QuantizeIndexKFromOneKeyToPayload compares the CUDA twin with ref
// on fresh random keys, one key to payload scale (128K keys), each key
// drawn as one tile of randomBF16Rows (so some keys are all ±0: the amax
// floor's scale).
func TestFP8QuantizeIndexKFromOneKeyToPayload(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(len(t.Name())), 73))
	sizes := []int{1, 2, 9, 255, 4097}
	if !testing.Short() {
		sizes = append(sizes, 128<<10)
	}
	for _, n := range sizes {
		in := spec.FP8QuantizeIndexKInput{X: randomBF16Rows(r, spec.IndexKBF16RowBytes, n, spec.IndexKDim)}
		want, werr := ref.FP8QuantizeIndexK(spec.DefaultLimits(), in)
		got, gerr := cuda.FP8QuantizeIndexK(spec.DefaultLimits(), in)
		if werr == nil && gerr == nil && !bytes.Equal(want.Rows.B, got.Rows.B) {
			i := firstDiff(want.Rows.B, got.Rows.B)
			t.Fatalf("n=%d: key %d byte %d: ref %#02x, cuda %#02x", n, i/spec.IndexKRowBytes, i%spec.IndexKRowBytes, want.Rows.B[i], got.Rows.B[i])
		}
		sameResultAsRef(t, "quantize_index_k", want, werr, got, gerr)
	}
}

// TestFP8QuantizeIndexKBoundaries: the all-(−0) key (amax 0: the 1e-4
// floor's scale, codes 0x00 and 0x80 for −0), a key whose scale is 1
// (amax 448) holding the e4m3 rounding boundaries, the largest and the
// smallest bf16, and a NaN after them, all as ref.
func TestFP8QuantizeIndexKBoundaries(t *testing.T) {
	x := ref.NewRows(spec.IndexKBF16RowBytes, 4)
	for j := range spec.IndexKDim {
		binary.LittleEndian.PutUint16(x.Row(0)[2*j:], 0x8000)
	}
	for j, h := range e4m3Boundaries {
		binary.LittleEndian.PutUint16(x.Row(1)[2*j:], h)
		binary.LittleEndian.PutUint16(x.Row(1)[2*(64+j):], h|0x8000)
	}
	binary.LittleEndian.PutUint16(x.Row(2)[0:], 0x7F7F)
	binary.LittleEndian.PutUint16(x.Row(2)[2:], 0xFF7F)
	binary.LittleEndian.PutUint16(x.Row(2)[4:], 0x0001)
	binary.LittleEndian.PutUint16(x.Row(3)[0:], 0x0001)
	binary.LittleEndian.PutUint16(x.Row(3)[2:], 0x8001)
	in := spec.FP8QuantizeIndexKInput{X: x}
	want, werr := ref.FP8QuantizeIndexK(spec.DefaultLimits(), in)
	got, gerr := cuda.FP8QuantizeIndexK(spec.DefaultLimits(), in)
	sameResultAsRef(t, "boundaries", want, werr, got, gerr)
	if werr != nil || got.Rows.Row(0)[0] != 0x80 {
		t.Fatalf("−0 in the all-zero key: %v, code %#02x, want 0x80", werr, got.Rows.Row(0)[0])
	}
	binary.LittleEndian.PutUint16(x.Row(3)[2*100:], 0xFFC0)
	want, werr = ref.FP8QuantizeIndexK(spec.DefaultLimits(), in)
	got, gerr = cuda.FP8QuantizeIndexK(spec.DefaultLimits(), in)
	if werr == nil {
		t.Fatal("ref accepted a NaN")
	}
	sameResultAsRef(t, "nan", want, werr, got, gerr)
}
