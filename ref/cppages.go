package ref

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// cp.page_descriptors and cp.remap_locs (docs/spec/cp-layout.md §6): translate
// flattened logical KV locations into rows of a compact, row-scoped
// materialized buffer. Rows may share logical pages (warm-cache prefixes
// through the radix cache), so the translation is keyed by (row, page),
// never by page alone, and its tables are O(pages): nothing is sized by the
// logical page capacity.

// Page-descriptor sentinels (docs/spec/cp-layout.md §0.5, §6.3).
var (
	// ErrBadLoc: a page size below 1, or a location below −1 (−1 is padding).
	ErrBadLoc = NewSentinel("bad_loc", "bad KV location or page size")
	// ErrRowOutOfRange: a row id outside [0, B).
	ErrRowOutOfRange = NewSentinel("row_out_of_range", "row id outside the batch")
	// ErrPageNotInRow: a location whose page is not in its row's window.
	ErrPageNotInRow = NewSentinel("page_not_in_row", "location's page is not materialized for its row")
	// ErrDuplicatePageInRow: a page listed twice in one row's window.
	ErrDuplicatePageInRow = NewSentinel("duplicate_page_in_row", "page listed twice in one row")
	// ErrAmbiguousGlobalInverse: the row-free legacy remap asked of a batch
	// whose rows share a page, where a page-only inverse would alias rows.
	ErrAmbiguousGlobalInverse = NewSentinel("ambiguous_global_inverse", "a page occurs in two rows; remap needs row ids")
)

// MaxDescriptorPages bounds Σ_b |Pages_b|: slots and row pointers are int32
// (the CUDA kernel's index type, §0.1).
const MaxDescriptorPages = math.MaxInt32

// PageDescriptorsInput is the input of cp.page_descriptors (§6.1).
type PageDescriptorsInput struct {
	// Pages[b] are row b's logical page ids in window order: >= 0, unique
	// within the row, possibly shared with other rows.
	Pages [][]int64 `json:"pages"`
}

// PageDescriptors are the row-scoped sorted descriptors (§6.1), in CSR
// form: row b's entries are [RowPtr[b], RowPtr[b+1]), sorted by Page, and
// Slot is the compact slot Base_b + j of the page at window position j
// (Base_b = Σ_{b'<b} |Pages_b'|, row-major [designed]).
type PageDescriptors struct {
	// RowPtr has B+1 entries; RowPtr[0] = 0, RowPtr[B] = Σ_b |Pages_b|.
	RowPtr []int32 `json:"row_ptr"`
	// Page holds each row's pages, ascending within the row.
	Page []int64 `json:"page"`
	// Slot is the compact slot of Page[x].
	Slot []int32 `json:"slot"`
}

// ValidatePages checks a batch of page windows (§6.3): at most
// MaxDescriptorPages pages in all (ErrTooLarge), then row by row in window
// order the first page that is negative (ErrNegative) or repeats an earlier
// page of its row (ErrDuplicatePageInRow).
func ValidatePages(pages [][]int64) error {
	if err := CheckPageTotal(pages); err != nil {
		return err
	}
	for b, row := range pages {
		if err := CheckPageRow(b, row); err != nil {
			return err
		}
	}
	return nil
}

// CheckPageTotal rejects a batch of more than MaxDescriptorPages pages.
func CheckPageTotal(pages [][]int64) error {
	var total int64
	for _, row := range pages {
		total += int64(len(row))
	}
	if total > MaxDescriptorPages {
		return Reject(ErrTooLarge, "pages", total, fmt.Sprintf("<= %d pages in all", int64(MaxDescriptorPages)))
	}
	return nil
}

// CheckPageRow reports row b's first page, in window order, that is
// negative or already listed earlier in the row.
func CheckPageRow(b int, row []int64) error {
	first := make(map[int64]int, len(row))
	for j, p := range row {
		field := fmt.Sprintf("pages[%d][%d]", b, j)
		if p < 0 {
			return Reject(ErrNegative, field, p, ">= 0")
		}
		if j0, seen := first[p]; seen {
			return Reject(ErrDuplicatePageInRow, field, p, fmt.Sprintf("unique within row %d (also at pages[%d][%d])", b, b, j0))
		}
		first[p] = j
	}
	return nil
}

// BuildDescriptors is cp.page_descriptors (§6.1): validate the windows,
// then for each row list (page, Base_b + j) sorted by page.
func BuildDescriptors(_ Limits, in PageDescriptorsInput) (PageDescriptors, error) {
	if err := ValidatePages(in.Pages); err != nil {
		return PageDescriptors{}, err
	}
	d := PageDescriptors{RowPtr: []int32{0}, Page: []int64{}, Slot: []int32{}}
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

// RemapLocsInput is the input of cp.remap_locs (§6.1): the page windows
// (from which the descriptors are built), the page size, and the flattened
// locations with the row each belongs to. Global selects the legacy
// row-free path, which has no row ids.
type RemapLocsInput struct {
	// PageSize is ps, >= 1.
	PageSize int64 `json:"page_size"`
	// Pages are the rows' page windows, as in cp.page_descriptors.
	Pages [][]int64 `json:"pages"`
	// Locs are logical KV locations, >= 0, or −1 for padding.
	Locs []int64 `json:"locs"`
	// RowIDs[e] is the row of Locs[e]; must be null when Global.
	RowIDs []int32 `json:"row_ids"`
	// Global asks for RemapGlobal: no row context, refused when rows share a page.
	Global bool `json:"global,omitzero"`
}

// RemapLocsOutput is the remapped locations: Locs[e] is a row of the
// compact buffer of CompactRows = ps · Σ_b |Pages_b| rows, or −1.
type RemapLocsOutput struct {
	// Locs are the compact-buffer rows, −1 where the input was −1.
	Locs []int64 `json:"locs"`
	// CompactRows is the compact buffer's row count.
	CompactRows int64 `json:"compact_rows"`
}

// CheckRemapScalars applies cp.remap_locs' checks that precede the scan of
// the locations (§6.3), in order: the page size, the page windows
// (ValidatePages), then CheckRemapCounts. It returns the compact row count.
func CheckRemapScalars(in RemapLocsInput) (int64, error) {
	if err := CheckRemapPageSize(in.PageSize); err != nil {
		return 0, err
	}
	if err := ValidatePages(in.Pages); err != nil {
		return 0, err
	}
	return CheckRemapCounts(in)
}

// CheckRemapPageSize rejects a page size below 1 (§6.3).
func CheckRemapPageSize(ps int64) error {
	if ps < 1 {
		return Reject(ErrBadLoc, "page_size", ps, ">= 1")
	}
	return nil
}

// CheckRemapCounts checks, after the page windows, that the compact size
// ps·Σ|Pages_b| fits int64 and that row ids are absent (global) or one per
// location; it returns the compact row count.
func CheckRemapCounts(in RemapLocsInput) (int64, error) {
	var total int64
	for _, row := range in.Pages {
		total += int64(len(row))
	}
	if MulOverflows(total, in.PageSize) {
		return 0, Reject(ErrOverflow, "page_size", in.PageSize, fmt.Sprintf("page_size * %d pages <= %d", total, int64(math.MaxInt64)))
	}
	if in.Global && in.RowIDs != nil {
		return 0, Reject(ErrRowCount, "row_ids", len(in.RowIDs), "null when global (the legacy path has no row context)")
	}
	if !in.Global && len(in.RowIDs) != len(in.Locs) {
		return 0, Reject(ErrRowCount, "row_ids", len(in.RowIDs), fmt.Sprintf("len == len(locs) (%d)", len(in.Locs)))
	}
	return total * in.PageSize, nil
}

// CheckGlobalUnique rejects, for the row-free path, the first page (rows in
// order, window order inside a row) that an earlier row also lists.
func CheckGlobalUnique(pages [][]int64) error {
	rowOf := map[int64]int{}
	for b, row := range pages {
		for j, p := range row {
			if b0, seen := rowOf[p]; seen {
				return Reject(ErrAmbiguousGlobalInverse, fmt.Sprintf("pages[%d][%d]", b, j), p,
					fmt.Sprintf("a page of one row only (also in row %d): pass row_ids", b0))
			}
			rowOf[p] = b
		}
	}
	return nil
}

// CheckLoc rejects a location below −1 (§6.3).
func CheckLoc(e int, loc int64) error {
	if loc < -1 {
		return Reject(ErrBadLoc, Idx("locs", e), loc, ">= -1 (-1 is padding)")
	}
	return nil
}

// CheckRowID rejects a row id outside [0, b) (§6.3).
func CheckRowID(e int, row int32, b int) error {
	if row < 0 || int(row) >= b {
		return Reject(ErrRowOutOfRange, Idx("row_ids", e), row, fmt.Sprintf("in [0, B=%d)", b))
	}
	return nil
}

// RejectPageNotInRow is the error of a location whose page is not in its
// row's window; row < 0 means the row-free path (no row has the page).
func RejectPageNotInRow(e int, loc, ps int64, row int32) error {
	where := "a page of some row"
	if row >= 0 {
		where = fmt.Sprintf("a page of row %d", row)
	}
	return Reject(ErrPageNotInRow, Idx("locs", e), loc, fmt.Sprintf("page loc/page_size (%d) %s", loc/ps, where))
}

// Remap is the row-aware loc remap (§6.1): −1 passes through; otherwise
// page = loc div ps is binary-searched among row rowIDs[e]'s descriptors
// and the result is Slot·ps + loc mod ps. Entries are checked in order: the
// location, its row id, then the page's presence in that row.
func Remap(d PageDescriptors, ps int64, locs []int64, rowIDs []int32) ([]int64, error) {
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

// RemapGlobal is the legacy row-free remap (§6.1): a page-only inverse,
// allowed only when no page occurs in two rows — otherwise
// ErrAmbiguousGlobalInverse [designed: the fixed legacy path refuses
// instead of silently aliasing rows].
func RemapGlobal(pages [][]int64, d PageDescriptors, ps int64, locs []int64) ([]int64, error) {
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

// RemapLocs is cp.remap_locs (§6): build the row-scoped descriptors of the
// windows, then Remap (row ids given) or RemapGlobal.
func RemapLocs(lim Limits, in RemapLocsInput) (RemapLocsOutput, error) {
	compact, err := CheckRemapScalars(in)
	if err != nil {
		return RemapLocsOutput{}, err
	}
	d, err := BuildDescriptors(lim, PageDescriptorsInput{Pages: in.Pages})
	if err != nil {
		return RemapLocsOutput{}, err
	}
	var out []int64
	if in.Global {
		out, err = RemapGlobal(in.Pages, d, in.PageSize, in.Locs)
	} else {
		out, err = Remap(d, in.PageSize, in.Locs, in.RowIDs)
	}
	if err != nil {
		return RemapLocsOutput{}, err
	}
	return RemapLocsOutput{Locs: out, CompactRows: compact}, nil
}
