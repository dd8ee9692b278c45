package ref

import (
	"cmp"
	"slices"

	"github.com/kvtwin/kvtwin/spec"
)

// cp.page_descriptors and cp.remap_locs (docs/spec/cp-layout.md §6): translate
// flattened logical KV locations into rows of a compact, row-scoped
// materialized buffer. Rows may share logical pages (warm-cache prefixes
// through the radix cache), so the translation is keyed by (row, page),
// never by page alone, and its tables are O(pages): nothing is sized by the
// logical page capacity.

// CPPageDescriptors is cp.page_descriptors (§6.1): validate the windows,
// then for each row list (page, Base_b + j) sorted by page.
func CPPageDescriptors(_ spec.Limits, in spec.CPPageDescriptorsInput) (spec.CPPageDescriptorsOutput, error) {
	if err := validatePages(in.Pages); err != nil {
		return spec.CPPageDescriptorsOutput{}, err
	}
	d := spec.CPPageDescriptorsOutput{RowPtr: []int32{0}, Page: []int64{}, Slot: []int32{}}
	base := int32(0)
	for _, row := range in.Pages {
		type entry struct {
			page int64
			slot int32
		}
		entries := make([]entry, len(row))
		for j, p := range row {
			entries[j] = entry{p, base + int32(j)}
		}
		slices.SortFunc(entries, func(a, b entry) int { return cmp.Compare(a.page, b.page) })
		for _, e := range entries {
			d.Page = append(d.Page, e.page)
			d.Slot = append(d.Slot, e.slot)
		}
		base += int32(len(row))
		d.RowPtr = append(d.RowPtr, base)
	}
	return d, nil
}

// remapRowLocs is the row-aware loc remap (§6.1): −1 passes through; otherwise
// page = loc div ps is binary-searched among row rowIDs[e]'s descriptors
// and the result is Slot·ps + loc mod ps. Entries are checked in order: the
// location, its row id, then the page's presence in that row.
func remapRowLocs(d spec.CPPageDescriptorsOutput, ps int64, locs []int64, rowIDs []int32) ([]int64, error) {
	b := len(d.RowPtr) - 1
	out := make([]int64, len(locs))
	for e, loc := range locs {
		if err := CheckLoc(e, loc); err != nil {
			return nil, err
		}
		row := rowIDs[e]
		if err := CheckRowID(e, row, b); err != nil {
			return nil, err
		}
		if loc == -1 {
			out[e] = -1
			continue
		}
		lo, hi := d.RowPtr[row], d.RowPtr[row+1]
		page := d.Page[lo:hi]
		x, found := slices.BinarySearch(page, loc/ps)
		if !found {
			return nil, RejectPageNotInRow(e, loc, ps, row)
		}
		out[e] = int64(d.Slot[int(lo)+x])*ps + loc%ps
	}
	return out, nil
}

// remapGlobal is the legacy row-free remap (§6.1): a page-only inverse,
// allowed only when no page occurs in two rows — otherwise
// ErrAmbiguousGlobalInverse [designed: the fixed legacy path refuses
// instead of silently aliasing rows].
func remapGlobal(pages [][]int64, d spec.CPPageDescriptorsOutput, ps int64, locs []int64) ([]int64, error) {
	if err := CheckGlobalUnique(pages); err != nil {
		return nil, err
	}
	slotOf := make(map[int64]int32, len(d.Page))
	for x, p := range d.Page {
		slotOf[p] = d.Slot[x]
	}
	out := make([]int64, len(locs))
	for e, loc := range locs {
		if err := CheckLoc(e, loc); err != nil {
			return nil, err
		}
		if loc == -1 {
			out[e] = -1
			continue
		}
		slot, found := slotOf[loc/ps]
		if !found {
			return nil, RejectPageNotInRow(e, loc, ps, -1)
		}
		out[e] = int64(slot)*ps + loc%ps
	}
	return out, nil
}

// CPRemapLocs is cp.remap_locs (§6): build the row-scoped descriptors of the
// windows, then remapRowLocs (row ids given) or remapGlobal.
func CPRemapLocs(lim spec.Limits, in spec.CPRemapLocsInput) (spec.CPRemapLocsOutput, error) {
	compact, err := CheckRemapScalars(in)
	if err != nil {
		return spec.CPRemapLocsOutput{}, err
	}
	d, err := CPPageDescriptors(lim, spec.CPPageDescriptorsInput{Pages: in.Pages})
	if err != nil {
		return spec.CPRemapLocsOutput{}, err
	}
	var out []int64
	if in.Global {
		out, err = remapGlobal(in.Pages, d, in.PageSize, in.Locs)
	} else {
		out, err = remapRowLocs(d, in.PageSize, in.Locs, in.RowIDs)
	}
	if err != nil {
		return spec.CPRemapLocsOutput{}, err
	}
	return spec.CPRemapLocsOutput{Locs: out, CompactRows: compact}, nil
}
