package ref

import (
	"fmt"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for the radix tree (docs/spec/radix-acks.md §0.3, §1.10): sentinels, token and config checks, rejections.

// CheckTokens rejects the first token outside [0, 2^32) with ErrTokenRange.
func CheckTokens(field string, tokens []int64) error {
	for i, t := range tokens {
		if t < 0 || t > spec.MaxToken {
			return spec.Reject(spec.ErrTokenRange, spec.Idx(field, i), t, fmt.Sprintf("in [0, %d]", int64(spec.MaxToken)))
		}
	}
	return nil
}

// The rejections below are written once so both twins report byte-equal
// errors (field, value and bound).

// ValueLengthError rejects an insert whose value has valueLen slots for a
// key of keyLen units (before any bigram conversion).
func ValueLengthError(valueLen, keyLen int) error {
	return spec.Reject(spec.ErrValueLength, "value", valueLen, fmt.Sprintf("== len(key) (%d)", keyLen))
}

// UnalignedKeyError rejects an inserted key of keyLen units (after any
// bigram conversion) that is not a whole number of pages.
func UnalignedKeyError(keyLen, pageSize int) error {
	return spec.Reject(spec.ErrUnalignedKey, "key", keyLen, fmt.Sprintf("a multiple of page_size (%d)", pageSize))
}

// ForeignNodeError rejects a node handle that is not a live node.
func ForeignNodeError(id spec.NodeID) error {
	return spec.Reject(spec.ErrForeignNode, "node", id, "a live node of this tree")
}

// LockUnderflowError rejects an unlock of node whose path holds the node
// zero, which has lock_ref 0 (the first such node walking up from node).
func LockUnderflowError(node, zero spec.NodeID) error {
	return spec.Reject(spec.ErrLockUnderflow, "node", node, fmt.Sprintf("every node on its path locked (node %d has lock_ref 0)", zero))
}

// NoOwnLockError rejects an unlock of a node whose lock_ref is all held by
// its children's locks: no lock was taken on the node itself.
func NoOwnLockError(node spec.NodeID, lockRef int) error {
	return spec.Reject(spec.ErrLockUnderflow, "node", node, fmt.Sprintf("a node with a lock of its own (its lock_ref %d is all held by its children)", lockRef))
}

// NegativeCountError rejects a negative eviction count.
func NegativeCountError(n int) error {
	return spec.Reject(spec.ErrNegativeCount, "num_tokens", n, ">= 0")
}

// TokenRangeError rejects unit i of a token-mode key that is not a 32-bit
// token when the tree converts it to bigrams.
func TokenRangeError(i int, u spec.Unit) error {
	return spec.Reject(spec.ErrTokenRange, spec.Idx("key", i), u, fmt.Sprintf("in [0, %d]", int64(spec.MaxToken)))
}
