package catalog

import (
	"math/rand/v2"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TransferPrebuiltSlice registers transfer.prebuilt_slice (docs/spec/transfer.md §5).
func TransferPrebuiltSlice() *Op[spec.TransferPrebuiltSliceInput, spec.TransferPrebuiltSliceOutput] {
	five := int64(5)
	return &Op[spec.TransferPrebuiltSliceInput, spec.TransferPrebuiltSliceOutput]{
		OpName:  "transfer.prebuilt_slice",
		SpecRef: "transfer.md §5",
		Summary: "decode-side prebuilt batch: each request's transferred suffix slots and its lengths",
		Ref:     ref.TransferPrebuiltSlice,
		Fast:    fast.TransferPrebuiltSlice,
		Sample: spec.TransferPrebuiltSliceInput{Requests: []spec.PrebuiltRequest{
			{Row: []int64{7, 8, 9, 10}, PrefixLen: 2, ExtendLen: 2, OriginLen: 4, NumOutputs: 1},
			{Row: []int64{20, 21, 22}, PrefixLen: 0, ExtendLen: 3, OriginLen: 3, NumOutputs: 1},
		}, ExtendNumTokens: &five},
		Shapes: []Shape[spec.TransferPrebuiltSliceInput]{
			prebuiltShape("32-reqs-4k-suffix-no-prefix", 32, 0, 4096),
			prebuiltShape("32-reqs-2k-prefix-2k-suffix", 32, 2048, 2048),
			prebuiltShape("256-reqs-512-prefix-128-suffix", 256, 512, 128),
		},
	}
}

// prebuiltShape is a batch of n requests whose rows hold page-contiguous
// slots (64-token pages at scattered page ids), each with the given cached
// prefix and transferred suffix; the yardstick is a copy of the suffixes.
func prebuiltShape(name string, n int, prefix, extend int64) Shape[spec.TransferPrebuiltSliceInput] {
	return Shape[spec.TransferPrebuiltSliceInput]{
		Name:      name,
		CopyBytes: int64(n) * extend * 8,
		Make: func() spec.TransferPrebuiltSliceInput {
			const pageSize = 64
			rng := rand.New(rand.NewPCG(5, uint64(n)))
			total := int64(n) * extend
			in := spec.TransferPrebuiltSliceInput{ExtendNumTokens: &total}
			for range n {
				row := make([]int64, prefix+extend)
				for k := range row {
					if k%pageSize == 0 {
						row[k] = rng.Int64N(1<<20) * pageSize
					} else {
						row[k] = row[k-1] + 1
					}
				}
				in.Requests = append(in.Requests, spec.PrebuiltRequest{Row: row, PrefixLen: prefix, ExtendLen: extend,
					OriginLen: prefix + extend, NumOutputs: 1})
			}
			return in
		},
	}
}
