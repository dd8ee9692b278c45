package fault

// Radix selects the historic radix-tree bugs (docs/spec/radix-acks.md
// §1.11, §4.6) that Hooks.NewRadixTree puts back; the zero value is the
// fixed tree.
type Radix struct {
	// CopyingSlices is docs/spec/radix-acks.md §1.11 B1.a: every hop of a
	// walk copies the rest of the key (the pre-fix `key = key[p:]` on a
	// list), so a full-hit match over a k-node path copies about L·(k−1)/2
	// units.
	CopyingSlices bool
	// StoredViews is docs/spec/radix-acks.md §1.11 B1.b: new leaves and
	// both halves of a split keep views of the caller's key instead of
	// compact private copies, so a caller reusing its buffer rewrites stored
	// keys. The child-map entry keeps the key it was stored under, as in the
	// notes' account.
	StoredViews bool
	// RecountOwners is docs/spec/radix-acks.md §4.6 B4.a: the owner-lane
	// planner recounts each scanned leaf's owner counts from its tokens
	// (token depth walk, page padding, per-page owner) instead of reading
	// the node metadata. Plans are identical; owner_count_recomputations is
	// 1 per scanned leaf.
	RecountOwners bool
	// SplitKeepsOwnerCounts is docs/spec/radix-acks.md §4.6 B4.b: a split
	// gives both halves the split node's owner counts instead of splitting
	// them, so the suffix of a [2,2] node split at one page claims [2,2] for
	// its 3 pages.
	SplitKeepsOwnerCounts bool

	// EvictKeyDropped is a reach plant (issue 30 item 7), not a historic
	// bug: k in {1, 2} zeroes the k-th key of the policy tuple that
	// ref.EvictOrder returns (docs/spec/radix-acks.md §0.2 rule 3), as if
	// the tuple forgot that key; 0 is production. Run alone it is a fast
	// heap that forgets the key; run as both twins (the reach test's
	// "shared" plant) it is the helper both twins call getting it wrong.
	EvictKeyDropped int
}
