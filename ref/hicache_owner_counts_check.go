package ref

import (
	"fmt"
	"math"
	"slices"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for the owner metadata (docs/spec/radix-acks.md §4): owner-lane plans, owner-state invariants, owner_counts input.

// CheckOwnerPlan checks a plan request against a tree whose cp_size is
// treeCPSize and returns N. Order (both twins report the first): N in
// [1, MaxCPSize] (ErrBadCPSize: the spec's ErrInvalidCPSize, one sentinel
// for one failure across kvtwin), len(need) and len(free) == N
// (ErrLengthMismatch, naming the list), then need[i] and free[i] >= 0
// (ErrNegative). The locked node is checked by the tree.
func CheckOwnerPlan(req spec.OwnerPlanRequest, treeCPSize int) (int, error) {
	n := req.CPSize
	if n == 0 {
		n = treeCPSize
	}
	if n < 1 || n > spec.MaxCPSize {
		bound := fmt.Sprintf("in [1, %d] (0 takes the tree's cp_size, %d)", spec.MaxCPSize, treeCPSize)
		if treeCPSize == 0 {
			bound = fmt.Sprintf("in [1, %d] (the tree has no cp_size for 0 to take)", spec.MaxCPSize)
		}
		return 0, spec.Reject(spec.ErrBadCPSize, "cp_size", req.CPSize, bound)
	}
	for _, l := range []struct {
		name string
		v    []int
	}{{"need", req.Need}, {"free", req.Free}} {
		if len(l.v) != n {
			return 0, spec.Reject(spec.ErrLengthMismatch, l.name, len(l.v), fmt.Sprintf("== cp_size (%d)", n))
		}
	}
	for _, l := range []struct {
		name string
		v    []int
	}{{"need", req.Need}, {"free", req.Free}} {
		for i, x := range l.v {
			if x < 0 {
				return 0, spec.Reject(spec.ErrNegative, spec.Idx(l.name, i), x, ">= 0")
			}
		}
	}
	return n, nil
}

// MetadataStaleError rejects a plan that met node id holding stale owner
// metadata; what says which check failed.
func MetadataStaleError(id spec.NodeID, what string) error {
	return spec.Reject(spec.ErrMetadataStale, "node", id, "owner metadata consistent with the key: "+what)
}

// CheckOwnerState checks the owner metadata of a tree state against §4.2
// and §4.3 under round-robin owners: with CP on, every node has metadata
// whose StartPage is its token depth over the page size (O3), whose
// NumPages is len(key)/page_size, whose PageOwners are (StartPage + j) mod
// cp_size, and whose counts per configured size equal the closed form and,
// for cp_size, the histogram of PageOwners, summing to NumPages (O1, O2).
// With CP off no node has metadata.
func CheckOwnerState(st spec.TreeState) error {
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
func checkStartPages(st spec.TreeState) error {
	byID := map[spec.NodeID]spec.NodeState{}
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
func checkNodeCP(n spec.NodeState, sizes []int, ps int) error {
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

// ValidateHiCacheOwnerCounts rejects, in order: page_size < 1
// (ErrInvalidPageSize), cp_size outside [1, MaxCPSize] (ErrBadCPSize), a
// negative token_depth or tokens (ErrNegative), either not a multiple of
// page_size (ErrUnalignedKey), their sum overflowing (ErrOverflow), and a
// page list over the output limit.
func ValidateHiCacheOwnerCounts(lim spec.Limits, in spec.HiCacheOwnerCountsInput) error {
	if in.PageSize < 1 {
		return spec.Reject(spec.ErrInvalidPageSize, "page_size", in.PageSize, ">= 1")
	}
	if in.CPSize < 1 || in.CPSize > spec.MaxCPSize {
		return spec.Reject(spec.ErrBadCPSize, "cp_size", in.CPSize, fmt.Sprintf("in [1, %d]", spec.MaxCPSize))
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"token_depth", in.TokenDepth}, {"tokens", in.Tokens}} {
		if f.v < 0 {
			return spec.Reject(spec.ErrNegative, f.name, f.v, ">= 0")
		}
		if f.v%in.PageSize != 0 {
			return spec.Reject(spec.ErrUnalignedKey, f.name, f.v, fmt.Sprintf("a multiple of page_size (%d)", in.PageSize))
		}
	}
	if spec.AddOverflows(int64(in.TokenDepth), int64(in.Tokens)) {
		return spec.Reject(spec.ErrOverflow, "tokens", in.Tokens, fmt.Sprintf("token_depth + tokens <= %d", int64(math.MaxInt64)))
	}
	return lim.CheckOutput("tokens", int64(in.Tokens/in.PageSize), 2)
}
