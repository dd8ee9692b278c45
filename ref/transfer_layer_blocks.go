package ref

import (
	"fmt"

	"github.com/kvtwin/kvtwin/spec"
)

// blockBytes is the size of one Block in an output list, for Limits.CheckOutput.
const blockBytes = 24

// selectDst applies §3.2's PP rule: equal layer counts pair positionally,
// otherwise the decode side is sliced at start_layer and must cover it.
func selectDst(in spec.TransferLayerBlocksInput) (spec.LayerGeometry, error) {
	g := spec.LayerGeometry{Entries: len(in.SrcPtrs), Half: len(in.SrcPtrs), DstHalf: len(in.DstPtrs)}
	unit := "entries"
	if !in.IsMLA {
		g.Half, g.DstHalf, unit = g.Half/2, g.DstHalf/2, "layers per K/V half"
	}
	if g.Half == g.DstHalf {
		return g, nil
	}
	if in.StartLayer > int64(g.DstHalf)-int64(g.Half) {
		return spec.LayerGeometry{}, spec.Reject(spec.ErrDstPtrRange, "start_layer", in.StartLayer,
			fmt.Sprintf("start_layer + %d <= %d decode %s", g.Half, g.DstHalf, unit))
	}
	g.DstOffset = int(in.StartLayer)
	return g, nil
}

// BuildLayerBlocks is the seed's per-layer address computation (docs/spec/transfer.md
// §3.1): one block per run, both sides scaled by the source item_len.
// Preconditions: the addresses fit in uint64 (CheckLayerAddresses).
func BuildLayerBlocks(srcBase, dstBase, itemLen uint64, runs []spec.Run) []spec.Block {
	blocks := make([]spec.Block, 0, len(runs))
	for _, r := range runs {
		blocks = append(blocks, spec.Block{
			Src: srcBase + uint64(r.SrcStart)*itemLen,
			Dst: dstBase + uint64(r.DstStart)*itemLen,
			Len: uint64(r.Count) * itemLen,
		})
	}
	return blocks
}

// TransferLayerBlocks returns the monolithic batch of one chunk (docs/spec/transfer.md §3.3):
// the §2 runs of (owned, dst_pages) computed once, and for every entry in
// order its BuildLayerBlocks, concatenated.
func TransferLayerBlocks(lim spec.Limits, in spec.TransferLayerBlocksInput) (spec.TransferLayerBlocksOutput, error) {
	if err := CheckLayerPages(in); err != nil {
		return spec.TransferLayerBlocksOutput{}, err
	}
	g, err := CheckLayerPointers(in)
	if err != nil {
		return spec.TransferLayerBlocksOutput{}, err
	}
	runs := groupRuns(in.Owned, in.DstPages)
	if err := CheckBlockCount(lim, g.Entries, len(runs)); err != nil {
		return spec.TransferLayerBlocksOutput{}, err
	}
	if err := CheckLayerAddresses(in, g); err != nil {
		return spec.TransferLayerBlocksOutput{}, err
	}
	blocks := []spec.Block{}
	for e := range g.Entries {
		ent := g.EntryAt(in, e)
		blocks = append(blocks, BuildLayerBlocks(ent.SrcBase, ent.DstBase, ent.ItemLen, runs)...)
	}
	return spec.TransferLayerBlocksOutput{Runs: runs, Blocks: blocks, BlocksPerEntry: int64(len(runs))}, nil
}
