package spec

// Sentinels of transfer.prebuilt_slice (docs/spec/transfer.md §5).
var (
	// ErrRowTooShort: prefix_len + extend_len is past the end of the
	// request's req_to_token row (docs/spec/transfer.md §5 "Bad input").
	ErrRowTooShort = NewSentinel("row_too_short", "prefix_len + extend_len exceeds the req_to_token row")
	// ErrExceedsTotal: the extend lengths do not add up to the pre-allocated
	// extend_num_tokens; upstream asserts "Exceeds total size" (docs/spec/transfer.md §5).
	ErrExceedsTotal = NewSentinel("exceeds_total", "extend lengths do not add up to extend_num_tokens")
	// ErrSeqLenMismatch: a request with no outputs yet has
	// seq_len - prefix_len != extend_len (docs/spec/transfer.md §5).
	ErrSeqLenMismatch = NewSentinel("seq_len_mismatch", "seq_len - prefix_len != extend_len for a request with no outputs")
)
