package ref

import (
	"cmp"
	"slices"
)

// cp.page_descriptors and cp.remap_locs (docs/spec/cp-layout.md §6): translate
// flattened logical KV locations into rows of a compact, row-scoped
// materialized buffer. Rows may share logical pages (warm-cache prefixes
// through the radix cache), so the translation is keyed by (row, page),
// never by page alone, and its tables are O(pages): nothing is sized by the
// logical page capacity.

// CPPageDescriptorsInput is the input of cp.page_descriptors (§6.1).
type CPPageDescriptorsInput struct {
	// Pages[b] are row b's logical page ids in window order: >= 0, unique
	// within the row, possibly shared with other rows.
	Pages [][]int64 `json:"pages"`
}

// CPPageDescriptorsOutput is the output of cp.page_descriptors: the
// row-scoped sorted descriptors (§6.1), in CSR form: row b's entries are
// [RowPtr[b], RowPtr[b+1]), sorted by Page, and Slot is the compact slot
// Base_b + j of the page at window position j (Base_b = Σ_{b'<b} |Pages_b'|,
// row-major [designed]).
type CPPageDescriptorsOutput struct {
	// RowPtr has B+1 entries; RowPtr[0] = 0, RowPtr[B] = Σ_b |Pages_b|.
	RowPtr []int32 `json:"row_ptr"`
	// Page holds each row's pages, ascending within the row.
	Page []int64 `json:"page"`
	// Slot is the compact slot of Page[x].
	Slot []int32 `json:"slot"`
}

// CPPageDescriptors is cp.page_descriptors (§6.1): validate the windows,
// then for each row list (page, Base_b + j) sorted by page.
func CPPageDescriptors(_ Limits, in CPPageDescriptorsInput) (CPPageDescriptorsOutput, error) {
	if err := validatePages(in.Pages); err != nil {
		return CPPageDescriptorsOutput{}, err
	}
	d := CPPageDescriptorsOutput{RowPtr: []int32{0}, Page: []int64{}, Slot: []int32{}}
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

// CPRemapLocsInput is the input of cp.remap_locs (§6.1): the page windows
// (from which the descriptors are built), the page size, and the flattened
// locations with the row each belongs to. Global selects the legacy
// row-free path, which has no row ids.
type CPRemapLocsInput struct {
	// PageSize is ps, >= 1.
	PageSize int64 `json:"page_size"`
	// Pages are the rows' page windows, as in cp.page_descriptors.
	Pages [][]int64 `json:"pages"`
	// Locs are logical KV locations, >= 0, or −1 for padding.
	Locs []int64 `json:"locs"`
	// RowIDs[e] is the row of Locs[e]; must be null when Global.
	RowIDs []int32 `json:"row_ids"`
	// Global asks for remapGlobal: no row context, refused when rows share a page.
	Global bool `json:"global,omitzero"`
}

// CPRemapLocsOutput is the remapped locations: Locs[e] is a row of the
// compact buffer of CompactRows = ps · Σ_b |Pages_b| rows, or −1.
type CPRemapLocsOutput struct {
	// Locs are the compact-buffer rows, −1 where the input was −1.
	Locs []int64 `json:"locs"`
	// CompactRows is the compact buffer's row count.
	CompactRows int64 `json:"compact_rows"`
}

// remapRowLocs is the row-aware loc remap (§6.1): −1 passes through; otherwise
// page = loc div ps is binary-searched among row rowIDs[e]'s descriptors
// and the result is Slot·ps + loc mod ps. Entries are checked in order: the
// location, its row id, then the page's presence in that row.
func remapRowLocs(d CPPageDescriptorsOutput, ps int64, locs []int64, rowIDs []int32) ([]int64, error) {
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
func remapGlobal(pages [][]int64, d CPPageDescriptorsOutput, ps int64, locs []int64) ([]int64, error) {
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
func CPRemapLocs(lim Limits, in CPRemapLocsInput) (CPRemapLocsOutput, error) {
	compact, err := CheckRemapScalars(in)
	if err != nil {
		return CPRemapLocsOutput{}, err
	}
	d, err := CPPageDescriptors(lim, CPPageDescriptorsInput{Pages: in.Pages})
	if err != nil {
		return CPRemapLocsOutput{}, err
	}
	var out []int64
	if in.Global {
		out, err = remapGlobal(in.Pages, d, in.PageSize, in.Locs)
	} else {
		out, err = remapRowLocs(d, in.PageSize, in.Locs, in.RowIDs)
	}
	if err != nil {
		return CPRemapLocsOutput{}, err
	}
	return CPRemapLocsOutput{Locs: out, CompactRows: compact}, nil
}
