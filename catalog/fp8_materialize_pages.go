package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/ref"
)

// fp8Pool builds a pool of size+ps patterned rows.
func fp8Pool(ps, size int64) ref.FP8Pool {
	return ref.FP8Pool{PageSize: ps, Size: size, Rows: patternRows(ref.FP8RowBytes, int(size+ps))}
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
func FP8StorePages() *Op[ref.FP8StorePagesInput, ref.FP8StorePagesOutput] {
	return &Op[ref.FP8StorePagesInput, ref.FP8StorePagesOutput]{
		OpName:  "fp8.store_pages",
		SpecRef: "cp-layout.md §7.4",
		Summary: "write 656-byte FP8 rows into the page-slot pool at their token locs (range and duplicate checked)",
		Ref:     ref.FP8StorePages,
		Fast:    fast.FP8StorePages,
		CUDA:    cuda.FP8StorePages,
		Sample:  ref.FP8StorePagesInput{Pool: fp8Pool(2, 4), Locs: []int64{2, 3}, Rows: patternRows(ref.FP8RowBytes, 2)},
		Shapes: []Shape[ref.FP8StorePagesInput]{
			// A 128K-slot pool (ps=64) receiving 32 pages: the pool copy
			// (the op returns a new pool) is the yardstick.
			{Name: "pool-128K-slots-ps64-store-2048-rows", CopyBytes: (128<<10 + 64) * mlaRowBytes, Make: func() ref.FP8StorePagesInput {
				return ref.FP8StorePagesInput{Pool: fp8Pool(64, 128<<10), Locs: pageAlignedLocs(64, 32), Rows: patternRows(ref.FP8RowBytes, 2048)}
			}},
		},
	}
}

// FP8MaterializePages registers fp8.materialize_pages (docs/spec/cp-layout.md §7.4).
func FP8MaterializePages() *Op[ref.FP8MaterializePagesInput, ref.FP8MaterializePagesOutput] {
	return &Op[ref.FP8MaterializePagesInput, ref.FP8MaterializePagesOutput]{
		OpName:  "fp8.materialize_pages",
		SpecRef: "cp-layout.md §7.4",
		Summary: "gather raw 656-byte FP8 rows from the page-slot pool (flattened page table, no dequant)",
		Ref:     ref.FP8MaterializePages,
		Fast:    fast.FP8MaterializePages,
		CUDA:    cuda.FP8MaterializePages,
		Sample:  ref.FP8MaterializePagesInput{Pool: fp8Pool(2, 4), Slots: []int64{2, 3, 4, 5}},
		Shapes: []Shape[ref.FP8MaterializePagesInput]{
			{Name: "pool-128K-slots-ps64-gather-64K-rows", CopyBytes: 64 << 10 * mlaRowBytes, Make: func() ref.FP8MaterializePagesInput {
				return ref.FP8MaterializePagesInput{Pool: fp8Pool(64, 128<<10), Slots: pageAlignedLocs(64, 1024)}
			}},
		},
	}
}
