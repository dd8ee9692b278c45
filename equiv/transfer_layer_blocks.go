package equiv

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TransferLayerBlocks is the differential spec of transfer.layer_blocks (docs/spec/transfer.md §3).
func TransferLayerBlocks() *Spec[spec.TransferLayerBlocksInput, spec.TransferLayerBlocksOutput] {
	return &Spec[spec.TransferLayerBlocksInput, spec.TransferLayerBlocksOutput]{
		Op:          catalog.TransferLayerBlocks(),
		Valid:       rapid.Custom(layerValid),
		Invalid:     rapid.Custom(layerInvalid),
		Boundary:    layerBoundary(),
		Regressions: layerRegressions(),
		Rejects:     map[string]*spec.Sentinel{"negative-dst-page-after-max-int64": spec.ErrNegative},
		Props: []Prop[spec.TransferLayerBlocksInput, spec.TransferLayerBlocksOutput]{
			{"runs-are-grouped-pages", layerRunsGrouped},
			{"cross-layer-invariant", layerCrossLayer},
			{"byte-count", layerByteCount},
			{"per-layer-concat-equals-monolithic", layerConcat},
			{"disjoint-dst-ranges", layerDisjointDst},
			{"within-data-bounds", layerWithinBounds},
		},
	}
}

// lbEntry is one transfer entry as §3.2 selects it, derived here
// independently of ref: its src_ptrs index, dst_ptrs index and item len.
type lbEntry struct {
	src, dst int
	itemLen  uint64
}

// layerEntries is §3.2 read directly: MLA entry e writes dst e, or dst
// start+e when the layer counts differ, with upstream's item_lens[0]; MHA
// is K_0..K_{n-1}, V_0..V_{n-1} against the decode halves [:D] and [D:],
// sliced at start when n != D, each with its own item len.
// Precondition: in is accepted by ref.
func layerEntries(in spec.TransferLayerBlocksInput) []lbEntry {
	var es []lbEntry
	n, start := len(in.SrcPtrs), int(in.StartLayer)
	if in.IsMLA {
		off := 0
		if len(in.DstPtrs) != n {
			off = start
		}
		for e := range n {
			es = append(es, lbEntry{e, off + e, in.ItemLens[0]})
		}
		return es
	}
	h, d := n/2, len(in.DstPtrs)/2
	kOff, vOff := 0, d
	if h != d {
		kOff, vOff = start, d+start
	}
	for l := range h {
		es = append(es, lbEntry{l, kOff + l, in.ItemLens[l]})
	}
	for l := range h {
		es = append(es, lbEntry{h + l, vOff + l, in.ItemLens[h+l]})
	}
	return es
}

func layerValid(t *rapid.T) spec.TransferLayerBlocksInput {
	return drawLayer(t, rapid.Bool().Draw(t, "is_mla"), 0, 0)
}

// itemLenChoices are bytes per page seen in practice (64-token bf16 pages
// of a 576-wide MLA latent or of 8 KV heads, smaller ones, and one byte for
// the narrowest edge); rapid favours the first.
var itemLenChoices = []uint64{64 * 576 * 2, 64 * 8 * 128 * 2, 1024, 576, 4096, 64, 1}

// drawLayer draws a valid input with at least minLayers layers and minPages
// page pairs: pages in runs with distinct decode pages, PP slicing half the
// time, MHA K and V item lens that usually differ, base addresses realistic,
// random or flush against 2^64, and data lens (when given) at or just above
// what the pages need.
func drawLayer(t *rapid.T, mla bool, minLayers, minPages int) spec.TransferLayerBlocksInput {
	layers := rapid.IntRange(max(minLayers, 1), 4).Draw(t, "layers")
	if minLayers == 0 && rapid.IntRange(0, 7).Draw(t, "no_layers") == 7 {
		layers = 0
	}
	dstLayers, start := layers, rapid.IntRange(0, 6).Draw(t, "ignored_start_layer")
	if rapid.Bool().Draw(t, "pp") {
		dstLayers += rapid.IntRange(1, 3).Draw(t, "extra_dst_layers")
		start = rapid.IntRange(0, dstLayers-layers).Draw(t, "start_layer")
	}
	n := rapid.IntRange(minPages, 24).Draw(t, "pages")
	in := spec.TransferLayerBlocksInput{
		IsMLA:      mla,
		Owned:      pageWalk(t, n, "owned", false),
		DstPages:   distinctPages(t, n),
		StartLayer: int64(start),
	}
	entries, dstPtrs := layers, dstLayers
	if !mla {
		entries, dstPtrs = 2*layers, 2*dstLayers
	}
	in.ItemLens = drawItemLens(t, mla, layers)
	in.SrcPtrs = make([]uint64, entries)
	in.DstPtrs = make([]uint64, dstPtrs)
	placeBuffers(t, &in)
	return in
}

// drawItemLens: one len for every MLA layer; for MHA a K len and a V len
// that differ three times in four (the case that tells K's len from V's),
// and now and then a len per layer.
func drawItemLens(t *rapid.T, mla bool, layers int) []uint64 {
	pick := rapid.SampledFrom(itemLenChoices)
	if mla {
		l := pick.Draw(t, "item_len")
		return slices.Repeat([]uint64{l}, layers)
	}
	k := pick.Draw(t, "k_item_len")
	v := k
	if rapid.IntRange(0, 3).Draw(t, "kv_lens_equal") != 3 {
		v = pick.Filter(func(l uint64) bool { return l != k }).Draw(t, "v_item_len")
	}
	lens := append(slices.Repeat([]uint64{k}, layers), slices.Repeat([]uint64{v}, layers)...)
	if rapid.IntRange(0, 4).Draw(t, "per_layer_lens") == 4 {
		for e := range lens {
			lens[e] = pick.Draw(t, "item_len")
		}
	}
	return lens
}

// distinctPages draws n distinct decode pages: an ascending walk with gaps,
// then kept in order, shuffled run by run, or shuffled page by page.
func distinctPages(t *rapid.T, n int) []int64 {
	pages := make([]int64, n)
	cur := rapid.Int64Range(0, 1<<16).Draw(t, "dst_base")
	for i := range pages {
		pages[i] = cur
		cur += rapid.SampledFrom([]int64{1, 1, 1, 1, 2, 7}).Draw(t, "dst_gap")
	}
	switch rapid.IntRange(0, 2).Draw(t, "dst_order") {
	case 1:
		var runs [][]int64
		for i := 0; i < n; {
			l := min(rapid.IntRange(1, 6).Draw(t, "dst_run"), n-i)
			runs, i = append(runs, pages[i:i+l]), i+l
		}
		return slices.Concat(rapid.Permutation(runs).Draw(t, "dst_runs")...)
	case 2:
		return rapid.Permutation(pages).Draw(t, "dst_pages")
	}
	return pages
}

// needBytes is how far past its base an entry's largest block reaches:
// (max page + 1) * item_len, 0 without pages.
func needBytes(pages []int64, itemLen uint64) uint64 {
	if len(pages) == 0 {
		return 0
	}
	return uint64(slices.Max(pages)+1) * itemLen
}

// placeBuffers sets every src and dst base address, and sometimes the data
// lens, so that every block of in fits. A dst pointer no entry writes
// (outside the PP slice) gets an arbitrary base and length.
func placeBuffers(t *rapid.T, in *spec.TransferLayerBlocksInput) {
	srcNeed := make([]uint64, len(in.SrcPtrs))
	dstNeed := make([]uint64, len(in.DstPtrs))
	for _, e := range layerEntries(*in) {
		srcNeed[e.src] = needBytes(in.Owned, e.itemLen)
		dstNeed[e.dst] = needBytes(in.DstPages, e.itemLen)
	}
	layout := rapid.IntRange(0, 2).Draw(t, "address_layout")
	in.SrcPtrs = placeBases(t, "src", layout, srcNeed, 0x7f0000000000)
	in.DstPtrs = placeBases(t, "dst", layout, dstNeed, 0x3f0000000000)
	if rapid.Bool().Draw(t, "src_data_lens") {
		in.SrcDataLens = dataLens(t, "src", srcNeed)
	}
	if rapid.Bool().Draw(t, "dst_data_lens") {
		in.DstDataLens = dataLens(t, "dst", dstNeed)
	}
}

// placeBases lays buffers of need bytes out back to back from origin
// (layout 0), at random addresses (1), or ending at most 3 bytes below 2^64 (2).
func placeBases(t *rapid.T, side string, layout int, need []uint64, origin uint64) []uint64 {
	bases := make([]uint64, len(need))
	next := origin
	for j, nb := range need {
		switch layout {
		case 0:
			bases[j], next = next, next+nb+4096
		case 1:
			bases[j] = rapid.Uint64Range(0, math.MaxUint64-nb).Draw(t, side+"_base")
		default:
			bases[j] = math.MaxUint64 - nb - rapid.Uint64Range(0, min(3, math.MaxUint64-nb)).Draw(t, side+"_slack")
		}
	}
	return bases
}

// dataLens gives each buffer exactly what it needs or a little more.
func dataLens(t *rapid.T, side string, need []uint64) []uint64 {
	lens := make([]uint64, len(need))
	for j, nb := range need {
		lens[j] = nb + rapid.SampledFrom([]uint64{0, 0, 1, 4096}).Draw(t, side+"_len_slack")
	}
	return lens
}

func layerInvalid(t *rapid.T) Bad[spec.TransferLayerBlocksInput] {
	type bad = Bad[spec.TransferLayerBlocksInput]
	switch rapid.IntRange(0, 14).Draw(t, "violation") {
	case 0:
		in := layerValid(t)
		if len(in.DstPages) > 0 && rapid.Bool().Draw(t, "drop") {
			in.DstPages = in.DstPages[:len(in.DstPages)-1]
		} else {
			in.DstPages = append(slices.Clone(in.DstPages), 1<<40)
		}
		return bad{in, spec.ErrLengthMismatch}
	case 1:
		in := drawLayer(t, rapid.Bool().Draw(t, "is_mla"), 0, 1)
		in.Owned[rapid.IntRange(0, len(in.Owned)-1).Draw(t, "at")] = rapid.Int64Range(math.MinInt64, -1).Draw(t, "negative")
		return bad{in, spec.ErrNegative}
	case 2:
		in := drawLayer(t, rapid.Bool().Draw(t, "is_mla"), 0, 1)
		in.DstPages[rapid.IntRange(0, len(in.DstPages)-1).Draw(t, "at")] = rapid.Int64Range(math.MinInt64, -1).Draw(t, "negative")
		return bad{in, spec.ErrNegative}
	case 3:
		in := drawLayer(t, rapid.Bool().Draw(t, "is_mla"), 0, 2)
		j := rapid.IntRange(1, len(in.DstPages)-1).Draw(t, "dup_at")
		in.DstPages[j] = in.DstPages[rapid.IntRange(0, j-1).Draw(t, "dup_of")]
		return bad{in, spec.ErrDuplicateDstPage}
	case 4:
		in := layerValid(t)
		in.StartLayer = rapid.Int64Range(math.MinInt64, -1).Draw(t, "negative_start")
		return bad{in, spec.ErrNegative}
	case 5:
		in := drawLayer(t, false, 0, 0)
		in.SrcPtrs = append(in.SrcPtrs, 0x1000)
		in.ItemLens = append(in.ItemLens, 64)
		return bad{in, spec.ErrOddMHAPtrs}
	case 6:
		in := drawLayer(t, false, 0, 0)
		in.DstPtrs, in.DstDataLens = append(in.DstPtrs, 0x1000), nil
		return bad{in, spec.ErrOddMHAPtrs}
	case 7:
		in := layerValid(t)
		if len(in.ItemLens) > 0 && rapid.Bool().Draw(t, "drop") {
			in.ItemLens = in.ItemLens[:len(in.ItemLens)-1]
		} else {
			in.ItemLens = append(slices.Clone(in.ItemLens), 64)
		}
		return bad{in, spec.ErrLengthMismatch}
	case 8:
		in := layerValid(t)
		in.SrcDataLens = slices.Repeat([]uint64{math.MaxUint64}, len(in.SrcPtrs)+rapid.SampledFrom([]int{1, 2}).Draw(t, "extra"))
		return bad{in, spec.ErrLengthMismatch}
	case 9:
		in := layerValid(t)
		in.DstDataLens = slices.Repeat([]uint64{math.MaxUint64}, len(in.DstPtrs)+rapid.SampledFrom([]int{1, 2}).Draw(t, "extra"))
		return bad{in, spec.ErrLengthMismatch}
	case 10:
		return bad{dstSliceOutOfRange(t), spec.ErrDstPtrRange}
	case 11:
		in := drawLayer(t, rapid.Bool().Draw(t, "is_mla"), 1, 0)
		in.ItemLens[rapid.IntRange(0, len(in.ItemLens)-1).Draw(t, "at")] = 0
		return bad{in, spec.ErrZeroItemLen}
	case 12:
		in := drawLayer(t, true, 2, 0)
		e := rapid.IntRange(1, len(in.ItemLens)-1).Draw(t, "at")
		in.ItemLens[e] = rapid.SampledFrom(itemLenChoices).Filter(func(l uint64) bool { return l != in.ItemLens[0] }).Draw(t, "other_len")
		return bad{in, spec.ErrItemLenMismatch}
	case 13:
		return bad{addressPastEnd(t, false), spec.ErrOverflow}
	default:
		return bad{addressPastEnd(t, true), spec.ErrOutOfBounds}
	}
}

// dstSliceOutOfRange makes the layer counts differ and puts start_layer
// past the last slice that fits; dst data lens are dropped so their length
// cannot be the first error.
func dstSliceOutOfRange(t *rapid.T) spec.TransferLayerBlocksInput {
	in := layerValid(t)
	in.DstDataLens = nil
	per := 1
	if !in.IsMLA {
		per = 2
	}
	n, d := len(in.SrcPtrs)/per, len(in.DstPtrs)/per
	if n == d {
		extra := rapid.IntRange(1, 2).Draw(t, "extra_dst_layers") * per
		in.DstPtrs = append(slices.Clone(in.DstPtrs), make([]uint64, extra)...)
		d += extra / per
	}
	in.StartLayer = max(0, int64(d-n)+1) + rapid.Int64Range(0, 3).Draw(t, "past")
	return in
}

// addressPastEnd takes a valid input with pages and entries and moves one
// entry's buffer on one side: either its base so close to 2^64 that the
// largest page's block wraps (bounds false), or its data len just short of
// the largest page's end (bounds true).
func addressPastEnd(t *rapid.T, bounds bool) spec.TransferLayerBlocksInput {
	in := drawLayer(t, rapid.Bool().Draw(t, "is_mla"), 1, 1)
	es := layerEntries(in)
	e := es[rapid.IntRange(0, len(es)-1).Draw(t, "entry")]
	pages, ptrs, lens, idx := in.Owned, in.SrcPtrs, &in.SrcDataLens, e.src
	if rapid.Bool().Draw(t, "dst_side") {
		pages, ptrs, lens, idx = in.DstPages, in.DstPtrs, &in.DstDataLens, e.dst
	}
	need := needBytes(pages, e.itemLen)
	if !bounds {
		ptrs[idx] = math.MaxUint64 - need + rapid.Uint64Range(1, need).Draw(t, "wrap_by")
		return in
	}
	if len(*lens) == 0 {
		*lens = slices.Repeat([]uint64{math.MaxUint64}, len(ptrs))
	}
	(*lens)[idx] = need - rapid.Uint64Range(1, min(need, e.itemLen)).Draw(t, "short_by")
	return in
}

// layerBoundary: no pages, one page, one and two runs; no entries, one
// entry, one MHA layer; the PP slice at its first and last position and an
// ignored start_layer; blocks ending exactly at 2^64-1 and exactly at the
// data len; pages at MaxInt64 (and a wrap past it, rejected); decode runs
// out of order; §3.4's example and its MHA twin.
func layerBoundary() []Case[spec.TransferLayerBlocksInput] {
	type in = spec.TransferLayerBlocksInput
	mla := func(owned, dst []int64, il uint64, src, dsts []uint64) in {
		return in{IsMLA: true, Owned: owned, DstPages: dst, SrcPtrs: src, DstPtrs: dsts, ItemLens: slices.Repeat([]uint64{il}, len(src))}
	}
	ex := func() in { // docs/spec/transfer.md §3.4
		return mla([]int64{3, 4, 9}, []int64{20, 21, 22}, 1024, []uint64{0x10000000, 0x20000000}, []uint64{0x90000000, 0xA0000000})
	}
	exMHA := ex()
	exMHA.IsMLA, exMHA.ItemLens = false, []uint64{1024, 512}
	pp := func(start int64) in {
		x := ex()
		x.DstPtrs, x.StartLayer = []uint64{0x80000000, 0x90000000, 0xA0000000, 0xB0000000}, start
		return x
	}
	mhaPP := func(start int64) in {
		return in{Owned: []int64{0, 1}, DstPages: []int64{5, 6}, SrcPtrs: []uint64{0x1000, 0x2000},
			DstPtrs: []uint64{0x10000, 0x20000, 0x30000, 0x40000, 0x50000, 0x60000}, ItemLens: []uint64{64, 32}, StartLayer: start}
	}
	ignored := ex()
	ignored.StartLayer = 7
	flush := mla([]int64{0, 1, 5}, []int64{0, 1, 2}, 64, []uint64{math.MaxUint64 - 6*64}, []uint64{math.MaxUint64 - 3*64})
	exact := ex()
	exact.SrcDataLens, exact.DstDataLens = []uint64{10 * 1024, 10 * 1024}, []uint64{23 * 1024, 23 * 1024}
	const top = math.MaxInt64
	return []Case[spec.TransferLayerBlocksInput]{
		{"spec-3.4-mla-two-layers", ex()},
		{"spec-3.4-as-mha-k-and-v-lens-differ", exMHA},
		{"no-pages", mla([]int64{}, []int64{}, 1024, []uint64{0x1000, 0x2000}, []uint64{0x3000, 0x4000})},
		{"one-page", mla([]int64{7}, []int64{9}, 1024, []uint64{0x1000}, []uint64{0x3000})},
		{"two-pages-one-run", mla([]int64{7, 8}, []int64{9, 10}, 1024, []uint64{0x1000}, []uint64{0x3000})},
		{"two-pages-two-runs", mla([]int64{7, 8}, []int64{10, 9}, 1024, []uint64{0x1000}, []uint64{0x3000})},
		{"no-entries", mla([]int64{1, 2}, []int64{3, 4}, 1, []uint64{}, []uint64{})},
		{"no-mha-layers-decode-has-one", in{Owned: []int64{1}, DstPages: []int64{2}, SrcPtrs: []uint64{}, DstPtrs: []uint64{1, 2}, ItemLens: []uint64{}, StartLayer: 1}},
		{"one-mha-layer", in{Owned: []int64{1}, DstPages: []int64{2}, SrcPtrs: []uint64{0x1000, 0x2000}, DstPtrs: []uint64{0x3000, 0x4000}, ItemLens: []uint64{576, 576}}},
		{"mla-pp-first-slice", pp(0)},
		{"mla-pp-last-slice", pp(2)},
		{"mha-pp-first-slice", mhaPP(0)},
		{"mha-pp-last-slice", mhaPP(2)},
		{"start-layer-ignored-when-counts-match", ignored},
		{"blocks-end-at-2^64-1", flush},
		{"data-lens-exactly-enough", exact},
		{"pages-at-max-int64-item-len-1", mla([]int64{top - 1, top}, []int64{top, top - 1}, 1, []uint64{0}, []uint64{1 << 62})},
		{"duplicate-owned-pages", mla([]int64{5, 5, 5}, []int64{1, 2, 3}, 4096, []uint64{0x1000}, []uint64{0x100000})},
		{"decode-runs-descending", mla([]int64{1, 2, 3, 4, 5, 6}, []int64{50, 51, 30, 31, 10, 11}, 64, []uint64{0x1000}, []uint64{0x100000})},
		{"decode-run-ends-at-max-int64", mla([]int64{1, 2, 3}, []int64{top - 1, top, 5}, 1, []uint64{0x1000}, []uint64{0})},
		// Rejected: a decode "run" that wraps from MaxInt64 to MinInt64.
		{"negative-dst-page-after-max-int64", mla([]int64{1, 2}, []int64{top, math.MinInt64}, 1, []uint64{0x1000}, []uint64{0})},
	}
}

// layerRegressions: §3's suggested mutation. One MHA layer with K and V
// item lens 1024 and 512: K's block must start at 3*1024, not 3*512.
func layerRegressions() []Case[spec.TransferLayerBlocksInput] {
	return []Case[spec.TransferLayerBlocksInput]{
		{"v-item-len-for-k", spec.TransferLayerBlocksInput{Owned: []int64{3}, DstPages: []int64{7},
			SrcPtrs: []uint64{0x10000000, 0x20000000}, DstPtrs: []uint64{0x90000000, 0xA0000000}, ItemLens: []uint64{1024, 512}}},
	}
}

// blockShape fails when out does not hold entries × len(runs) blocks.
func blockShape(out spec.TransferLayerBlocksOutput, entries int) error {
	per := len(out.Runs)
	if out.BlocksPerEntry != int64(per) || len(out.Blocks) != entries*per {
		return fmt.Errorf("%d blocks, blocks_per_entry %d, for %d entries of %d runs", len(out.Blocks), out.BlocksPerEntry, entries, per)
	}
	return nil
}

// entryBlocks returns entry e's blocks of out, once its shape is checked.
func entryBlocks(out spec.TransferLayerBlocksOutput, entries, e int) ([]spec.Block, error) {
	if err := blockShape(out, entries); err != nil {
		return nil, err
	}
	per := len(out.Runs)
	return out.Blocks[e*per : (e+1)*per], nil
}

// layerRunsGrouped is §3.1's input: the runs are §2's grouping of (owned,
// dst_pages), one block per run per entry.
func layerRunsGrouped(lim spec.Limits, in spec.TransferLayerBlocksInput, out spec.TransferLayerBlocksOutput) error {
	want, err := ref.TransferGroupContiguous(lim, spec.TransferGroupContiguousInput{Src: in.Owned, Dst: in.DstPages})
	if err != nil {
		return fmt.Errorf("grouping the pages: %v", err)
	}
	if !slices.Equal(want.Runs, out.Runs) {
		return fmt.Errorf("runs %v, §2 groups the pages into %v", out.Runs, want.Runs)
	}
	return blockShape(out, len(in.SrcPtrs))
}

// offsetIn returns (addr-base)/itemLen, or false when addr is below base or
// not a whole number of pages past it.
func offsetIn(addr, base, itemLen uint64) (uint64, bool) {
	if addr < base || (addr-base)%itemLen != 0 {
		return 0, false
	}
	return (addr - base) / itemLen, true
}

// layerCrossLayer is §3.5.1: every entry has the same number of blocks, and
// block i of every entry, measured in pages from the entry's own bases,
// starts at the same src page, the same dst page and spans the same count,
// namely run i's: the run list is computed once and shared.
func layerCrossLayer(_ spec.Limits, in spec.TransferLayerBlocksInput, out spec.TransferLayerBlocksOutput) error {
	for e, ent := range layerEntries(in) {
		blocks, err := entryBlocks(out, len(in.SrcPtrs), e)
		if err != nil {
			return err
		}
		for i, b := range blocks {
			s, okS := offsetIn(b.Src, in.SrcPtrs[ent.src], ent.itemLen)
			d, okD := offsetIn(b.Dst, in.DstPtrs[ent.dst], ent.itemLen)
			c, okC := offsetIn(b.Len, 0, ent.itemLen)
			r := out.Runs[i]
			if !okS || !okD || !okC || s != uint64(r.SrcStart) || d != uint64(r.DstStart) || c != uint64(r.Count) {
				return fmt.Errorf("entry %d block %d %+v in pages of %d from its bases is not run %d %+v", e, i, b, ent.itemLen, i, r)
			}
		}
	}
	return nil
}

// layerByteCount is §3.5.2: entry e moves item_len[e] × len(owned) bytes,
// and the batch moves the sum of that over entries.
func layerByteCount(_ spec.Limits, in spec.TransferLayerBlocksInput, out spec.TransferLayerBlocksOutput) error {
	var total, want uint64
	for e, ent := range layerEntries(in) {
		blocks, err := entryBlocks(out, len(in.SrcPtrs), e)
		if err != nil {
			return err
		}
		var sum uint64
		for _, b := range blocks {
			sum += b.Len
		}
		if w := ent.itemLen * uint64(len(in.Owned)); sum != w {
			return fmt.Errorf("entry %d moves %d bytes, want item_len %d × %d pages = %d", e, sum, ent.itemLen, len(in.Owned), w)
		}
		total, want = total+sum, want+ent.itemLen*uint64(len(in.Owned))
	}
	var all uint64
	for _, b := range out.Blocks {
		all += b.Len
	}
	if all != want || total != want {
		return fmt.Errorf("batch moves %d bytes, want %d", all, want)
	}
	return nil
}

// layerConcat is §3.5.3: concatenating the seed's per-layer
// BuildLayerBlocks over the entries gives the monolithic batch exactly,
// order included.
func layerConcat(_ spec.Limits, in spec.TransferLayerBlocksInput, out spec.TransferLayerBlocksOutput) error {
	perLayer := []spec.Block{}
	for _, ent := range layerEntries(in) {
		perLayer = append(perLayer, ref.BuildLayerBlocks(in.SrcPtrs[ent.src], in.DstPtrs[ent.dst], ent.itemLen, out.Runs)...)
	}
	if !slices.Equal(perLayer, out.Blocks) {
		return fmt.Errorf("per-layer blocks %v != monolithic %v", perLayer, out.Blocks)
	}
	return nil
}

// layerDisjointDst is §3.5.4: within an entry no two blocks write the same
// byte (decode pages are distinct).
func layerDisjointDst(_ spec.Limits, in spec.TransferLayerBlocksInput, out spec.TransferLayerBlocksOutput) error {
	for e := range len(in.SrcPtrs) {
		blocks, err := entryBlocks(out, len(in.SrcPtrs), e)
		if err != nil {
			return err
		}
		byDst := slices.SortedFunc(slices.Values(blocks), func(a, b spec.Block) int { return cmp.Compare(a.Dst, b.Dst) })
		for i := 1; i < len(byDst); i++ {
			if prev := byDst[i-1]; byDst[i].Dst-prev.Dst < prev.Len {
				return fmt.Errorf("entry %d: dst ranges %+v and %+v overlap", e, prev, byDst[i])
			}
		}
	}
	return nil
}

// layerWithinBounds is §3.5.5: with data lens known, every block lies in
// [base, base+data_len) of its buffer on both sides.
func layerWithinBounds(_ spec.Limits, in spec.TransferLayerBlocksInput, out spec.TransferLayerBlocksOutput) error {
	inside := func(addr, n, base, dataLen uint64) bool {
		return addr >= base && addr-base <= dataLen && n <= dataLen-(addr-base)
	}
	for e, ent := range layerEntries(in) {
		blocks, err := entryBlocks(out, len(in.SrcPtrs), e)
		if err != nil {
			return err
		}
		for i, b := range blocks {
			if len(in.SrcDataLens) > 0 && !inside(b.Src, b.Len, in.SrcPtrs[ent.src], in.SrcDataLens[ent.src]) {
				return fmt.Errorf("entry %d block %d %+v leaves src buffer %#x+%d", e, i, b, in.SrcPtrs[ent.src], in.SrcDataLens[ent.src])
			}
			if len(in.DstDataLens) > 0 && !inside(b.Dst, b.Len, in.DstPtrs[ent.dst], in.DstDataLens[ent.dst]) {
				return fmt.Errorf("entry %d block %d %+v leaves dst buffer %#x+%d", e, i, b, in.DstPtrs[ent.dst], in.DstDataLens[ent.dst])
			}
		}
	}
	return nil
}
