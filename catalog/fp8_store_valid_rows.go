package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// reqToTokenSpans gives request i of lens the contiguous token locs
// [at, at + prefix + L_i) after the padding page, requests one after the
// other.
func reqToTokenSpans(ps int64, prefix int, lens []int) ([][]int64, []int) {
	r2t, pre := make([][]int64, len(lens)), make([]int, len(lens))
	at := ps
	for i, l := range lens {
		pre[i] = prefix
		for range prefix + l {
			r2t[i] = append(r2t[i], at)
			at++
		}
	}
	return r2t, pre
}

// FP8StoreValidRows registers fp8.store_valid_rows (docs/spec/cp-layout.md §7.4).
func FP8StoreValidRows() *Op[spec.FP8StoreValidRowsInput, spec.FP8StoreValidRowsOutput] {
	return &Op[spec.FP8StoreValidRowsInput, spec.FP8StoreValidRowsOutput]{
		OpName:  "fp8.store_valid_rows",
		SpecRef: "cp-layout.md §7.4",
		Summary: "rank r's FP8 cache write: its valid local rows quantized and stored at req_to_token[i][P_i + t] (padding never stored)",
		Ref:     ref.FP8StoreValidRows,
		Fast:    fast.FP8StoreValidRows,
		Sample: func() spec.FP8StoreValidRowsInput {
			// cp=2, g=1, L=[3]: rank 0 holds a0 and one padding row.
			r2t, pre := reqToTokenSpans(2, 2, []int{3})
			return spec.FP8StoreValidRowsInput{Pool: fp8Pool(2, 8), Layout: spec.LayoutSpec{CP: 2, Lens: []int{3}, Granule: 1}, Rank: 0, X: finiteBF16Rows(2), ReqToToken: r2t, PrefixLens: pre}
		}(),
		Shapes: []Shape[spec.FP8StoreValidRowsInput]{
			// A 128K-slot pool (ps=64); cp=2 unpadded, bs=4 × 8K tokens:
			// rank 0 quantizes and stores 16K rows.
			{Name: "pool-128K-slots-ps64-cp2-bs4x8K-rank0", Make: func() spec.FP8StoreValidRowsInput {
				lens := []int{8192, 8192, 8192, 8192}
				r2t, pre := reqToTokenSpans(64, 0, lens)
				return spec.FP8StoreValidRowsInput{Pool: fp8Pool(64, 128<<10), Layout: spec.LayoutSpec{CP: 2, Lens: lens}, Rank: 0, X: finiteBF16Rows(16384), ReqToToken: r2t, PrefixLens: pre}
			}},
		},
	}
}
