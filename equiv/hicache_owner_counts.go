package equiv

import (
	"fmt"
	"math"
	"slices"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// HiCacheOwnerCounts is the differential spec of hicache.owner_counts
// (docs/spec/radix-acks.md §4.1–§4.3): O1 and O2 on one node, with the §4.2 worked
// examples and the zero-owned boundary.
func HiCacheOwnerCounts() *Spec[spec.HiCacheOwnerCountsInput, spec.HiCacheOwnerCountsOutput] {
	return &Spec[spec.HiCacheOwnerCountsInput, spec.HiCacheOwnerCountsOutput]{
		Op:          catalog.HiCacheOwnerCounts(),
		Valid:       rapid.Custom(ownerCountsValid),
		Invalid:     rapid.Custom(ownerCountsInvalid),
		Boundary:    ownerCountsBoundary(),
		Regressions: ownerCountsRegressions(),
		Props: []Prop[spec.HiCacheOwnerCountsInput, spec.HiCacheOwnerCountsOutput]{
			{"three-computations-agree", ownerThreeAgree},
			{"counts-sum-to-pages-and-histogram-owners", ownerCountsHistogram},
			{"owners-round-robin-by-absolute-page", ownerRoundRobin},
			{"zero-owned-iff-outside-short-window", ownerZeroOwned},
		},
	}
}

func ownerCountsValid(t *rapid.T) spec.HiCacheOwnerCountsInput {
	ps := rapid.SampledFrom([]int{1, 1, 2, 4, 64}).Draw(t, "page_size")
	return spec.HiCacheOwnerCountsInput{
		CPSize:     rapid.SampledFrom([]int{1, 2, 3, 4, 5, 8, 16, spec.MaxCPSize}).Draw(t, "cp_size"),
		PageSize:   ps,
		TokenDepth: rapid.IntRange(0, 40).Draw(t, "start_page") * ps,
		Tokens:     rapid.IntRange(0, 40).Draw(t, "num_pages") * ps,
	}
}

func ownerCountsInvalid(t *rapid.T) Bad[spec.HiCacheOwnerCountsInput] {
	in := ownerCountsValid(t)
	switch rapid.IntRange(0, 6).Draw(t, "violation") {
	case 0:
		in.PageSize = rapid.IntRange(-2, 0).Draw(t, "bad_page_size")
		return Bad[spec.HiCacheOwnerCountsInput]{in, spec.ErrInvalidPageSize}
	case 1:
		in.CPSize = rapid.SampledFrom([]int{-1, 0, spec.MaxCPSize + 1}).Draw(t, "bad_cp_size")
		return Bad[spec.HiCacheOwnerCountsInput]{in, spec.ErrBadCPSize}
	case 2:
		in.TokenDepth = -in.PageSize * rapid.IntRange(1, 3).Draw(t, "neg")
		return Bad[spec.HiCacheOwnerCountsInput]{in, spec.ErrNegative}
	case 3:
		in.Tokens = -in.PageSize * rapid.IntRange(1, 3).Draw(t, "neg")
		return Bad[spec.HiCacheOwnerCountsInput]{in, spec.ErrNegative}
	case 4:
		in.PageSize = rapid.SampledFrom([]int{2, 4, 64}).Draw(t, "ps")
		in.Tokens = in.PageSize*rapid.IntRange(0, 3).Draw(t, "pages") + rapid.IntRange(1, in.PageSize-1).Draw(t, "tail")
		return Bad[spec.HiCacheOwnerCountsInput]{in, spec.ErrUnalignedKey}
	case 5:
		in.PageSize, in.TokenDepth, in.Tokens = 1, math.MaxInt-rapid.IntRange(0, 5).Draw(t, "gap"), 8
		return Bad[spec.HiCacheOwnerCountsInput]{in, spec.ErrOverflow}
	default:
		in.PageSize, in.Tokens = 1, 1<<40
		return Bad[spec.HiCacheOwnerCountsInput]{in, spec.ErrTooLarge}
	}
}

func oc(n, ps, s, pages int) spec.HiCacheOwnerCountsInput {
	return spec.HiCacheOwnerCountsInput{CPSize: n, PageSize: ps, TokenDepth: s * ps, Tokens: pages * ps}
}

func ownerCountsBoundary() []Case[spec.HiCacheOwnerCountsInput] {
	return []Case[spec.HiCacheOwnerCountsInput]{
		{"split-example-whole-node", oc(2, 1, 0, 4)},            // §4.2: [2,2]
		{"split-example-prefix", oc(2, 1, 0, 1)},                // [1,0]
		{"split-example-suffix", oc(2, 1, 1, 3)},                // [1,2]
		{"zero-owned-ranks-3-to-7", oc(8, 1, 0, 3)},             // §4.2: ranks 3..7 own nothing
		{"window-wraps-past-last-rank", oc(8, 64, 6, 5)},        // owners 6,7,0,1,2
		{"empty-node", oc(4, 16, 9, 0)},                         // all zero
		{"one-rank-owns-everything", oc(1, 2, 5, 7)},            // [7]
		{"pages-equal-cp-size", oc(4, 1, 7, 4)},                 // [1,1,1,1]
		{"two-rounds-and-one", oc(3, 4, 2, 7)},                  // [2,2,3]
		{"largest-cp-size", oc(spec.MaxCPSize, 1, 1000, 30)},    // wraps at 1024
		{"far-start-page", oc(8, 64, math.MaxInt/128/64*64, 9)}, // no overflow in q
	}
}

// ownerCountsRegressions holds the §4.2 worked example: N = 4, s = 3,
// n = 6, owners 3,0,1,2,3,0, counts [2,1,1,2]. Go's % keeps the sign, so a
// closed form written with (r − s) % N instead of a non-negative mod gives
// [2,2,2,2] here.
func ownerCountsRegressions() []Case[spec.HiCacheOwnerCountsInput] {
	return []Case[spec.HiCacheOwnerCountsInput]{{"owner-closed-form-go-mod", oc(4, 1, 3, 6)}}
}

// ownerThreeAgree is O1: enumerated, metadata and closed form are equal.
func ownerThreeAgree(_ spec.Limits, _ spec.HiCacheOwnerCountsInput, out spec.HiCacheOwnerCountsOutput) error {
	if !slices.Equal(out.Enumerated, out.Metadata) || !slices.Equal(out.Enumerated, out.ClosedForm) {
		return fmt.Errorf("O1: enumerated %v, metadata %v, closed form %v", out.Enumerated, out.Metadata, out.ClosedForm)
	}
	return nil
}

// ownerCountsHistogram is O2: the counts sum to num_pages == tokens /
// page_size and equal the histogram of the page owners.
func ownerCountsHistogram(_ spec.Limits, in spec.HiCacheOwnerCountsInput, out spec.HiCacheOwnerCountsOutput) error {
	hist := make([]int32, in.CPSize)
	for _, o := range out.PageOwners {
		if int(o) >= in.CPSize {
			return fmt.Errorf("O2: owner %d outside [0, %d)", o, in.CPSize)
		}
		hist[o]++
	}
	sum := 0
	for _, c := range out.Metadata {
		sum += int(c)
	}
	if out.NumPages != in.Tokens/in.PageSize || len(out.PageOwners) != out.NumPages || sum != out.NumPages || !slices.Equal(hist, out.Metadata) {
		return fmt.Errorf("O2: %d pages, %d owners, counts %v summing to %d, owners histogram %v", out.NumPages, len(out.PageOwners), out.Metadata, sum, hist)
	}
	return nil
}

// ownerRoundRobin is §4.1 and O3: the start page is the token depth over
// the page size and page j is owned by (start + j) mod N.
func ownerRoundRobin(_ spec.Limits, in spec.HiCacheOwnerCountsInput, out spec.HiCacheOwnerCountsOutput) error {
	if out.StartPage != in.TokenDepth/in.PageSize {
		return fmt.Errorf("O3: start page %d for token depth %d", out.StartPage, in.TokenDepth)
	}
	for j, o := range out.PageOwners {
		if int(o) != (out.StartPage+j)%in.CPSize {
			return fmt.Errorf("§4.1: page %d (position %d) owned by %d", j, out.StartPage+j, o)
		}
	}
	return nil
}

// ownerZeroOwned is §4.2's zero-owned rule: a rank owns nothing iff the
// node has fewer pages than ranks and the rank is outside its window.
func ownerZeroOwned(_ spec.Limits, in spec.HiCacheOwnerCountsInput, out spec.HiCacheOwnerCountsOutput) error {
	n := in.CPSize
	for r, c := range out.ClosedForm {
		inWindow := ((r-out.StartPage)%n+n)%n < out.NumPages
		if (c == 0) != (out.NumPages < n && !inWindow) {
			return fmt.Errorf("§4.2: rank %d has %d pages of a %d-page node at %d", r, c, out.NumPages, out.StartPage)
		}
	}
	return nil
}

// ownerStepCounts is a node's owner counts for n ranks computed from the
// tree state alone: its token depth (summed up the parents) and key length
// through the closed form — independent of any metadata a tree reports.
func ownerStepCounts(st spec.TreeState, id spec.NodeID, n int) ([]int32, bool) {
	byID := map[spec.NodeID]spec.NodeState{}
	for _, x := range st.Nodes {
		byID[x.ID] = x
	}
	x, ok := byID[id]
	if !ok {
		return nil, false
	}
	d := 0
	for p, ok := byID[x.Parent]; ok; p, ok = byID[p.Parent] {
		d += len(p.Key)
	}
	ps := st.Config.PageSize
	c := make([]int32, n)
	ref.ClosedFormCounts(d/ps, len(x.Key)/ps, n, c)
	return c, true
}

// radixOwnerMetadata is O1–O3 on the final tree (ref.CheckOwnerState).
func radixOwnerMetadata(_ spec.Limits, _ spec.RadixScriptInput, out spec.RadixScriptOutput) error {
	return ref.CheckOwnerState(out.Tree)
}

// radixOwnerPlans checks every accepted plan_evict step against the tree
// before it (replayed on a reference tree): E2–E5 of docs/spec/radix-acks.md §4.4,
// the deficit and remaining arithmetic, the scan rule (each victim helps a
// short lane and is a leaf once the earlier victims are gone), and the
// execution policy (evict exactly the victims when admitted and not a dry
// run, else nothing; count each executed refusal).
func radixOwnerPlans(_ spec.Limits, in spec.RadixScriptInput, out spec.RadixScriptOutput) error {
	var tree spec.RadixTree
	var buf []spec.Unit
	refusals := int64(0)
	for i, s := range in.Steps {
		if s.Op == spec.StepCreate {
			tree, _ = ref.NewRadixTree(stepConfig(s))
			refusals = 0
			continue
		}
		if s.Op == spec.StepPlanEvict && out.Trace[i].Error == nil {
			p := out.Trace[i].Plan
			if err := checkPlan(tree.State(), s, *p); err != nil {
				return fmt.Errorf("step %d: %w", i, err)
			}
			if !p.Admitted && !s.DryRun {
				refusals++
			}
		}
		_, buf = applyStep(tree, s, buf)
	}
	if out.Tree.OwnerCountRecomputations != 0 {
		return fmt.Errorf("E5: %d owner counts recomputed while planning", out.Tree.OwnerCountRecomputations)
	}
	if out.Tree.LoadRefusals != refusals {
		return fmt.Errorf("§4.4: %d refusals counted, the trace has %d", out.Tree.LoadRefusals, refusals)
	}
	return nil
}

// checkPlan checks one plan against the state st it was made on.
func checkPlan(st spec.TreeState, s spec.RadixStep, p spec.OwnerPlan) error {
	n := p.CPSize
	if want := ref.PlanDeficit(s.Need, s.Free); !slices.Equal(p.Deficit, want) {
		return fmt.Errorf("§4.4 step 1: deficit %v, want %v", p.Deficit, want)
	}
	d := slices.Clone(p.Deficit)
	sum := make([]int, n)
	for k, v := range p.Victims {
		c, ok := ownerStepCounts(st, v, n)
		if !ok {
			return fmt.Errorf("victim %d is not in the tree", v)
		}
		if err := checkVictim(st, s.Node, p.Victims[:k], v); err != nil {
			return err
		}
		helps := false
		for r := range d {
			helps = helps || d[r] > 0 && c[r] > 0
			d[r] = max(0, d[r]-int(c[r]))
			sum[r] += int(c[r])
		}
		if !helps {
			return fmt.Errorf("§4.4 step 3: victim %d frees nothing a short lane needs", v)
		}
		if k == len(p.Victims)-1 && !slices.ContainsFunc(lanes(n), func(r int) bool { return sum[r]-int(c[r]) < p.Deficit[r] }) {
			return fmt.Errorf("E4: the plan without its last victim %d already covers %v", v, p.Deficit)
		}
	}
	if !slices.Equal(d, p.Remaining) {
		return fmt.Errorf("§4.4: remaining %v, the victims leave %v", p.Remaining, d)
	}
	admitted := !slices.ContainsFunc(d, func(x int) bool { return x > 0 })
	if p.Admitted != admitted || admitted && slices.ContainsFunc(lanes(n), func(r int) bool { return sum[r] < p.Deficit[r] }) {
		return fmt.Errorf("E3: admitted %v with victims freeing %v for deficit %v", p.Admitted, sum, p.Deficit)
	}
	return checkExecution(st, s, p)
}

func lanes(n int) []int {
	r := make([]int, n)
	for i := range r {
		r[i] = i
	}
	return r
}

// checkVictim is E2 and the leaf rule: v is unlocked, off the load path of
// locked, and each child of v is an earlier victim.
func checkVictim(st spec.TreeState, locked spec.NodeID, earlier []spec.NodeID, v spec.NodeID) error {
	byID := map[spec.NodeID]spec.NodeState{}
	for _, x := range st.Nodes {
		byID[x.ID] = x
		if x.Parent == v && !slices.Contains(earlier, x.ID) {
			return fmt.Errorf("victim %d still has child %d", v, x.ID)
		}
	}
	if v == 0 || byID[v].LockRef != 0 || slices.Contains(earlier, v) {
		return fmt.Errorf("E2: victim %d is the root, locked (lock_ref %d) or repeated", v, byID[v].LockRef)
	}
	for y, ok := byID[locked]; ok; y, ok = byID[y.Parent] {
		if y.ID == v {
			return fmt.Errorf("E2: victim %d is on the load path of node %d", v, locked)
		}
	}
	return nil
}

// checkExecution is the execution policy: an admitted plan that is not a
// dry run frees exactly its victims' slots, in order; anything else frees
// nothing.
func checkExecution(st spec.TreeState, s spec.RadixStep, p spec.OwnerPlan) error {
	if !p.Admitted || s.DryRun {
		if p.Evicted != 0 || len(p.Freed) != 0 {
			return fmt.Errorf("§4.4: a refused or dry-run plan evicted %d units", p.Evicted)
		}
		return nil
	}
	if len(p.Freed) != len(p.Victims) {
		return fmt.Errorf("§4.4: %d slot lists for %d victims", len(p.Freed), len(p.Victims))
	}
	total := 0
	for k, v := range p.Victims {
		for _, x := range st.Nodes {
			if x.ID == v && !slices.Equal(x.Value, p.Freed[k]) {
				return fmt.Errorf("§4.4: victim %d freed %v, it held %v", v, p.Freed[k], x.Value)
			}
		}
		total += len(p.Freed[k])
	}
	if total != p.Evicted {
		return fmt.Errorf("§4.4: evicted %d units, the freed lists hold %d", p.Evicted, total)
	}
	return nil
}
