package spec

// Sentinels of layout.host_offsets (docs/spec/transfer.md §7.1, §7.2), shared with
// layout.convert.
var (
	// ErrUnsupportedLayout: a layout string is not one of the four §7.1 layouts (§7.3).
	ErrUnsupportedLayout = NewSentinel("unsupported_layout", "unknown host memory layout")
	// ErrLPFUnsupportedPool: layer_page_first asked of an MHA pool (§7.1).
	ErrLPFUnsupportedPool = NewSentinel("lpf_unsupported_pool", "layer_page_first supports only the MLA pool")
	// ErrZeroSize: a geometry size (layers, pages, page_size, token_bytes,
	// device_pages) is zero; an empty arena has no addresses (§0: P >= 1).
	ErrZeroSize = NewSentinel("zero_size", "a geometry size must be >= 1")
	// ErrPageOutOfRange: a page is not below the arena's page count (§7.2).
	ErrPageOutOfRange = NewSentinel("page_out_of_range", "page beyond the arena's pages")
	// ErrIndexOutOfRange: a plane, layer, token or byte coordinate is not
	// inside the arena's geometry (§7.1).
	ErrIndexOutOfRange = NewSentinel("index_out_of_range", "coordinate outside the arena's geometry")
)
