package catalog

import (
	"math/rand/v2"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// MQAChunkedTopK registers mqa.chunked_topk (docs/spec/cp-layout.md §8.3).
func MQAChunkedTopK() *Op[spec.MQAChunkedTopKInput, spec.MQAChunkedTopKOutput] {
	return &Op[spec.MQAChunkedTopKInput, spec.MQAChunkedTopKOutput]{
		OpName:  "mqa.chunked_topk",
		SpecRef: "cp-layout.md §8.3",
		Summary: "per-row top-k of MQA logits windows, in row chunks with row-addressed RAGGED offsets; emitted in ascending position, padded with -1",
		Ref:     ref.MQAChunkedTopK,
		Fast:    fast.MQAChunkedTopK,
		// §8.6's minimal input: two rows of two requests, offsets [0, 10], one row per chunk.
		Sample: spec.MQAChunkedTopKInput{
			Logits:    [][]float32{{0.5, 2, -1, 2}, {3, 0, 1, 1}},
			KS:        []int64{0, 1},
			KE:        []int64{4, 4},
			TopK:      2,
			Offset:    []int32{0, 10},
			ChunkRows: 1,
		},
		Shapes: []Shape[spec.MQAChunkedTopKInput]{
			{Name: "q128-k16384-top2048", Make: func() spec.MQAChunkedTopKInput { return topkRows(128, 16384, 2048, false) }},
			{Name: "q128-k16384-top2048-ragged", Make: func() spec.MQAChunkedTopKInput { return topkRows(128, 16384, 2048, true) }},
			{Name: "q1024-k4096-top512-ragged", Make: func() spec.MQAChunkedTopKInput { return topkRows(1024, 4096, 512, true) }},
		},
	}
}

// topkRows draws q rows of kt logits in [-8, 8) with some exact ties. The
// plain shape gives every row the whole width; the ragged one gives each
// row a causal window ending at its position in a request of q/4 rows (the
// RAGGED layout of four requests), with offsets to each request's K base.
func topkRows(q, kt int, topk int64, ragged bool) spec.MQAChunkedTopKInput {
	rng := rand.New(rand.NewPCG(uint64(q), uint64(kt)))
	in := spec.MQAChunkedTopKInput{Logits: make([][]float32, q), KS: make([]int64, q), KE: make([]int64, q), TopK: topk, ChunkRows: 64}
	for r := range in.Logits {
		row := make([]float32, kt)
		for j := range row {
			row[j] = float32(rng.IntN(1<<14)-(1<<13)) / 1024
		}
		in.Logits[r] = row
		in.KE[r] = int64(kt)
	}
	if ragged {
		in.Offset = make([]int32, q)
		per := q / 4
		for r := range q {
			req, pos := r/per, r%per
			in.KS[r] = int64(req * kt / 4)
			in.KE[r] = in.KS[r] + int64((pos+1)*(kt/4)/per)
			in.Offset[r] = int32(req * kt)
		}
	}
	return in
}
