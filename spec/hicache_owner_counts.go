package spec

// OwnerFn maps an absolute page position q to the CP rank that stores the
// page, for a CP group of n >= 1 ranks (docs/spec/radix-acks.md §4.1). It must depend
// on q and n only, so every request sharing a prefix agrees on the owners,
// and return a rank in [0, n). The trees and the planner call nothing else,
// so another confirmed rule is a new OwnerFn (§6 item 1), not a planner
// change.
type OwnerFn interface {
	// Owner is the rank owning page q (q >= 0) in a group of n ranks.
	Owner(q, n int) int
}

// CPSizes lists the tree's configured CP sizes: cp_size, then
// cp_draft_size when set (§4.2 "per-CP-size"); none when CP is off.
func (c TreeConfig) CPSizes() []int {
	var sizes []int
	if c.CPSize > 0 {
		sizes = append(sizes, c.CPSize)
	}
	if c.CPDraftSize > 0 {
		sizes = append(sizes, c.CPDraftSize)
	}
	return sizes
}

// CPCounts is one CP size's owner counts: Counts[r] pages owned by rank r.
type CPCounts struct {
	// CPSize is the CP group size N.
	CPSize int `json:"cp_size"`
	// Counts has N entries summing to the node's page count.
	Counts []int32 `json:"counts"`
}

// NodeCP is a node's observable owner metadata (docs/spec/radix-acks.md §4.2): the
// reference derives it by enumerating the node's pages from its token
// depth, the fast tree reports what it stores.
type NodeCP struct {
	// StartPage is the absolute page position of the node's first page.
	StartPage int `json:"start_page"`
	// NumPages is len(key)/page_size.
	NumPages int `json:"num_pages"`
	// PageOwners is the owner of each page under the tree's cp_size.
	PageOwners []uint16 `json:"page_owners"`
	// OwnerCounts has one entry per configured CP size, in TreeConfig.CPSizes order.
	OwnerCounts []CPCounts `json:"owner_counts"`
}

// OwnerPlanRequest asks for the owner-lane eviction plan of a load-back
// (docs/spec/radix-acks.md §4.4).
type OwnerPlanRequest struct {
	// CPSize is N; 0 takes the tree's cp_size. A size the tree has no
	// metadata for is counted from positions (a metadata miss).
	CPSize int
	// Need[r] is the pages lane r must receive (length N, each >= 0).
	Need []int
	// Free[r] is lane r's free device pages (length N, each >= 0).
	Free []int
	// Locked is the deepest node of the load's locked path; it and its
	// ancestors are never victims. The root (0) excludes nothing else.
	Locked NodeID
	// DryRun plans without executing: nothing is evicted and a refusal is
	// not counted.
	DryRun bool
}

// OwnerPlan is the plan and what executing it did (docs/spec/radix-acks.md §4.4).
type OwnerPlan struct {
	// CPSize is the N planned for.
	CPSize int `json:"cp_size"`
	// Deficit is the initial per-lane deficit max(0, need − free).
	Deficit []int `json:"deficit"`
	// Victims are the chosen leaves in eviction order; never nil.
	Victims []NodeID `json:"victims"`
	// Remaining is the deficit the victims leave; all zero iff Admitted.
	Remaining []int `json:"remaining"`
	// Admitted is true when the victims cover every lane: the load may
	// proceed. Otherwise the load-back is refused and nothing is evicted.
	Admitted bool `json:"admitted"`
	// Evicted is the units freed (0 for a dry run or a refusal).
	Evicted int `json:"evicted"`
	// Freed are the evicted victims' slots, in eviction order; never nil.
	Freed [][]SlotIdx `json:"freed"`
}

// HiCacheOwnerCountsInput is the input of hicache.owner_counts (docs/spec/radix-acks.md
// §4.3): one node, given by its token depth and its key length, under a CP
// group of cp_size ranks with round-robin owners.
type HiCacheOwnerCountsInput struct {
	// CPSize is N, in [1, MaxCPSize].
	CPSize int `json:"cp_size"`
	// PageSize is the tokens per page, >= 1.
	PageSize int `json:"page_size"`
	// TokenDepth is the sum of the node's ancestors' key lengths, a
	// non-negative multiple of page_size.
	TokenDepth int `json:"token_depth"`
	// Tokens is the node's key length, a non-negative multiple of page_size.
	Tokens int `json:"tokens"`
}

// HiCacheOwnerCountsOutput is the node's pages, their owners and the three
// computations of its owner counts, equal by contract (§4.3 O1).
type HiCacheOwnerCountsOutput struct {
	// StartPage is token_depth / page_size.
	StartPage int `json:"start_page"`
	// NumPages is tokens / page_size.
	NumPages int `json:"num_pages"`
	// PageOwners is each page's owner.
	PageOwners []uint16 `json:"page_owners"`
	// Enumerated are the counts of the old path: pages enumerated from the
	// token depth and histogrammed, O(pages).
	Enumerated []int32 `json:"enumerated"`
	// Metadata are the counts a node's metadata holds: populated with its
	// page owners when it is registered, read in O(1).
	Metadata []int32 `json:"metadata"`
	// ClosedForm are the counts of the closed form, O(N).
	ClosedForm []int32 `json:"closed_form"`
}
