//go:build cuda

package cuda_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestFP8DequantTopKFromOneRowToPayload compares the CUDA twin with ref on
// fresh random 656-byte rows (any bytes: NaN codes, and scales that are
// NaN, ±Inf, subnormal or anything), top-k lists with repeats and -1
// entries, with and without the verify gate, from one row to payload scale
// (128K rows, 64 queries × 2048 ids).
func TestFP8DequantTopKFromOneRowToPayload(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(len(t.Name())), 77))
	type shape struct{ n, queries, k int }
	cases := []shape{{1, 1, 1}, {2, 3, 2}, {300, 4, 64}, {5000, 16, 512}}
	if !testing.Short() {
		cases = append(cases, shape{128 << 10, 64, 2048})
	}
	for _, c := range cases {
		in := spec.FP8DequantTopKInput{Kq: randomRows656(r, c.n), Verify: c.n < 10000}
		for range c.queries {
			ids := make([]int32, c.k)
			for j := range ids {
				ids[j] = int32(r.IntN(c.n+1)) - 1 // -1 is an empty entry
				if j > 0 && r.IntN(8) == 0 {
					ids[j] = ids[j-1] // a repeat
				}
			}
			in.TopK = append(in.TopK, ids)
		}
		want, werr := ref.FP8DequantTopK(spec.DefaultLimits(), in)
		got, gerr := cuda.FP8DequantTopK(spec.DefaultLimits(), in)
		sameResultAsRef(t, "dequant_topk", want, werr, got, gerr)
	}
}

// TestFP8DequantTopKEveryCodeAndScaleKind dequantizes every e4m3 code
// (twice per row: 512 codes) under scales of every kind — 1, a normal, an
// fp32 subnormal, the largest finite, ±Inf, NaN, ±0 — as ref does; and
// the no-reference and out-of-range cases are ref's.
func TestFP8DequantTopKEveryCodeAndScaleKind(t *testing.T) {
	scales := []float32{1, -3.75, math.Float32frombits(1), math.Float32frombits(0x007FFFFF), math.MaxFloat32,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 0, float32(math.Copysign(0, -1)), 0x1p-130, 1e30}
	kq := ref.NewRows(spec.FP8RowBytes, (len(scales)+3)/4)
	for i := range kq.N() {
		row := kq.Row(i)
		for j := range spec.MLANopeDim {
			row[j] = byte(j)
		}
		for t := range spec.FP8Tiles {
			s := scales[(4*i+t)%len(scales)]
			binary.LittleEndian.PutUint32(row[spec.FP8ScaleOff+4*t:], math.Float32bits(s))
		}
		for j := spec.FP8RopeOff; j < spec.FP8RowBytes; j++ {
			row[j] = byte(7 * j)
		}
	}
	all := make([]int32, kq.N())
	for i := range all {
		all[i] = int32(i)
	}
	for _, topk := range [][][]int32{{all}, {}, {{-1, -1}}, {{0}, {int32(kq.N())}}} {
		in := spec.FP8DequantTopKInput{Kq: kq, TopK: topk, Verify: true}
		want, werr := ref.FP8DequantTopK(spec.DefaultLimits(), in)
		got, gerr := cuda.FP8DequantTopK(spec.DefaultLimits(), in)
		sameResultAsRef(t, "dequant_topk", want, werr, got, gerr)
	}
}
