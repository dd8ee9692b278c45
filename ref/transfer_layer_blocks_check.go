package ref

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for transfer.layer_blocks (docs/spec/transfer.md §3): pages, pointers, item lengths and addresses.

// CheckLayerPages checks the page pairs (docs/spec/transfer.md §3.5 bad input, §3.5 property 4):
// equal lengths (even when one side is empty: unlike §2, the KV path checks
// lengths first), then negative owned ids, then negative dst ids, then the
// first dst page equal to an earlier one.
func CheckLayerPages(in spec.TransferLayerBlocksInput) error {
	if n, m := len(in.Owned), len(in.DstPages); n != m {
		return spec.Reject(spec.ErrLengthMismatch, "dst_pages", m, fmt.Sprintf("== len(owned) (%d)", n))
	}
	if err := CheckNonNegative("owned", in.Owned); err != nil {
		return err
	}
	if err := CheckNonNegative("dst_pages", in.DstPages); err != nil {
		return err
	}
	firstAt := make(map[int64]int, len(in.DstPages))
	for j, p := range in.DstPages {
		if i, seen := firstAt[p]; seen {
			return spec.Reject(spec.ErrDuplicateDstPage, spec.Idx("dst_pages", j), p, fmt.Sprintf("distinct from dst_pages[%d]", i))
		}
		firstAt[p] = j
	}
	return nil
}

// CheckLayerPointers checks the pointer lists and item lens (docs/spec/transfer.md
// §3.2) and returns the entry selection. Order: start_layer >= 0; MHA
// src_ptrs then dst_ptrs even; item_lens, src_data_lens, dst_data_lens
// lengths; the PP slice in range; then per entry in order, item_len >= 1
// and (MLA) item_len == item_lens[0].
func CheckLayerPointers(in spec.TransferLayerBlocksInput) (spec.LayerGeometry, error) {
	if in.StartLayer < 0 {
		return spec.LayerGeometry{}, spec.Reject(spec.ErrNegative, "start_layer", in.StartLayer, ">= 0")
	}
	if err := checkPointerCounts(in); err != nil {
		return spec.LayerGeometry{}, err
	}
	g, err := selectDst(in)
	if err != nil {
		return spec.LayerGeometry{}, err
	}
	return g, checkItemLens(in)
}

func checkPointerCounts(in spec.TransferLayerBlocksInput) error {
	if !in.IsMLA {
		if len(in.SrcPtrs)%2 != 0 {
			return spec.Reject(spec.ErrOddMHAPtrs, "src_ptrs", len(in.SrcPtrs), "an even count (all K, then all V) when is_mla is false")
		}
		if len(in.DstPtrs)%2 != 0 {
			return spec.Reject(spec.ErrOddMHAPtrs, "dst_ptrs", len(in.DstPtrs), "an even count (all K, then all V) when is_mla is false")
		}
	}
	n := len(in.SrcPtrs)
	if len(in.ItemLens) != n {
		return spec.Reject(spec.ErrLengthMismatch, "item_lens", len(in.ItemLens), fmt.Sprintf("== len(src_ptrs) (%d)", n))
	}
	if k := len(in.SrcDataLens); k != 0 && k != n {
		return spec.Reject(spec.ErrLengthMismatch, "src_data_lens", k, fmt.Sprintf("== len(src_ptrs) (%d), or empty", n))
	}
	if k, d := len(in.DstDataLens), len(in.DstPtrs); k != 0 && k != d {
		return spec.Reject(spec.ErrLengthMismatch, "dst_data_lens", k, fmt.Sprintf("== len(dst_ptrs) (%d), or empty", d))
	}
	return nil
}

func checkItemLens(in spec.TransferLayerBlocksInput) error {
	for e, l := range in.ItemLens {
		if l == 0 {
			return spec.Reject(spec.ErrZeroItemLen, spec.Idx("item_lens", e), l, ">= 1")
		}
		if in.IsMLA && l != in.ItemLens[0] {
			return spec.Reject(spec.ErrItemLenMismatch, spec.Idx("item_lens", e), l,
				fmt.Sprintf("== item_lens[0] (%d): MLA moves every layer with one item_len", in.ItemLens[0]))
		}
	}
	return nil
}

// CheckBlockCount rejects an output of entries×runs blocks that Limits do
// not allow, before anything of that size is allocated.
func CheckBlockCount(lim spec.Limits, entries, runs int) error {
	if spec.MulOverflows(int64(entries), int64(runs)) {
		return spec.Reject(spec.ErrOverflow, "blocks", entries, fmt.Sprintf("entries * %d runs <= %d", runs, int64(math.MaxInt64)))
	}
	return lim.CheckOutput("blocks", int64(entries)*int64(runs), blockBytes)
}

// CheckLayerAddresses checks every page of every entry (docs/spec/transfer.md §3.5
// bad input, §3.5 property 5): the page's end address base + (page+1)*item_len must
// fit in uint64, and when data lens are given the end offset must not pass
// them. Entries in order, pages in order, source side before destination.
// It reports the first offending page; a run is in range iff its last page is.
// Preconditions: the pages passed CheckLayerPages and g came from CheckLayerPointers.
func CheckLayerAddresses(in spec.TransferLayerBlocksInput, g spec.LayerGeometry) error {
	for e := range g.Entries {
		ent := g.EntryAt(in, e)
		for i := range in.Owned {
			if err := checkPageEnd("owned", i, in.Owned[i], ent.ItemLen, "src", ent.SrcIdx, ent.SrcBase, in.SrcDataLens); err != nil {
				return err
			}
			if err := checkPageEnd("dst_pages", i, in.DstPages[i], ent.ItemLen, "dst", ent.DstIdx, ent.DstBase, in.DstDataLens); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkPageEnd checks one page's block end on one side. page >= 0, so
// page+1 <= 2^63 fits a uint64.
func checkPageEnd(field string, i int, page int64, itemLen uint64, side string, idx int, base uint64, dataLens []uint64) error {
	hi, end := bits.Mul64(uint64(page)+1, itemLen)
	if _, carry := bits.Add64(base, end, 0); hi != 0 || carry != 0 {
		return spec.Reject(spec.ErrOverflow, spec.Idx(field, i), page,
			fmt.Sprintf("%s_ptrs[%d] (%#x) + (page+1)*item_len (%d) <= %d", side, idx, base, itemLen, uint64(math.MaxUint64)))
	}
	if len(dataLens) > 0 && end > dataLens[idx] {
		return spec.Reject(spec.ErrOutOfBounds, spec.Idx(field, i), page,
			fmt.Sprintf("(page+1)*item_len (%d) <= %s_data_lens[%d] (%d)", itemLen, side, idx, dataLens[idx]))
	}
	return nil
}
