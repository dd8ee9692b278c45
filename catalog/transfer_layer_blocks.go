package catalog

import (
	"math/rand/v2"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TransferLayerBlocks registers transfer.layer_blocks (docs/spec/transfer.md §3).
func TransferLayerBlocks() *Op[spec.TransferLayerBlocksInput, spec.TransferLayerBlocksOutput] {
	return &Op[spec.TransferLayerBlocksInput, spec.TransferLayerBlocksOutput]{
		OpName:  "transfer.layer_blocks",
		SpecRef: "transfer.md §3",
		Summary: "RDMA blocks (src, dst, len) of every transfer entry for one chunk's page pairs, entry-major",
		Ref:     ref.TransferLayerBlocks,
		Fast:    fast.TransferLayerBlocks,
		Sample: spec.TransferLayerBlocksInput{ // docs/spec/transfer.md §3.4
			IsMLA: true, Owned: []int64{3, 4, 9}, DstPages: []int64{20, 21, 22},
			SrcPtrs: []uint64{0x10000000, 0x20000000}, DstPtrs: []uint64{0x90000000, 0xA0000000},
			ItemLens: []uint64{1024, 1024},
		},
		Shapes: []Shape[spec.TransferLayerBlocksInput]{
			{Name: "glm5-mla-79-entries-1024-pages", Make: func() spec.TransferLayerBlocksInput {
				// 78 hooked layers + the MTP draft buffer; 1024 pages in 4 runs.
				src, dst := pagePairs(1024, 256, rand.New(rand.NewPCG(7, 8)))
				return layerInput(true, 79, 79, 1024*576, src, dst)
			}},
			{Name: "glm5-mla-pp-stage-2-of-2", Make: func() spec.TransferLayerBlocksInput {
				// The second PP stage's 40 layers write decode layers 39..78.
				src, dst := pagePairs(1024, 256, rand.New(rand.NewPCG(7, 8)))
				in := layerInput(true, 40, 79, 1024*576, src, dst)
				in.StartLayer = 39
				return in
			}},
			{Name: "mha-80-layers-512-pages-runs-1-64", Make: func() spec.TransferLayerBlocksInput {
				// 8 KV heads × 128 dims × bf16 × 64-token pages per K or V entry.
				src, dst := pagePairs(512, 64, rand.New(rand.NewPCG(9, 10)))
				return layerInput(false, 160, 160, 8*128*2*64, src, dst)
			}},
		},
	}
}

// layerInput lays out entries prefill and dstEntries decode buffers, each
// just large enough for its side's largest page at item_len bytes per page
// (rounded to 2 MiB), with the data lens known on both sides.
func layerInput(mla bool, entries, dstEntries int, itemLen uint64, owned, dstPages []int64) spec.TransferLayerBlocksInput {
	in := spec.TransferLayerBlocksInput{IsMLA: mla, Owned: owned, DstPages: dstPages}
	srcBytes, dstBytes := poolBytes(owned, itemLen), poolBytes(dstPages, itemLen)
	for e := range entries {
		in.SrcPtrs = append(in.SrcPtrs, 0x7f0000000000+uint64(e)*srcBytes)
		in.ItemLens = append(in.ItemLens, itemLen)
		in.SrcDataLens = append(in.SrcDataLens, srcBytes)
	}
	for e := range dstEntries {
		in.DstPtrs = append(in.DstPtrs, 0x3f0000000000+uint64(e)*dstBytes)
		in.DstDataLens = append(in.DstDataLens, dstBytes)
	}
	return in
}

func poolBytes(pages []int64, itemLen uint64) uint64 {
	const align = 2 << 20
	top := int64(0)
	for _, p := range pages {
		top = max(top, p+1)
	}
	return (uint64(top)*itemLen + align - 1) / align * align
}
