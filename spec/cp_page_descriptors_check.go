package spec

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
