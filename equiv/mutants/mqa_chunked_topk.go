package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// ChunkOffsetsNotRowAddressed is docs/spec/cp-layout.md §8.6 bug 2: the row-chunk
// loop passed every chunk offset[0 : end−start] instead of offset[start :
// end], so rows of later chunks were shifted by earlier requests' offsets
// (the seed's directive: CP-ragged chunking relies on row-addressed
// topk_indices_offset_override).
func ChunkOffsetsNotRowAddressed() equiv.Killable {
	return &equiv.Mutant[spec.MQAChunkedTopKInput, spec.MQAChunkedTopKOutput]{
		Spec:    equiv.MQAChunkedTopK(),
		ID:      "chunk-offsets-not-row-addressed",
		Section: "cp-layout.md §8.6",
		About:   "each row chunk reads offset[0:end-start] instead of offset[start:end]",
		Fn: func(lim spec.Limits, in spec.MQAChunkedTopKInput) (spec.MQAChunkedTopKOutput, error) {
			if _, err := ref.ValidateMQAChunkedTopK(lim, in); err != nil {
				return spec.MQAChunkedTopKOutput{}, err
			}
			q := int64(len(in.Logits))
			out := spec.MQAChunkedTopKOutput{Indices: [][]int32{}}
			for s := int64(0); s < q; s += in.ChunkRows {
				e := min(s+in.ChunkRows, q)
				chunk := spec.MQAChunkedTopKInput{Logits: in.Logits[s:e], KS: in.KS[s:e], KE: in.KE[s:e], TopK: in.TopK, ChunkRows: e - s}
				if len(in.Offset) > 0 {
					chunk.Offset = in.Offset[0 : e-s] // the bug: not offset[s:e]
				}
				part, err := fast.MQAChunkedTopK(lim, chunk)
				if err != nil {
					return spec.MQAChunkedTopKOutput{}, err
				}
				out.Indices = append(out.Indices, part.Indices...)
			}
			return out, nil
		},
	}
}
