package ref

import "github.com/kvtwin/kvtwin/spec"

// This file holds what every twin of docs/spec/radix-acks.md §4 shares: the page →
// owner mapping, the closed form and the old enumerating count, the owner-
// lane eviction plan's request and result with their validation, the
// observable owner metadata and its invariants, and the hicache.owner_counts
// op.

// rangeCounter is an OwnerFn that can count the owners of a page range
// without visiting every page. Metadata splits and the metadata-miss
// fallback use it when the owner offers it and enumerate the pages
// otherwise.
type rangeCounter interface {
	spec.OwnerFn
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
func CountRange(fn spec.OwnerFn, s, num, n int, dst []int32) {
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
func EnumerateOwnerCounts(fn spec.OwnerFn, tokenDepth, tokens, ps, n int) []int32 {
	counts := make([]int32, n)
	start, pages := tokenDepth/ps, (tokens+ps-1)/ps
	for j := range pages {
		counts[fn.Owner(start+j, n)]++
	}
	return counts
}

// pageOwnersOf lists the owner of each page in [s, s+num) under fn.
func pageOwnersOf(fn spec.OwnerFn, s, num, n int) []uint16 {
	owners := make([]uint16, num)
	for j := range owners {
		owners[j] = uint16(fn.Owner(s+j, n))
	}
	return owners
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

// HiCacheOwnerCounts is the reference twin of hicache.owner_counts: the owners
// listed page by page, then the counts three ways — enumerated from the
// token depth, populated as metadata (the owners' histogram), and by the
// closed form.
func HiCacheOwnerCounts(lim spec.Limits, in spec.HiCacheOwnerCountsInput) (spec.HiCacheOwnerCountsOutput, error) {
	if err := ValidateHiCacheOwnerCounts(lim, in); err != nil {
		return spec.HiCacheOwnerCountsOutput{}, err
	}
	fn := RoundRobin{}
	s, n := in.TokenDepth/in.PageSize, in.Tokens/in.PageSize
	out := spec.HiCacheOwnerCountsOutput{StartPage: s, NumPages: n, PageOwners: pageOwnersOf(fn, s, n, in.CPSize),
		Enumerated: EnumerateOwnerCounts(fn, in.TokenDepth, in.Tokens, in.PageSize, in.CPSize),
		Metadata:   make([]int32, in.CPSize), ClosedForm: make([]int32, in.CPSize)}
	for _, o := range out.PageOwners {
		out.Metadata[o]++
	}
	ClosedFormCounts(s, n, in.CPSize, out.ClosedForm)
	return out, nil
}
