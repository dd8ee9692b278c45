package spec

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
