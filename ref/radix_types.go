package ref

import (
	"github.com/kvtwin/kvtwin/spec"
)

// This file holds the types every radix-tree twin shares (docs/spec/radix-acks.md §0,
// §1): units, namespaces, keys, the tree configuration, results, the
// observable state and the RadixTree interface the ref and fast trees both
// implement.

// TokenKey builds a token-mode key from wider integers, rejecting ids
// outside [0, 2^32) with ErrTokenRange naming field[i] (docs/spec/radix-acks.md §1.10).
func TokenKey(field string, tokens []int64, extra spec.ExtraKey) (spec.RadixKey, error) {
	if err := CheckTokens(field, tokens); err != nil {
		return spec.RadixKey{}, err
	}
	units := make([]spec.Unit, len(tokens))
	for i, t := range tokens {
		units[i] = spec.Unit(t)
	}
	return spec.RadixKey{Units: units, Extra: extra}, nil
}

// EvictOrder is the sort key of a leaf under a policy; victims come in
// ascending EvictOrder (then ascending id). Both twins call it, so the
// policy tuples of docs/spec/radix-acks.md §0.2 are written once.
func EvictOrder(p spec.EvictPolicy, lastAccess, created uint64, hitCount, priority int) [2]int64 {
	switch p {
	case spec.PolicyLFU:
		return [2]int64{int64(hitCount), int64(lastAccess)}
	case spec.PolicyFIFO:
		return [2]int64{int64(created), 0}
	case spec.PolicyMRU:
		return [2]int64{-int64(lastAccess), 0}
	case spec.PolicyFILO:
		return [2]int64{-int64(created), 0}
	case spec.PolicyPriority:
		return [2]int64{int64(priority), int64(lastAccess)}
	}
	return [2]int64{int64(lastAccess), 0}
}
