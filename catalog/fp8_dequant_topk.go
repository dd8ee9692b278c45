package catalog

import (
	"encoding/binary"
	"math"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// fp8QuantRows builds n plausible 656-byte rows: patterned codes (no NaN
// code), per-tile scales 2^-8·(1+t), patterned rope bytes.
func fp8QuantRows(n int) spec.Rows {
	x := patternRows(spec.FP8RowBytes, n)
	for i := range n {
		r := x.Row(i)
		for j := range 512 {
			if r[j]&0x7F == 0x7F {
				r[j] = 0x7E
			}
		}
		for t := range 4 {
			binary.LittleEndian.PutUint32(r[512+4*t:], math.Float32bits(float32(1+t)/256))
		}
	}
	return x
}

// spreadTopK returns q queries of k row ids each, striding through n rows.
func spreadTopK(q, k, n int) [][]int32 {
	topk := make([][]int32, q)
	for i := range topk {
		topk[i] = make([]int32, k)
		for j := range topk[i] {
			topk[i][j] = int32((i*k + j) * (n / (q * k)) % n)
		}
	}
	return topk
}

// FP8DequantTopK registers fp8.dequant_topk (docs/spec/cp-layout.md §7.6).
func FP8DequantTopK() *Op[spec.FP8DequantTopKInput, spec.FP8DequantTopKOutput] {
	return &Op[spec.FP8DequantTopKInput, spec.FP8DequantTopKOutput]{
		OpName:  "fp8.dequant_topk",
		SpecRef: "cp-layout.md §7.6",
		Summary: "dequantize only the FP8 rows top-k references, each once, at their row ids (-1 = empty)",
		Ref:     ref.FP8DequantTopK,
		Fast:    fast.FP8DequantTopK,
		CUDA:    cuda.FP8DequantTopK,
		Sample:  spec.FP8DequantTopKInput{Kq: fp8QuantRows(4), TopK: [][]int32{{2, -1, 0}, {2, 3}}},
		Shapes: []Shape[spec.FP8DequantTopKInput]{
			// The target: 2,048 referenced rows of 128K; the next
			// shape (every row referenced) is the full dequant it replaces.
			{Name: "128K-rows-topk-2048", Make: func() spec.FP8DequantTopKInput {
				return spec.FP8DequantTopKInput{Kq: fp8QuantRows(128 << 10), TopK: spreadTopK(1, 2048, 128<<10)}
			}},
			{Name: "128K-rows-all-referenced", Make: func() spec.FP8DequantTopKInput {
				return spec.FP8DequantTopKInput{Kq: fp8QuantRows(128 << 10), TopK: spreadTopK(64, 2048, 128<<10)}
			}},
		},
	}
}
