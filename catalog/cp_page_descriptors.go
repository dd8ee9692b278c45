package catalog

import (
	"math/rand/v2"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// CPPageDescriptors registers cp.page_descriptors (docs/spec/cp-layout.md §6).
func CPPageDescriptors() *Op[spec.CPPageDescriptorsInput, spec.CPPageDescriptorsOutput] {
	return &Op[spec.CPPageDescriptorsInput, spec.CPPageDescriptorsOutput]{
		OpName:  "cp.page_descriptors",
		SpecRef: "cp-layout.md §6.1",
		Summary: "row-scoped page descriptors (CSR, sorted by page per row) of a batch's page windows",
		Ref:     ref.CPPageDescriptors,
		Fast:    fast.CPPageDescriptors,
		// One descriptor per page, from the page lists: about 4 output bytes
		// per request byte, bounded by the lists, not by a number. Measured
		// with the harness's limits on 1 MiB of page lists: ref 88 B per
		// request byte (rows of 8 one-digit pages; 81 for the example's rows
		// repeated), fast 53.
		Work:   Cost{PerInputByte: 128, PerOutputByte: 8, Fixed: 4 << 20},
		Sample: spec.CPPageDescriptorsInput{Pages: [][]int64{{7, 3}, {3, 9}}},
		Shapes: []Shape[spec.CPPageDescriptorsInput]{
			{Name: "bs10-100K-tokens-ps64-shared-prefix", Make: func() spec.CPPageDescriptorsInput {
				return spec.CPPageDescriptorsInput{Pages: sharedPrefixWindows(10, 100_000, 40_000, 64)}
			}},
		},
	}
}

// CPRemapLocs registers cp.remap_locs (docs/spec/cp-layout.md §6).
func CPRemapLocs() *Op[spec.CPRemapLocsInput, spec.CPRemapLocsOutput] {
	return &Op[spec.CPRemapLocsInput, spec.CPRemapLocsOutput]{
		OpName:  "cp.remap_locs",
		SpecRef: "cp-layout.md §6.1",
		Summary: "row-aware remap of flattened KV locations into a row-scoped compact buffer",
		Ref:     ref.CPRemapLocs,
		Fast:    fast.CPRemapLocs,
		CUDA:    cuda.CPRemapLocs,
		Sample: spec.CPRemapLocsInput{PageSize: 2, Pages: [][]int64{{7, 3}, {3, 9}},
			Locs: []int64{14, 7, 6, 19, -1}, RowIDs: []int32{0, 0, 1, 1, 1}},
		Shapes: []Shape[spec.CPRemapLocsInput]{
			{Name: "bs10-100K-tokens-ps64-shared-prefix", Make: func() spec.CPRemapLocsInput {
				return flattenedRagged(10, 100_000, 40_000, 64)
			}},
		},
	}
}

// sharedPrefixWindows is bs rows of tokens tokens each whose first shared
// tokens sit on pages every row shares (a radix-cache prefix hit); page
// ids come shuffled from one pool, as a page allocator hands them out.
func sharedPrefixWindows(bs, tokens, shared int, ps int64) [][]int64 {
	perRow := (int64(tokens) + ps - 1) / ps
	common := int64(shared) / ps
	pool := make([]int64, common+int64(bs)*(perRow-common))
	for i := range pool {
		pool[i] = int64(i) * 3
	}
	rng := rand.New(rand.NewPCG(6, 4))
	rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	next := common
	rows := make([][]int64, bs)
	for b := range rows {
		rows[b] = append(make([]int64, 0, perRow), pool[:common]...)
		rows[b] = append(rows[b], pool[next:next+perRow-common]...)
		next += perRow - common
	}
	return rows
}

// flattenedRagged is the RAGGED flattened page table of sharedPrefixWindows:
// every token of every row in row order, as loc = page·ps + offset.
func flattenedRagged(bs, tokens, shared int, ps int64) spec.CPRemapLocsInput {
	in := spec.CPRemapLocsInput{PageSize: ps, Pages: sharedPrefixWindows(bs, tokens, shared, ps),
		Locs: make([]int64, 0, bs*tokens), RowIDs: make([]int32, 0, bs*tokens)}
	for b, row := range in.Pages {
		for t := range int64(tokens) {
			in.Locs = append(in.Locs, row[t/ps]*ps+t%ps)
			in.RowIDs = append(in.RowIDs, int32(b))
		}
	}
	return in
}
