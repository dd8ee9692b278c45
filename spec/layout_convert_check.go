package spec

// Sentinels of layout.convert (docs/spec/transfer.md §7.2, §7.3).
var (
	// ErrIncompletePageSpan: token indices that are not whole, aligned pages (§7.2).
	ErrIncompletePageSpan = NewSentinel("incomplete_page_span", "token indices do not cover whole pages")
	// ErrDuplicateHostPage: a backup writes one host page twice (§7.2).
	ErrDuplicateHostPage = NewSentinel("duplicate_host_page", "host page listed twice in a backup")
	// ErrDuplicateDevicePage: a load writes one device page twice; the mirror
	// of ErrDuplicateHostPage (docs/spec/transfer.md §7.2 amendment).
	ErrDuplicateDevicePage = NewSentinel("duplicate_device_page", "device page listed twice in a load")
	// ErrLPFRequiresDirect: layer_page_first with an io backend other than direct (§7.3).
	ErrLPFRequiresDirect = NewSentinel("lpf_requires_direct", "layer_page_first is direct-only")
	// ErrLPFStorageUnsupported: a storage backend, or a flat page read, on layer_page_first (§7.3).
	ErrLPFStorageUnsupported = NewSentinel("lpf_storage_unsupported", "layer_page_first has no one-pointer-per-page storage contract")
	// ErrLPFKernelUnavailable: the LPF direct kernel is missing; never fall back silently (§7.3).
	ErrLPFKernelUnavailable = NewSentinel("lpf_kernel_unavailable", "layer_page_first kernel not available")
	// ErrDeviceIndices: device-resident indices given to the direct path (§7.3).
	ErrDeviceIndices = NewSentinel("device_indices", "the direct path needs host-resident indices")
	// ErrIndexDType: indices that are not int64 given to the direct path (§7.3).
	ErrIndexDType = NewSentinel("index_dtype", "the direct path needs int64 indices")
	// ErrArenaSize: an arena's length differs from its geometry's size (§7.1).
	ErrArenaSize = NewSentinel("arena_size", "arena length does not match its geometry")
	// ErrFieldNotInMode: a field the chosen mode does not read is set, so
	// the caller's intent is unclear (kvtwin input contract).
	ErrFieldNotInMode = NewSentinel("field_not_in_mode", "field is not used by this mode")
)
