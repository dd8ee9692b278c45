package catalog

import (
	"math/rand/v2"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TransferFilterCPRank registers transfer.filter_cp_rank (docs/spec/transfer.md §1).
func TransferFilterCPRank() *Op[spec.TransferFilterCPRankInput, spec.TransferFilterCPRankOutput] {
	return &Op[spec.TransferFilterCPRankInput, spec.TransferFilterCPRankOutput]{
		OpName:  "transfer.filter_cp_rank",
		SpecRef: "transfer.md §1",
		Summary: "pages one CP rank sends for a chunk, and their absolute request positions",
		Ref:     ref.TransferFilterCPRank,
		Fast:    fast.TransferFilterCPRank,
		CUDA:    cuda.TransferFilterCPRank,
		Sample:  spec.TransferFilterCPRankInput{KV: []int64{40, 41, 42, 43, 44}, ChunkPageStart: 8, CPRank: 1, CPSize: 2},
		Shapes: []Shape[spec.TransferFilterCPRankInput]{
			{Name: "1024-pages-contiguous", Make: func() spec.TransferFilterCPRankInput {
				return spec.TransferFilterCPRankInput{KV: contiguousPages(5000, 1024), ChunkPageStart: 2048, CPRank: 3, CPSize: 8}
			}},
			{Name: "1024-pages-shuffled", Make: func() spec.TransferFilterCPRankInput {
				kv := contiguousPages(5000, 1024)
				rng := rand.New(rand.NewPCG(1, 2))
				rng.Shuffle(len(kv), func(i, j int) { kv[i], kv[j] = kv[j], kv[i] })
				return spec.TransferFilterCPRankInput{KV: kv, ChunkPageStart: 2048, CPRank: 3, CPSize: 8}
			}},
			{Name: "1024-pages-position-range", Make: func() spec.TransferFilterCPRankInput {
				total := int64(8192)
				// rank 3 owns request pages [3072, 4096): half of this chunk.
				return spec.TransferFilterCPRankInput{KV: contiguousPages(5000, 1024), ChunkPageStart: 2560,
					TotalPages: &total, CPRank: 3, CPSize: 8, Policy: spec.PositionRange}
			}},
		},
	}
}

func contiguousPages(first int64, n int) []int64 {
	kv := make([]int64, n)
	for i := range kv {
		kv[i] = first + int64(i)
	}
	return kv
}
