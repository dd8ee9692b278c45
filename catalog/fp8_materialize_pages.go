package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// fp8Pool builds a pool of size+ps patterned rows.
func fp8Pool(ps, size int64) spec.FP8Pool {
	return spec.FP8Pool{PageSize: ps, Size: size, Rows: patternRows(spec.FP8RowBytes, int(size+ps))}
}

// pageAlignedLocs lists the slots of n whole pages of ps slots, taking
// every other page from page 1 (page 0 is the padding page).
func pageAlignedLocs(ps int64, pages int) []int64 {
	locs := make([]int64, 0, int64(pages)*ps)
	for p := range int64(pages) {
		for s := range ps {
			locs = append(locs, (1+2*p)*ps+s)
		}
	}
	return locs
}

// FP8StorePages registers fp8.store_pages (docs/spec/cp-layout.md §7.4).
func FP8StorePages() *Op[spec.FP8StorePagesInput, spec.FP8StorePagesOutput] {
	return &Op[spec.FP8StorePagesInput, spec.FP8StorePagesOutput]{
		OpName:  "fp8.store_pages",
		SpecRef: "cp-layout.md §7.4",
		Summary: "write 656-byte FP8 rows into the page-slot pool at their token locs (range and duplicate checked)",
		Ref:     ref.FP8StorePages,
		Fast:    fast.FP8StorePages,
		CUDA:    cuda.FP8StorePages,
		Sample:  spec.FP8StorePagesInput{Pool: fp8Pool(2, 4), Locs: []int64{2, 3}, Rows: patternRows(spec.FP8RowBytes, 2)},
		Shapes: []Shape[spec.FP8StorePagesInput]{
			// A 128K-slot pool (ps=64) receiving 32 pages: the pool copy
			// (the op returns a new pool) is the yardstick.
			{Name: "pool-128K-slots-ps64-store-2048-rows", CopyBytes: (128<<10 + 64) * mlaRowBytes, Make: func() spec.FP8StorePagesInput {
				return spec.FP8StorePagesInput{Pool: fp8Pool(64, 128<<10), Locs: pageAlignedLocs(64, 32), Rows: patternRows(spec.FP8RowBytes, 2048)}
			}},
		},
	}
}

// FP8MaterializePages registers fp8.materialize_pages (docs/spec/cp-layout.md §7.4).
func FP8MaterializePages() *Op[spec.FP8MaterializePagesInput, spec.FP8MaterializePagesOutput] {
	return &Op[spec.FP8MaterializePagesInput, spec.FP8MaterializePagesOutput]{
		OpName:  "fp8.materialize_pages",
		SpecRef: "cp-layout.md §7.4",
		Summary: "gather raw 656-byte FP8 rows from the page-slot pool (flattened page table, no dequant)",
		Ref:     ref.FP8MaterializePages,
		Fast:    fast.FP8MaterializePages,
		CUDA:    cuda.FP8MaterializePages,
		Sample:  spec.FP8MaterializePagesInput{Pool: fp8Pool(2, 4), Slots: []int64{2, 3, 4, 5}},
		Shapes: []Shape[spec.FP8MaterializePagesInput]{
			{Name: "pool-128K-slots-ps64-gather-64K-rows", CopyBytes: 64 << 10 * mlaRowBytes, Make: func() spec.FP8MaterializePagesInput {
				return spec.FP8MaterializePagesInput{Pool: fp8Pool(64, 128<<10), Slots: pageAlignedLocs(64, 1024)}
			}},
		},
	}
}
