package mutants

import (
	"slices"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/spec"
)

// VItemLenForK is docs/spec/transfer.md §3's suggested mutation: the MHA K entries
// are scaled by the V half's item_len (item_lens[n+l] for K_l), so K
// blocks land at the wrong offsets whenever K and V page sizes differ.
// Property 1 (cross-layer) and property 3 (per-layer == monolithic) break.
func VItemLenForK() equiv.Killable {
	return &equiv.Mutant[spec.TransferLayerBlocksInput, spec.TransferLayerBlocksOutput]{
		Spec:    equiv.TransferLayerBlocks(),
		ID:      "v-item-len-for-k",
		Section: "transfer.md §3",
		About:   "MHA K entries use the V half's item_len: K blocks are misplaced when K and V item lens differ",
		Fn: func(lim spec.Limits, in spec.TransferLayerBlocksInput) (spec.TransferLayerBlocksOutput, error) {
			if n := len(in.ItemLens) / 2; !in.IsMLA && len(in.ItemLens) == 2*n {
				lens := slices.Clone(in.ItemLens)
				copy(lens[:n], lens[n:])
				in.ItemLens = lens
			}
			return fast.TransferLayerBlocks(lim, in)
		},
	}
}
