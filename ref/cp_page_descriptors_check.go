package ref

import (
	"fmt"
	"math"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for cp.page_descriptors and cp.remap_locs (docs/spec/cp-layout.md §6): page windows and remap inputs.

// maxDescriptorPages bounds Σ_b |Pages_b|: slots and row pointers are int32
// (the CUDA kernel's index type, §0.1).
const maxDescriptorPages = math.MaxInt32

// validatePages checks a batch of page windows (§6.3): at most
// maxDescriptorPages pages in all (ErrTooLarge), then row by row in window
// order the first page that is negative (ErrNegative) or repeats an earlier
// page of its row (ErrDuplicatePageInRow).
func validatePages(pages [][]int64) error {
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

// CheckPageTotal rejects a batch of more than maxDescriptorPages pages.
func CheckPageTotal(pages [][]int64) error {
	var total int64
	for _, row := range pages {
		total += int64(len(row))
	}
	if total > maxDescriptorPages {
		return spec.Reject(spec.ErrTooLarge, "pages", total, fmt.Sprintf("<= %d pages in all", int64(maxDescriptorPages)))
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
			return spec.Reject(spec.ErrNegative, field, p, ">= 0")
		}
		if j0, seen := first[p]; seen {
			return spec.Reject(spec.ErrDuplicatePageInRow, field, p, fmt.Sprintf("unique within row %d (also at pages[%d][%d])", b, b, j0))
		}
		first[p] = j
	}
	return nil
}

// CheckRemapScalars applies cp.remap_locs' checks that precede the scan of
// the locations (§6.3), in order: the page size, the page windows
// (validatePages), then CheckRemapCounts. It returns the compact row count.
func CheckRemapScalars(in spec.CPRemapLocsInput) (int64, error) {
	if err := CheckRemapPageSize(in.PageSize); err != nil {
		return 0, err
	}
	if err := validatePages(in.Pages); err != nil {
		return 0, err
	}
	return CheckRemapCounts(in)
}

// CheckRemapPageSize rejects a page size below 1 (§6.3).
func CheckRemapPageSize(ps int64) error {
	if ps < 1 {
		return spec.Reject(spec.ErrBadLoc, "page_size", ps, ">= 1")
	}
	return nil
}

// CheckRemapCounts checks, after the page windows, that the compact size
// ps·Σ|Pages_b| fits int64 and that row ids are absent (global) or one per
// location; it returns the compact row count.
func CheckRemapCounts(in spec.CPRemapLocsInput) (int64, error) {
	var total int64
	for _, row := range in.Pages {
		total += int64(len(row))
	}
	if spec.MulOverflows(total, in.PageSize) {
		return 0, spec.Reject(spec.ErrOverflow, "page_size", in.PageSize, fmt.Sprintf("page_size * %d pages <= %d", total, int64(math.MaxInt64)))
	}
	if in.Global && in.RowIDs != nil {
		return 0, spec.Reject(spec.ErrRowCount, "row_ids", len(in.RowIDs), "null when global (the legacy path has no row context)")
	}
	if !in.Global && len(in.RowIDs) != len(in.Locs) {
		return 0, spec.Reject(spec.ErrRowCount, "row_ids", len(in.RowIDs), fmt.Sprintf("len == len(locs) (%d)", len(in.Locs)))
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
				return spec.Reject(spec.ErrAmbiguousGlobalInverse, fmt.Sprintf("pages[%d][%d]", b, j), p,
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
		return spec.Reject(spec.ErrBadLoc, spec.Idx("locs", e), loc, ">= -1 (-1 is padding)")
	}
	return nil
}

// CheckRowID rejects a row id outside [0, b) (§6.3).
func CheckRowID(e int, row int32, b int) error {
	if row < 0 || int(row) >= b {
		return spec.Reject(spec.ErrRowOutOfRange, spec.Idx("row_ids", e), row, fmt.Sprintf("in [0, B=%d)", b))
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
	return spec.Reject(spec.ErrPageNotInRow, spec.Idx("locs", e), loc, fmt.Sprintf("page loc/page_size (%d) %s", loc/ps, where))
}
