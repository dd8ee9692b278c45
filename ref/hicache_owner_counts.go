package ref

// This file holds what every twin of docs/spec/radix-acks.md §4 shares: the page →
// owner mapping, the closed form and the old enumerating count, the owner-
// lane eviction plan's request and result with their validation, the
// observable owner metadata and its invariants, and the hicache.owner_counts
// op.

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

// rangeCounter is an OwnerFn that can count the owners of a page range
// without visiting every page. Metadata splits and the metadata-miss
// fallback use it when the owner offers it and enumerate the pages
// otherwise.
type rangeCounter interface {
	OwnerFn
	// CountRange sets dst[r] (len(dst) == n) to the number of pages in
	// [s, s+num) owned by rank r.
	CountRange(s, num, n int, dst []int32)
}

// RoundRobin is the default owner rule: owner_N(q) = q mod N, round-robin
// by absolute page position (docs/spec/radix-acks.md §4.1), the arithmetic of
// upstream's page-interleave placement.
type RoundRobin struct{}

// Owner implements OwnerFn.
func (RoundRobin) Owner(q, n int) int { return q % n }

// CountRange implements rangeCounter with the closed form.
func (RoundRobin) CountRange(s, num, n int, dst []int32) { ClosedFormCounts(s, num, n, dst) }

// ClosedFormCounts is the closed form of docs/spec/radix-acks.md §4.2 for round-robin
// owners: dst[r] = ⌊num/n⌋ + (((r − s) mod n) < (num mod n) ? 1 : 0), with a
// non-negative mod. O(n). Preconditions: s, num >= 0, n >= 1, len(dst) == n.
func ClosedFormCounts(s, num, n int, dst []int32) {
	for r := range dst {
		c := num / n
		if mod(r-s, n) < num%n {
			c++
		}
		dst[r] = int32(c)
	}
}

// mod is the non-negative remainder (Go's % keeps the dividend's sign).
func mod(a, n int) int { return ((a % n) + n) % n }

// CountRange counts the owners of pages [s, s+num) under fn into dst
// (len(dst) == n): by fn's own range count when it has one, else by visiting
// every page. It is CPU arithmetic on positions, never a tensor.
func CountRange(fn OwnerFn, s, num, n int, dst []int32) {
	if rc, ok := fn.(rangeCounter); ok {
		rc.CountRange(s, num, n, dst)
		return
	}
	clear(dst)
	for q := s; q < s+num; q++ {
		dst[fn.Owner(q, n)]++
	}
}

// EnumerateOwnerCounts is the old path of docs/spec/radix-acks.md §4.3: derive a
// node's pages from its token depth and its tokens (padded up to whole
// pages, as the tensor path padded the slot tensor), map each page to its
// owner and histogram. O(pages). Preconditions: tokenDepth is a multiple of
// ps, tokens >= 0, n >= 1.
func EnumerateOwnerCounts(fn OwnerFn, tokenDepth, tokens, ps, n int) []int32 {
	counts := make([]int32, n)
	start, pages := tokenDepth/ps, (tokens+ps-1)/ps
	for j := range pages {
		counts[fn.Owner(start+j, n)]++
	}
	return counts
}

// pageOwnersOf lists the owner of each page in [s, s+num) under fn.
func pageOwnersOf(fn OwnerFn, s, num, n int) []uint16 {
	owners := make([]uint16, num)
	for j := range owners {
		owners[j] = uint16(fn.Owner(s+j, n))
	}
	return owners
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

// PlanDeficit is step 1 of docs/spec/radix-acks.md §4.4: deficit[r] = max(0,
// need[r] − free[r]) (both non-negative, so no overflow).
func PlanDeficit(need, free []int) []int {
	d := make([]int, len(need))
	for r := range d {
		d[r] = max(0, need[r]-free[r])
	}
	return d
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

// HiCacheOwnerCounts is the reference twin of hicache.owner_counts: the owners
// listed page by page, then the counts three ways — enumerated from the
// token depth, populated as metadata (the owners' histogram), and by the
// closed form.
func HiCacheOwnerCounts(lim Limits, in HiCacheOwnerCountsInput) (HiCacheOwnerCountsOutput, error) {
	if err := ValidateHiCacheOwnerCounts(lim, in); err != nil {
		return HiCacheOwnerCountsOutput{}, err
	}
	fn := RoundRobin{}
	s, n := in.TokenDepth/in.PageSize, in.Tokens/in.PageSize
	out := HiCacheOwnerCountsOutput{StartPage: s, NumPages: n, PageOwners: pageOwnersOf(fn, s, n, in.CPSize),
		Enumerated: EnumerateOwnerCounts(fn, in.TokenDepth, in.Tokens, in.PageSize, in.CPSize),
		Metadata:   make([]int32, in.CPSize), ClosedForm: make([]int32, in.CPSize)}
	for _, o := range out.PageOwners {
		out.Metadata[o]++
	}
	ClosedFormCounts(s, n, in.CPSize, out.ClosedForm)
	return out, nil
}
