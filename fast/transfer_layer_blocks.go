package fast

import (
	"cmp"
	"math"
	"math/bits"
	"slices"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TransferLayerBlocks is the precomputed-runs twin of ref.TransferLayerBlocks (docs/spec/transfer.md
// §3 "fast"): the runs are grouped once by fast's Run emitter, every
// entry's address range is checked once against its largest page instead of
// page by page, and the blocks are a multiply-add loop into one exact-size
// preallocated list. Rejections are reported by ref's checks, so the first
// violation is the same.
func TransferLayerBlocks(lim spec.Limits, in spec.TransferLayerBlocksInput) (spec.TransferLayerBlocksOutput, error) {
	runs, ok := groupPages(in.Owned, in.DstPages)
	if !ok || !dstRunsDisjoint(runs) {
		return spec.TransferLayerBlocksOutput{}, ref.CheckLayerPages(in)
	}
	g, err := ref.CheckLayerPointers(in)
	if err != nil {
		return spec.TransferLayerBlocksOutput{}, err
	}
	if err := ref.CheckBlockCount(lim, g.Entries, len(runs)); err != nil {
		return spec.TransferLayerBlocksOutput{}, err
	}
	srcEnd, dstEnd := pageEnds(runs)
	for e := range g.Entries {
		if !entryInRange(in, g.EntryAt(in, e), srcEnd, dstEnd) {
			return spec.TransferLayerBlocksOutput{}, ref.CheckLayerAddresses(in, g)
		}
	}
	blocks := make([]spec.Block, g.Entries*len(runs))
	for e := range g.Entries {
		ent := g.EntryAt(in, e)
		fillBlocks(blocks[e*len(runs):(e+1)*len(runs)], runs, ent.SrcBase, ent.DstBase, ent.ItemLen)
	}
	return spec.TransferLayerBlocksOutput{Runs: runs, Blocks: blocks, BlocksPerEntry: int64(len(runs))}, nil
}

// groupPages is groupRuns for the KV path, where lengths must be equal even
// when one side is empty; ok = false means CheckLayerPages will reject.
func groupPages(owned, dst []int64) (runs []spec.Run, ok bool) {
	switch {
	case len(owned) != len(dst):
		return nil, false
	case len(owned) == 0:
		return []spec.Run{}, true
	}
	return groupRuns(owned, dst, segmentsFor(len(owned)))
}

// dstRunsDisjoint reports whether no decode page appears twice (§3.5.4).
// Pages inside a run are strictly ascending, so only runs can collide; when
// the runs' decode ranges already ascend (the usual allocator order) one
// scan proves it, otherwise a sorted copy of the runs is scanned.
func dstRunsDisjoint(runs []spec.Run) bool {
	if disjointInOrder(runs) {
		return true
	}
	byDst := slices.Clone(runs)
	slices.SortFunc(byDst, func(a, b spec.Run) int { return cmp.Compare(a.DstStart, b.DstStart) })
	return disjointInOrder(byDst)
}

// disjointInOrder reports whether each run's decode range starts at or after
// the previous one's end. The gap is a difference of non-negative ids, so
// it cannot overflow even for a run ending at MaxInt64.
func disjointInOrder(runs []spec.Run) bool {
	for k := 1; k < len(runs); k++ {
		if runs[k].DstStart-runs[k-1].DstStart < runs[k-1].Count {
			return false
		}
	}
	return true
}

// pageEnds returns 1 + the largest page on each side: a block's end offset
// is (page+1)*item_len at its last page, so the largest page bounds every
// block of every entry. 0 when there are no pages.
func pageEnds(runs []spec.Run) (srcEnd, dstEnd uint64) {
	for _, r := range runs {
		srcEnd = max(srcEnd, uint64(r.SrcStart)+uint64(r.Count))
		dstEnd = max(dstEnd, uint64(r.DstStart)+uint64(r.Count))
	}
	return srcEnd, dstEnd
}

// entryInRange reports whether every block of ent fits in uint64 and in the
// known data lens, given the page ends from pageEnds.
func entryInRange(in spec.TransferLayerBlocksInput, ent spec.LayerEntry, srcEnd, dstEnd uint64) bool {
	return sideInRange(srcEnd, ent.ItemLen, ent.SrcBase, in.SrcDataLens, ent.SrcIdx) &&
		sideInRange(dstEnd, ent.ItemLen, ent.DstBase, in.DstDataLens, ent.DstIdx)
}

func sideInRange(pageEnd, itemLen, base uint64, dataLens []uint64, idx int) bool {
	hi, end := bits.Mul64(pageEnd, itemLen)
	if hi != 0 || end > math.MaxUint64-base {
		return false
	}
	return len(dataLens) == 0 || end <= dataLens[idx]
}

// fillBlocks writes one entry's blocks; the range checks above guarantee
// no product or sum wraps.
func fillBlocks(out []spec.Block, runs []spec.Run, srcBase, dstBase, itemLen uint64) {
	out = out[:len(runs)]
	for k, r := range runs {
		out[k] = spec.Block{
			Src: srcBase + uint64(r.SrcStart)*itemLen,
			Dst: dstBase + uint64(r.DstStart)*itemLen,
			Len: uint64(r.Count) * itemLen,
		}
	}
}
