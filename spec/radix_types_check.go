package spec

// Radix sentinels (docs/spec/radix-acks.md §0.3, §1.10).
var (
	// ErrInvalidPageSize: page_size < 1 at tree construction.
	ErrInvalidPageSize = NewSentinel("invalid_page_size", "page_size must be >= 1")
	// ErrUnalignedKey: an inserted key's length is not a multiple of page_size.
	ErrUnalignedKey = NewSentinel("unaligned_key", "key length is not a multiple of page_size")
	// ErrValueLength: an inserted value's length differs from its key's.
	ErrValueLength = NewSentinel("value_length", "value length differs from key length")
	// ErrExtraKeyMismatch: two keys in different namespaces were compared.
	ErrExtraKeyMismatch = NewSentinel("extra_key_mismatch", "keys are in different namespaces")
	// ErrKeyRange: a key slice or index is outside the key.
	ErrKeyRange = NewSentinel("key_range", "key index out of range")
	// ErrForeignNode: a node handle that is not a live node of this tree.
	ErrForeignNode = NewSentinel("foreign_node", "node is not in this tree")
	// ErrLockUnderflow: an unlock would make a lock count negative.
	ErrLockUnderflow = NewSentinel("lock_underflow", "lock count would go negative")
	// ErrNegativeCount: a negative token count to evict.
	ErrNegativeCount = NewSentinel("negative_count", "count must not be negative")
	// ErrTokenRange: a token id outside [0, 2^32).
	ErrTokenRange = NewSentinel("token_range", "token id outside [0, 2^32)")
)

// Validate rejects a page size below 1 (ErrInvalidPageSize), an unknown
// policy (ErrBadEnum) and bad CP sizes (ErrBadCPSize), in that order.
func (c TreeConfig) Validate() error {
	if c.PageSize < 1 {
		return Reject(ErrInvalidPageSize, "page_size", c.PageSize, ">= 1")
	}
	switch c.Policy {
	case "", PolicyLRU, PolicyLFU, PolicyFIFO, PolicyMRU, PolicyFILO, PolicyPriority:
	default:
		return Reject(ErrBadEnum, "policy", string(c.Policy), "one of lru, lfu, fifo, mru, filo, priority")
	}
	return c.validateCP()
}
