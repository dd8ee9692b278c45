package ref

import (
	"fmt"
	"math"
	"slices"
)

// This file holds what every twin of docs/spec/radix-acks.md §4 shares: the page →
// owner mapping, the closed form and the old enumerating count, the owner-
// lane eviction plan's request and result with their validation, the
// observable owner metadata and its invariants, and the hicache.owner_counts
// op.

// MaxCPSize is the largest CP size a tree or an owner count accepts. Page
// owners are stored as uint16 (§4.2) and every node holds one count per
// rank, so the bound keeps both small; real CP groups have a few ranks.
const MaxCPSize = 1024

// ErrMetadataStale: a node's owner metadata disagrees with its key — the
// page count, the count list's length or its sum (docs/spec/radix-acks.md §4.5). The
// fixed trees never hold stale metadata; it is how a split that forgot to
// split the metadata (§4.6 B4.b) fails fast instead of planning on lies.
var ErrMetadataStale = NewSentinel("metadata_stale", "node owner metadata disagrees with its key")

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

// RangeCounter is an OwnerFn that can count the owners of a page range
// without visiting every page. Metadata splits and the metadata-miss
// fallback use it when the owner offers it and enumerate the pages
// otherwise.
type RangeCounter interface {
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

// CountRange implements RangeCounter with the closed form.
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
	if rc, ok := fn.(RangeCounter); ok {
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

// PageOwnersOf lists the owner of each page in [s, s+num) under fn.
func PageOwnersOf(fn OwnerFn, s, num, n int) []uint16 {
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

// validateCP rejects CP sizes outside [1, MaxCPSize] (0 is off), a draft
// size without a main one, and a draft size equal to the main one.
func (c TreeConfig) validateCP() error {
	if c.CPSize < 0 || c.CPSize > MaxCPSize {
		return Reject(ErrBadCPSize, "cp_size", c.CPSize, fmt.Sprintf("0 (off) or in [1, %d]", MaxCPSize))
	}
	if c.CPDraftSize == 0 {
		return nil
	}
	if c.CPSize == 0 || c.CPDraftSize < 0 || c.CPDraftSize > MaxCPSize || c.CPDraftSize == c.CPSize {
		return Reject(ErrBadCPSize, "cp_draft_size", c.CPDraftSize,
			fmt.Sprintf("0 (none), or in [1, %d] and != cp_size (%d) when cp_size is set", MaxCPSize, c.CPSize))
	}
	return nil
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

// ValidateOwnerPlan checks a plan request against a tree whose cp_size is
// treeCPSize and returns N. Order (both twins report the first): N in
// [1, MaxCPSize] (ErrBadCPSize: the spec's ErrInvalidCPSize, one sentinel
// for one failure across kvtwin), len(need) and len(free) == N
// (ErrLengthMismatch, naming the list), then need[i] and free[i] >= 0
// (ErrNegative). The locked node is checked by the tree.
func ValidateOwnerPlan(req OwnerPlanRequest, treeCPSize int) (int, error) {
	n := req.CPSize
	if n == 0 {
		n = treeCPSize
	}
	if n < 1 || n > MaxCPSize {
		bound := fmt.Sprintf("in [1, %d] (0 takes the tree's cp_size, %d)", MaxCPSize, treeCPSize)
		if treeCPSize == 0 {
			bound = fmt.Sprintf("in [1, %d] (the tree has no cp_size for 0 to take)", MaxCPSize)
		}
		return 0, Reject(ErrBadCPSize, "cp_size", req.CPSize, bound)
	}
	for _, l := range []struct {
		name string
		v    []int
	}{{"need", req.Need}, {"free", req.Free}} {
		if len(l.v) != n {
			return 0, Reject(ErrLengthMismatch, l.name, len(l.v), fmt.Sprintf("== cp_size (%d)", n))
		}
	}
	for _, l := range []struct {
		name string
		v    []int
	}{{"need", req.Need}, {"free", req.Free}} {
		for i, x := range l.v {
			if x < 0 {
				return 0, Reject(ErrNegative, Idx(l.name, i), x, ">= 0")
			}
		}
	}
	return n, nil
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

// ErrMetadataStaleAt rejects a plan that met node id holding stale owner
// metadata; what says which check failed.
func ErrMetadataStaleAt(id NodeID, what string) error {
	return Reject(ErrMetadataStale, "node", id, "owner metadata consistent with the key: "+what)
}

// CheckOwnerState checks the owner metadata of a tree state against §4.2
// and §4.3 under round-robin owners: with CP on, every node has metadata
// whose StartPage is its token depth over the page size (O3), whose
// NumPages is len(key)/page_size, whose PageOwners are (StartPage + j) mod
// cp_size, and whose counts per configured size equal the closed form and,
// for cp_size, the histogram of PageOwners, summing to NumPages (O1, O2).
// With CP off no node has metadata.
func CheckOwnerState(st TreeState) error {
	sizes := st.Config.CPSizes()
	for _, n := range st.Nodes {
		if len(sizes) == 0 {
			if n.CP != nil {
				return fmt.Errorf("owners: node %d has metadata with CP off", n.ID)
			}
			continue
		}
		if n.CP == nil {
			return fmt.Errorf("owners: node %d has no metadata", n.ID)
		}
		if err := checkNodeCP(n, sizes, st.Config.PageSize); err != nil {
			return err
		}
	}
	return checkStartPages(st)
}

// checkStartPages is O3: each node's StartPage equals its token depth over
// the page size, the depth summed over its ancestors' keys (a split mints
// the parent, so ids do not order a path and the walk goes up by id).
func checkStartPages(st TreeState) error {
	byID := map[NodeID]NodeState{}
	for _, n := range st.Nodes {
		byID[n.ID] = n
	}
	ps := st.Config.PageSize
	for _, n := range st.Nodes {
		d := 0
		for p, ok := byID[n.Parent]; ok; p, ok = byID[p.Parent] {
			d += len(p.Key)
		}
		if n.CP != nil && n.CP.StartPage != d/ps {
			return fmt.Errorf("owners O3: node %d start page %d, its token depth %d gives %d", n.ID, n.CP.StartPage, d, d/ps)
		}
	}
	return nil
}

// checkNodeCP is O1 and O2 for one node.
func checkNodeCP(n NodeState, sizes []int, ps int) error {
	cp := n.CP
	if cp.NumPages != len(n.Key)/ps || len(cp.PageOwners) != cp.NumPages || len(cp.OwnerCounts) != len(sizes) {
		return fmt.Errorf("owners: node %d: %d pages, %d owners, %d count lists for a %d-unit key", n.ID, cp.NumPages, len(cp.PageOwners), len(cp.OwnerCounts), len(n.Key))
	}
	for j, o := range cp.PageOwners {
		if int(o) != (cp.StartPage+j)%sizes[0] {
			return fmt.Errorf("owners: node %d page %d owned by %d, want %d", n.ID, j, o, (cp.StartPage+j)%sizes[0])
		}
	}
	for i, c := range cp.OwnerCounts {
		want := make([]int32, sizes[i])
		ClosedFormCounts(cp.StartPage, cp.NumPages, sizes[i], want)
		if c.CPSize != sizes[i] || !slices.Equal(c.Counts, want) {
			return fmt.Errorf("owners O1: node %d counts %+v, closed form for N=%d gives %v", n.ID, c, sizes[i], want)
		}
	}
	hist := make([]int32, sizes[0])
	for _, o := range cp.PageOwners {
		hist[o]++
	}
	if !slices.Equal(hist, cp.OwnerCounts[0].Counts) {
		return fmt.Errorf("owners O2: node %d counts %v, its page owners histogram to %v", n.ID, cp.OwnerCounts[0].Counts, hist)
	}
	return nil
}

// OwnerCountsInput is the input of hicache.owner_counts (docs/spec/radix-acks.md
// §4.3): one node, given by its token depth and its key length, under a CP
// group of cp_size ranks with round-robin owners.
type OwnerCountsInput struct {
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

// OwnerCountsOutput is the node's pages, their owners and the three
// computations of its owner counts, equal by contract (§4.3 O1).
type OwnerCountsOutput struct {
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

// ValidateOwnerCounts rejects, in order: page_size < 1
// (ErrInvalidPageSize), cp_size outside [1, MaxCPSize] (ErrBadCPSize), a
// negative token_depth or tokens (ErrNegative), either not a multiple of
// page_size (ErrUnalignedKey), their sum overflowing (ErrOverflow), and a
// page list over the output limit.
func ValidateOwnerCounts(lim Limits, in OwnerCountsInput) error {
	if in.PageSize < 1 {
		return Reject(ErrInvalidPageSize, "page_size", in.PageSize, ">= 1")
	}
	if in.CPSize < 1 || in.CPSize > MaxCPSize {
		return Reject(ErrBadCPSize, "cp_size", in.CPSize, fmt.Sprintf("in [1, %d]", MaxCPSize))
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"token_depth", in.TokenDepth}, {"tokens", in.Tokens}} {
		if f.v < 0 {
			return Reject(ErrNegative, f.name, f.v, ">= 0")
		}
		if f.v%in.PageSize != 0 {
			return Reject(ErrUnalignedKey, f.name, f.v, fmt.Sprintf("a multiple of page_size (%d)", in.PageSize))
		}
	}
	if AddOverflows(int64(in.TokenDepth), int64(in.Tokens)) {
		return Reject(ErrOverflow, "tokens", in.Tokens, fmt.Sprintf("token_depth + tokens <= %d", int64(math.MaxInt64)))
	}
	return lim.CheckOutput("tokens", int64(in.Tokens/in.PageSize), 2)
}

// OwnerCounts is the reference twin of hicache.owner_counts: the owners
// listed page by page, then the counts three ways — enumerated from the
// token depth, populated as metadata (the owners' histogram), and by the
// closed form.
func OwnerCounts(lim Limits, in OwnerCountsInput) (OwnerCountsOutput, error) {
	if err := ValidateOwnerCounts(lim, in); err != nil {
		return OwnerCountsOutput{}, err
	}
	fn := RoundRobin{}
	s, n := in.TokenDepth/in.PageSize, in.Tokens/in.PageSize
	out := OwnerCountsOutput{StartPage: s, NumPages: n, PageOwners: PageOwnersOf(fn, s, n, in.CPSize),
		Enumerated: EnumerateOwnerCounts(fn, in.TokenDepth, in.Tokens, in.PageSize, in.CPSize),
		Metadata:   make([]int32, in.CPSize), ClosedForm: make([]int32, in.CPSize)}
	for _, o := range out.PageOwners {
		out.Metadata[o]++
	}
	ClosedFormCounts(s, n, in.CPSize, out.ClosedForm)
	return out, nil
}
