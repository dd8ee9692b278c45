package ref

import "fmt"

// Validation for the radix tree (docs/spec/radix-acks.md §0.3, §1.10): sentinels, token and config checks, rejections.

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

// CheckTokens rejects the first token outside [0, 2^32) with ErrTokenRange.
func CheckTokens(field string, tokens []int64) error {
	for i, t := range tokens {
		if t < 0 || t > MaxToken {
			return Reject(ErrTokenRange, Idx(field, i), t, fmt.Sprintf("in [0, %d]", int64(MaxToken)))
		}
	}
	return nil
}

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

// The rejections below are written once so both twins report byte-equal
// errors (field, value and bound).

// ValueLengthError rejects an insert whose value has valueLen slots for a
// key of keyLen units (before any bigram conversion).
func ValueLengthError(valueLen, keyLen int) error {
	return Reject(ErrValueLength, "value", valueLen, fmt.Sprintf("== len(key) (%d)", keyLen))
}

// UnalignedKeyError rejects an inserted key of keyLen units (after any
// bigram conversion) that is not a whole number of pages.
func UnalignedKeyError(keyLen, pageSize int) error {
	return Reject(ErrUnalignedKey, "key", keyLen, fmt.Sprintf("a multiple of page_size (%d)", pageSize))
}

// ForeignNodeError rejects a node handle that is not a live node.
func ForeignNodeError(id NodeID) error {
	return Reject(ErrForeignNode, "node", id, "a live node of this tree")
}

// LockUnderflowError rejects an unlock of node whose path holds the node
// zero, which has lock_ref 0 (the first such node walking up from node).
func LockUnderflowError(node, zero NodeID) error {
	return Reject(ErrLockUnderflow, "node", node, fmt.Sprintf("every node on its path locked (node %d has lock_ref 0)", zero))
}

// NoOwnLockError rejects an unlock of a node whose lock_ref is all held by
// its children's locks: no lock was taken on the node itself.
func NoOwnLockError(node NodeID, lockRef int) error {
	return Reject(ErrLockUnderflow, "node", node, fmt.Sprintf("a node with a lock of its own (its lock_ref %d is all held by its children)", lockRef))
}

// NegativeCountError rejects a negative eviction count.
func NegativeCountError(n int) error {
	return Reject(ErrNegativeCount, "num_tokens", n, ">= 0")
}

// TokenRangeError rejects unit i of a token-mode key that is not a 32-bit
// token when the tree converts it to bigrams.
func TokenRangeError(i int, u Unit) error {
	return Reject(ErrTokenRange, Idx("key", i), u, fmt.Sprintf("in [0, %d]", int64(MaxToken)))
}
