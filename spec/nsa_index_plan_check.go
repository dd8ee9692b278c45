package spec

// Index-plan sentinels (docs/spec/cp-layout.md §0.5, §9.2).
var (
	// ErrPatternCharset: a pattern character other than 'F' or 'S'.
	ErrPatternCharset = NewSentinel("pattern_charset", "index-topk pattern characters must be 'F' or 'S'")
	// ErrPatternFirstLayer: a pattern whose layer 0 is not 'F' (layer 0 has nothing to share from).
	ErrPatternFirstLayer = NewSentinel("pattern_first_layer", "index-topk pattern must start with 'F'")
	// ErrPatternLength: a pattern whose length is not the number of layers.
	ErrPatternLength = NewSentinel("pattern_length", "index-topk pattern length must equal the number of layers")
	// ErrFreq: an index-topk frequency below 1.
	ErrFreq = NewSentinel("freq", "index_topk_freq must be >= 1")
	// ErrOffset: a negative index-topk offset (0 means unset).
	ErrOffset = NewSentinel("offset", "index_topk_offset must be >= 0")
	// ErrPPIndexShare: index-topk sharing under pipeline parallelism (top-k is not threaded across stages).
	ErrPPIndexShare = NewSentinel("pp_index_share", "index-topk sharing is not supported with pipeline parallelism")
	// ErrTBOIndexShare: index-topk sharing under two-batch overlap (upstream guard).
	ErrTBOIndexShare = NewSentinel("tbo_index_share", "index-topk sharing is not supported with two-batch overlap")
	// ErrSharedLayerMissingPrevTopK: a shared layer reached without the previous layer's top-k.
	ErrSharedLayerMissingPrevTopK = NewSentinel("shared_layer_missing_prev_topk", "shared index layer has no previous top-k indices")
	// ErrInactiveIndexLayer: an index-cache slot asked for a shared layer, which has none.
	ErrInactiveIndexLayer = NewSentinel("inactive_index_layer", "layer has no index-cache slot")
)
