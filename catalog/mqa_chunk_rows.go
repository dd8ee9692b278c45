package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// MQAChunkRows registers mqa.chunk_rows (docs/spec/cp-layout.md §8.1, §8.2, §8.4).
func MQAChunkRows() *Op[spec.MQAChunkRowsInput, spec.MQAChunkRowsOutput] {
	two := int64(2)
	return &Op[spec.MQAChunkRowsInput, spec.MQAChunkRowsOutput]{
		OpName:  "mqa.chunk_rows",
		SpecRef: "cp-layout.md §8.1, §8.2, §8.4",
		Summary: "query rows per fp32 MQA-logits chunk under the row/GiB caps or the memory budget, and the CP-aware per-rank admission peak",
		Ref:     ref.MQAChunkRows,
		Fast:    fast.MQAChunkRows,
		// §8.4's example with the row cap: each rank Q=4, K=138 → 2 rows, 1104 B.
		Sample: spec.MQAChunkRowsInput{
			Config: spec.MQAChunkConfig{MaxRows: &two},
			Shapes: []spec.MQALogitsShape{{Q: 4096, K: 131072}},
			Batch:  &spec.MQAPeakBatch{Layout: spec.LayoutSpec{CP: 2, Lens: []int{8}}, Prefix: []int64{64}},
		},
		Shapes: []Shape[spec.MQAChunkRowsInput]{
			{Name: "cp8-bs10-128k-estimator", Make: func() spec.MQAChunkRowsInput { return mqaBatch(8, 10, 64, nil) }},
			{Name: "cp8-bs64-padded-runtime", Make: func() spec.MQAChunkRowsInput {
				return mqaBatch(8, 64, 64, &spec.MQARuntimeBudget{FreeAtInit: 60 << 30, TotalMem: 141 << 30})
			}},
		},
	}
}

// mqaBatch is a high-cache-hit CP prefill batch: bs requests of 4K..131K
// extend tokens with prefixes of about three times that, padded to granule g.
func mqaBatch(cp, bs, g int, rt *spec.MQARuntimeBudget) spec.MQAChunkRowsInput {
	lens, prefix := make([]int, bs), make([]int64, bs)
	for i := range lens {
		lens[i] = 4096 + (i*12841)%(128<<10)
		prefix[i] = int64(3*lens[i] + i)
	}
	gb := 2.0
	return spec.MQAChunkRowsInput{
		Config:  spec.MQAChunkConfig{MaxGB: &gb},
		Runtime: rt,
		Batch:   &spec.MQAPeakBatch{Layout: spec.LayoutSpec{CP: cp, Lens: lens, Granule: g}, Prefix: prefix},
	}
}
