package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/spec"
)

// ChunkPageStartZero is docs/spec/transfer.md §1.6 (bug B4): the per-layer
// registration called the filter with chunk_page_start = 0, so chunk N > 0
// got chunk-local positions and its KV overwrote chunk 0's decode pages.
func ChunkPageStartZero() equiv.Killable {
	return &equiv.Mutant[spec.TransferFilterCPRankInput, spec.TransferFilterCPRankOutput]{
		Spec:    equiv.TransferFilterCPRank(),
		ID:      "chunk-page-start-zero",
		Section: "transfer.md §1.6",
		About:   "per-layer registration passes chunk_page_start = 0: chunk N>0 is written onto chunk 0's decode pages",
		Fn: func(lim spec.Limits, in spec.TransferFilterCPRankInput) (spec.TransferFilterCPRankOutput, error) {
			in.ChunkPageStart = 0
			return fast.TransferFilterCPRank(lim, in)
		},
	}
}
