package fast

import (
	"fmt"
	"slices"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// CPNodeMeta is the CP owner metadata a fast-tree node keeps
// (docs/spec/radix-acks.md §4.2). It is populated when the node is created (from its
// parent's end page, O(pages) for the owners and O(N) per size for the
// counts), split at every split (the counts by the closed form, O(N·sizes))
// and dropped with the node, so the planner reads counts in O(1) instead of
// recounting a leaf's pages (§4.3, §4.6 B4.a).
type CPNodeMeta struct {
	// StartPage is the absolute position of the node's first page.
	StartPage int
	// NumPages is len(key)/page_size.
	NumPages int
	// PageOwners is each page's owner under the tree's cp_size; nil with CP
	// off. A split shares it between the halves: it is never written after
	// creation.
	PageOwners []uint16
	// OwnerCounts has one entry per configured CP size, in
	// TreeConfig.CPSizes order; nil with CP off. The spec sketches a map
	// keyed by size; with one or two sizes a slice is smaller, allocation
	// free to search, and ordered.
	OwnerCounts []SizeCounts
}

// SizeCounts is one CP size's owner counts.
type SizeCounts struct {
	// CPSize is N.
	CPSize int
	// Counts[r] is the number of the node's pages owned by rank r.
	Counts []int32
}

// newMeta is the metadata of a node of pages pages starting at page start.
func (t *RadixTree) newMeta(start, pages int) CPNodeMeta {
	m := CPNodeMeta{StartPage: start, NumPages: pages}
	if len(t.sizes) == 0 {
		return m
	}
	m.PageOwners = pageOwners(t.owner, start, pages, t.sizes[0])
	m.OwnerCounts = t.newCounts()
	for _, sc := range m.OwnerCounts {
		countRange(t.owner, start, pages, sc.CPSize, sc.Counts)
	}
	return m
}

// newCounts allocates zeroed counts for every configured size, in one
// backing array.
func (t *RadixTree) newCounts() []SizeCounts {
	total := 0
	for _, n := range t.sizes {
		total += n
	}
	buf := make([]int32, total)
	out := make([]SizeCounts, len(t.sizes))
	for i, n := range t.sizes {
		out[i], buf = SizeCounts{CPSize: n, Counts: buf[:n:n]}, buf[n:]
	}
	return out
}

// splitMeta splits a node's metadata at sp pages (docs/spec/radix-acks.md §4.2): the
// prefix takes [s, s+sp), the suffix [s+sp, s+n). The prefix's counts come
// from the closed form; the suffix's are the node's minus the prefix's,
// updated in place (the suffix is the node that was split). Under the
// B4.b fault both halves keep the node's counts.
func (t *RadixTree) splitMeta(old CPNodeMeta, sp int) (pre, suf CPNodeMeta) {
	pre = CPNodeMeta{StartPage: old.StartPage, NumPages: sp}
	suf = CPNodeMeta{StartPage: old.StartPage + sp, NumPages: old.NumPages - sp}
	if len(t.sizes) == 0 {
		return pre, suf
	}
	pre.PageOwners, suf.PageOwners = old.PageOwners[:sp:sp], old.PageOwners[sp:]
	pre.OwnerCounts, suf.OwnerCounts = t.newCounts(), old.OwnerCounts
	for i, sc := range pre.OwnerCounts {
		if t.faults.SplitKeepsOwnerCounts {
			copy(sc.Counts, old.OwnerCounts[i].Counts)
			continue
		}
		countRange(t.owner, pre.StartPage, sp, sc.CPSize, sc.Counts)
		for r, c := range sc.Counts {
			suf.OwnerCounts[i].Counts[r] -= c
		}
	}
	return pre, suf
}

// pageOwners lists the owners of pages [s, s+num) under n ranks; the
// round-robin rule steps a rank counter instead of dividing per page.
func pageOwners(fn spec.OwnerFn, s, num, n int) []uint16 {
	owners := make([]uint16, num)
	if _, rr := fn.(ref.RoundRobin); !rr {
		for j := range owners {
			owners[j] = uint16(fn.Owner(s+j, n))
		}
		return owners
	}
	r := s % n
	for j := range owners {
		owners[j] = uint16(r)
		if r++; r == n {
			r = 0
		}
	}
	return owners
}

// countRange counts the owners of pages [s, s+num) into dst (len n): the
// round-robin closed form, else ref.CountRange (the rule's own range count
// or a page walk; CPU only either way).
func countRange(fn spec.OwnerFn, s, num, n int, dst []int32) {
	if _, rr := fn.(ref.RoundRobin); rr {
		closedForm(s, num, n, dst)
		return
	}
	ref.CountRange(fn, s, num, n, dst)
}

// closedForm is §4.2's closed form restated without a mod per rank: every
// rank owns ⌊num/n⌋ pages, and the num mod n ranks s, s+1, … (mod n) own
// one more.
func closedForm(s, num, n int, dst []int32) {
	base := int32(num / n)
	for r := range dst {
		dst[r] = base
	}
	r := s % n
	for range num % n {
		dst[r]++
		if r++; r == n {
			r = 0
		}
	}
}

// nodeCP is n's observable metadata (copies), nil with CP off.
func (t *RadixTree) nodeCP(n *node) *spec.NodeCP {
	if len(t.sizes) == 0 {
		return nil
	}
	cp := &spec.NodeCP{StartPage: n.meta.StartPage, NumPages: n.meta.NumPages,
		PageOwners: slices.Clone(n.meta.PageOwners), OwnerCounts: make([]spec.CPCounts, len(n.meta.OwnerCounts))}
	if cp.PageOwners == nil {
		cp.PageOwners = []uint16{}
	}
	for i, sc := range n.meta.OwnerCounts {
		cp.OwnerCounts[i] = spec.CPCounts{CPSize: sc.CPSize, Counts: slices.Clone(sc.Counts)}
	}
	return cp
}

// OwnerCounts returns node id's owner counts for CP size n from its
// metadata, O(1) for a configured size (§4.3 "fast"); a size without
// metadata is counted from the node's start page and page count with the
// closed form and counts a metadata miss (§4.5). The slice must not be
// modified. Stale metadata is ErrMetadataStale, an unknown id
// ErrForeignNode, n outside [1, MaxCPSize] ErrBadCPSize.
func (t *RadixTree) OwnerCounts(id spec.NodeID, n int) ([]int32, error) {
	x, ok := t.nodes[id]
	if !ok {
		return nil, ref.ForeignNodeError(id)
	}
	if n < 1 || n > spec.MaxCPSize {
		return nil, spec.Reject(spec.ErrBadCPSize, "cp_size", n, fmt.Sprintf("in [1, %d]", spec.MaxCPSize))
	}
	var misses, recounts int64
	c, err := t.leafCounts(x, n, t.sizeIndex(n), nil, &recounts, &misses)
	if err == nil {
		t.metaMisses += misses
		t.recounts += recounts
	}
	return c, err
}

// sizeIndex is n's position among the configured sizes, -1 for none.
func (t *RadixTree) sizeIndex(n int) int { return slices.Index(t.sizes, n) }

// leafCounts is x's counts for n ranks: the stored counts (sizes[idx])
// after the staleness checks of §4.5, or for idx < 0 the closed form into
// scratch (allocated when nil) with a miss counted. Under the B4.a fault it recounts from the
// tokens instead. Counters are accumulated by the caller's pointers so a
// failed plan can drop them.
func (t *RadixTree) leafCounts(x *node, n, idx int, scratch []int32, recounts, misses *int64) ([]int32, error) {
	if idx < 0 {
		*misses++
	}
	if t.faults.RecountOwners {
		*recounts++
		return t.recount(x, n), nil
	}
	m := &x.meta
	if m.NumPages != x.key.n/t.ps {
		return nil, ref.MetadataStaleError(x.id, fmt.Sprintf("num_pages %d, len(key)/page_size %d", m.NumPages, x.key.n/t.ps))
	}
	if idx < 0 {
		if scratch == nil {
			scratch = make([]int32, n)
		}
		countRange(t.owner, m.StartPage, m.NumPages, n, scratch)
		return scratch, nil
	}
	if len(m.OwnerCounts) != len(t.sizes) || len(m.PageOwners) != m.NumPages {
		return nil, ref.MetadataStaleError(x.id, fmt.Sprintf("%d count lists for %d sizes, %d page owners for %d pages", len(m.OwnerCounts), len(t.sizes), len(m.PageOwners), m.NumPages))
	}
	c := m.OwnerCounts[idx].Counts
	if len(c) != n {
		return nil, ref.MetadataStaleError(x.id, fmt.Sprintf("%d counts for cp_size %d", len(c), n))
	}
	sum := 0
	for _, v := range c {
		if v < 0 {
			return nil, ref.MetadataStaleError(x.id, fmt.Sprintf("negative count %d", v))
		}
		sum += int(v)
	}
	if sum != m.NumPages {
		return nil, ref.MetadataStaleError(x.id, fmt.Sprintf("counts sum to %d, num_pages %d", sum, m.NumPages))
	}
	return c, nil
}

// recount is the B4.a path: the token depth summed up the parent chain,
// the key padded to pages, each page's owner, a histogram — O(depth + n)
// per scanned leaf, where the fix is O(1).
func (t *RadixTree) recount(x *node, n int) []int32 {
	depth := 0
	for y := x.parent; y != nil; y = y.parent {
		depth += y.key.n
	}
	return ref.EnumerateOwnerCounts(t.owner, depth, x.key.n, t.ps, n)
}

// EvictOwnerLanes plans the owner-lane eviction of a load-back and, unless
// req.DryRun, executes it (docs/spec/radix-acks.md §4.4): victims are evicted only
// when they cover every lane's deficit; otherwise nothing is evicted and
// one refusal is counted. Leaves follow the plain-tree definition (§1.8);
// the heap starts from the incrementally kept leaf set minus the load path,
// each scanned leaf costs O(N) on its metadata, and a parent whose
// children have all been taken joins the heap. A rejected request (bad
// sizes, unknown locked node, stale metadata) changes nothing.
func (t *RadixTree) EvictOwnerLanes(req spec.OwnerPlanRequest) (spec.OwnerPlan, error) {
	n, err := ref.CheckOwnerPlan(req, t.cfg.CPSize)
	if err != nil {
		return spec.OwnerPlan{}, err
	}
	load, ok := t.nodes[req.Locked]
	if !ok {
		return spec.OwnerPlan{}, ref.ForeignNodeError(req.Locked)
	}
	deficit := make([]int, n)
	for r := range deficit {
		deficit[r] = max(0, req.Need[r]-req.Free[r])
	}
	plan := spec.OwnerPlan{CPSize: n, Deficit: slices.Clone(deficit), Victims: []spec.NodeID{}, Freed: [][]spec.SlotIdx{}}
	victims, short, err := t.planVictims(n, deficit, load)
	if err != nil {
		return spec.OwnerPlan{}, err
	}
	plan.Victims = slices.Grow(plan.Victims, len(victims))
	for _, v := range victims {
		plan.Victims = append(plan.Victims, v.id)
	}
	plan.Remaining, plan.Admitted = deficit, short == 0
	switch {
	case req.DryRun:
	case !plan.Admitted:
		t.loadRefusals++
	default:
		for _, v := range victims {
			plan.Freed = append(plan.Freed, v.value)
			plan.Evicted += len(v.value)
			t.evictable -= v.key.n
			t.deleteLeaf(v)
		}
	}
	return plan, nil
}

// planVictims is steps 2–4 of §4.4 on the leaf set; it lowers deficit in
// place and returns the victims and the number of lanes still short.
// Counters are committed only when the plan succeeds.
func (t *RadixTree) planVictims(n int, deficit []int, load *node) ([]*node, int, error) {
	short := 0
	for _, d := range deficit {
		if d > 0 {
			short++
		}
	}
	if short == 0 {
		return nil, 0, nil
	}
	t.planGen++
	gen := t.planGen
	for y := load; y != nil; y = y.parent {
		y.planMark = gen
	}
	h := make(victimHeap, 0, len(t.leaves))
	for _, x := range t.leaves {
		if x.planMark != gen {
			h = append(h, t.victimOf(x))
		}
	}
	h.init()
	idx := t.sizeIndex(n)
	var scratch []int32
	if idx < 0 {
		scratch = make([]int32, n)
	}
	var victims []*node
	var taken map[*node]int
	var recounts, misses int64
	for short > 0 && len(h) > 0 {
		x := h.pop().n
		c, err := t.leafCounts(x, n, idx, scratch, &recounts, &misses)
		if err != nil {
			return nil, 0, err
		}
		if !frees(deficit, c) {
			continue
		}
		victims = append(victims, x)
		short = take(deficit, c, short)
		if p := x.parent; p != t.root && p.planMark != gen && p.lockRef == 0 {
			if taken == nil {
				taken = map[*node]int{}
			}
			if taken[p]++; taken[p] == len(p.children) {
				h.push(t.victimOf(p))
			}
		}
	}
	t.recounts += recounts
	t.metaMisses += misses
	return victims, short, nil
}

// frees reports Σ_r min(deficit[r], c[r]) > 0: some short lane gets a page.
func frees(deficit []int, c []int32) bool {
	for r, d := range deficit {
		if d > 0 && c[r] > 0 {
			return true
		}
	}
	return false
}

// take lowers each short lane by the leaf's pages there (floored at 0)
// and returns the number of lanes still short.
func take(deficit []int, c []int32, short int) int {
	for r, d := range deficit {
		if d <= 0 {
			continue
		}
		if d -= int(c[r]); d <= 0 {
			d = 0
			short--
		}
		deficit[r] = d
	}
	return short
}

// checkMeta checks x's metadata against its key and parent: StartPage is
// the parent's end page, NumPages is len(key)/page_size, and with CP on the
// owners and every size's counts equal a fresh population (O1–O3).
func (t *RadixTree) checkMeta(x *node) error {
	m := x.meta
	start := 0
	if p := x.parent; p != nil {
		start = p.meta.StartPage + p.meta.NumPages
	}
	if m.StartPage != start || m.NumPages != x.key.n/t.ps {
		return fmt.Errorf("node %d: metadata start %d pages %d, want %d and %d", x.id, m.StartPage, m.NumPages, start, x.key.n/t.ps)
	}
	want := t.newMeta(start, m.NumPages)
	if !slices.Equal(m.PageOwners, want.PageOwners) || len(m.OwnerCounts) != len(want.OwnerCounts) {
		return fmt.Errorf("node %d: page owners %v, want %v", x.id, m.PageOwners, want.PageOwners)
	}
	for i, sc := range want.OwnerCounts {
		if got := m.OwnerCounts[i]; got.CPSize != sc.CPSize || !slices.Equal(got.Counts, sc.Counts) {
			return fmt.Errorf("node %d: owner counts %+v, want %+v", x.id, got, sc)
		}
	}
	return nil
}

// HiCacheOwnerCounts is the fast twin of hicache.owner_counts (docs/spec/radix-acks.md §4.3):
// the owners by a stepping rank counter, the metadata counts as a node's
// population computes them (the closed form), the enumeration as the
// owners' histogram, and the closed form.
func HiCacheOwnerCounts(lim spec.Limits, in spec.HiCacheOwnerCountsInput) (spec.HiCacheOwnerCountsOutput, error) {
	if err := ref.ValidateHiCacheOwnerCounts(lim, in); err != nil {
		return spec.HiCacheOwnerCountsOutput{}, err
	}
	n := in.CPSize
	s, pages := in.TokenDepth/in.PageSize, in.Tokens/in.PageSize
	counts := make([]int32, 3*n)
	out := spec.HiCacheOwnerCountsOutput{StartPage: s, NumPages: pages, PageOwners: pageOwners(ref.RoundRobin{}, s, pages, n),
		Enumerated: counts[:n:n], Metadata: counts[n : 2*n : 2*n], ClosedForm: counts[2*n:]}
	for _, o := range out.PageOwners {
		out.Enumerated[o]++
	}
	closedForm(s, pages, n, out.Metadata)
	closedForm(s, pages, n, out.ClosedForm)
	return out, nil
}
