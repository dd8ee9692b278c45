package ref

import (
	"math"
	"slices"
	"sort"

	"github.com/kvtwin/kvtwin/spec"
)

// This file is mqa.chunked_topk (docs/spec/cp-layout.md §8.3): per query row, the
// top-k K positions of its logits window, processed in row chunks whose
// per-row inputs (window bounds and RAGGED offsets) are sliced by the same
// row range, so chunking never changes the result.

// MQATopKKey is the §8.3 order-preserving sort key: larger keys rank
// first; NaN (either sign) is 0, below −Inf; −0 and +0 share +0's key.
func MQATopKKey(x float32) uint32 {
	if x != x {
		return 0
	}
	if x == 0 {
		x = 0 // −0 == +0; the assignment drops the sign
	}
	u := math.Float32bits(x)
	if u>>31 == 1 {
		return ^u
	}
	return u | 0x80000000
}

// MQAChunkedTopK is mqa.chunked_topk (docs/spec/cp-layout.md §8.3): rows are
// processed in chunks [s, min(s+c, Q)) with ks, ke and offset sliced by the
// same row range.
func MQAChunkedTopK(lim spec.Limits, in spec.MQAChunkedTopKInput) (spec.MQAChunkedTopKOutput, error) {
	if _, err := ValidateMQAChunkedTopK(lim, in); err != nil {
		return spec.MQAChunkedTopKOutput{}, err
	}
	q := int64(len(in.Logits))
	out := spec.MQAChunkedTopKOutput{Indices: make([][]int32, 0, q)}
	for s := int64(0); s < q; s += in.ChunkRows {
		e := min(s+in.ChunkRows, q)
		var off []int32
		if len(in.Offset) > 0 {
			off = in.Offset[s:e]
		}
		out.Indices = append(out.Indices, mqaTopKChunk(in.Logits[s:e], in.KS[s:e], in.KE[s:e], off, in.TopK)...)
	}
	return out, nil
}

// mqaTopKChunk is one chunk of §8.3: for each of its rows, sort the window's
// candidates by (key descending, j ascending), keep the first min(topk, n),
// and emit them in ascending j order as j − ks (+ offset), padded with −1.
// off is the chunk's own rows' offsets (nil for none). Preconditions: the
// inputs passed ValidateMQAChunkedTopK and are sliced to the same rows.
func mqaTopKChunk(logits [][]float32, ks, ke []int64, off []int32, topk int64) [][]int32 {
	rows := make([][]int32, len(logits))
	for r, row := range logits {
		var cand []int64
		for j := ks[r]; j < ke[r]; j++ {
			cand = append(cand, j)
		}
		sort.SliceStable(cand, func(a, b int) bool {
			ka, kb := MQATopKKey(row[cand[a]]), MQATopKKey(row[cand[b]])
			return ka > kb || (ka == kb && cand[a] < cand[b])
		})
		sel := cand[:min(topk, int64(len(cand)))]
		slices.Sort(sel)
		var add int64
		if off != nil {
			add = int64(off[r])
		}
		rows[r] = make([]int32, topk)
		for i := range rows[r] {
			rows[r][i] = -1
		}
		for i, j := range sel {
			rows[r][i] = int32(j - ks[r] + add)
		}
	}
	return rows
}
