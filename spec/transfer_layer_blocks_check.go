package spec

// Sentinels of transfer.layer_blocks (docs/spec/transfer.md §3).
var (
	// ErrDstPtrRange: the decode pointer slice [start_layer, start_layer+n) is
	// outside dst_ptrs (docs/spec/transfer.md §3.2, PP slicing).
	ErrDstPtrRange = NewSentinel("dst_ptr_range", "decode pointer slice out of range")
	// ErrOddMHAPtrs: an MHA pointer list is not K halves then V halves (docs/spec/transfer.md §3.2).
	ErrOddMHAPtrs = NewSentinel("odd_mha_ptrs", "MHA pointer count must be even")
	// ErrZeroItemLen: an entry moves zero bytes per page (docs/spec/transfer.md §3.5 bad input).
	ErrZeroItemLen = NewSentinel("zero_item_len", "item_len must be >= 1")
	// ErrDuplicateDstPage: two pairs write the same decode page, so RDMA
	// completion order would decide the bytes (docs/spec/transfer.md §3.5, property 4).
	ErrDuplicateDstPage = NewSentinel("duplicate_dst_page", "decode pages must be distinct")
	// ErrOutOfBounds: a block reaches past its buffer's known data length (docs/spec/transfer.md §3.5, property 5).
	ErrOutOfBounds = NewSentinel("out_of_bounds", "block outside its buffer")
)
