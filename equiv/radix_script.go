package equiv

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// RadixScript is the differential spec of radix.script (docs/spec/radix-acks.md §1).
// The step-by-step state machine over the trees themselves is
// TestRadixTwinsAgreeAfterEveryStep; this spec holds the script-level
// generators, tables and the §1.9 properties read off a trace.
func RadixScript() *Spec[spec.RadixScriptInput, spec.RadixScriptOutput] {
	valid, invalid := radixGenerators(Coverage{})
	return &Spec[spec.RadixScriptInput, spec.RadixScriptOutput]{
		Op:          catalog.RadixScript(),
		Valid:       valid,
		Invalid:     invalid,
		Vocabulary:  radixVocabulary(),
		Boundary:    append(radixBoundary(), radixEvictOrderCases()...),
		Regressions: radixRegressions(),
		Rejects:     radixRejects,
		Script:      stepsOf(func(in *spec.RadixScriptInput) *[]spec.RadixStep { return &in.Steps }),
		Props: []Prop[spec.RadixScriptInput, spec.RadixScriptOutput]{
			{"tree-invariants", radixTreeInvariants},
			{"model-equivalence", radixModelEquivalence},
			{"match-idempotent", radixMatchIdempotent},
			{"match-bounded", radixMatchBounded},
			{"size-accounting", radixSizeAccounting},
			{"hashed-score-is-exact", radixHashedScoreIsExact},
			{"owner-metadata", radixOwnerMetadata},
			{"owner-lane-plans", radixOwnerPlans},
			{"state-round-trips-through-json", radixStateRoundTrips},
		},
	}
}

// radixHashedScore is radix.script's option for scores by the prefix-hash
// chain (docs/spec/radix-acks.md §1.14): a score step without exact.
const radixHashedScore = "hashed_score"

// radixVocabulary is what an adapter may declare part of: the step kinds
// (create required: it must come first) and hashed scores, which need the
// §1.14 XXH3 prefix-hash chain.
func radixVocabulary() *Vocabulary[spec.RadixScriptInput] {
	kinds := []string{spec.StepCreate, spec.StepInsert, spec.StepMatch, spec.StepScore, spec.StepLock, spec.StepUnlock, spec.StepEvict, spec.StepPlanEvict}
	return &Vocabulary[spec.RadixScriptInput]{
		Steps:    kinds,
		Required: []string{spec.StepCreate},
		Options: []Option{{Name: radixHashedScore,
			About:     "score steps without exact (PrefixLenHashed over the XXH3 prefix-hash chain, §1.14), and the chain itself in the tree state; off, every score is exact and the state's prefix_hashes are not compared",
			Unchecked: []string{"tree.nodes[].prefix_hashes"}}},
		Uses: func(in spec.RadixScriptInput) (steps, options []string) {
			hashed := false
			steps = stepKinds(kinds, func(yield func(string) bool) {
				for _, st := range in.Steps {
					hashed = hashed || st.Op == spec.StepScore && !st.Exact
					if !yield(st.Op) {
						return
					}
				}
			})
			if hashed {
				options = []string{radixHashedScore}
			}
			return steps, options
		},
		Generate: radixGenerators,
	}
}

// radixGenerators are radix.script's generators under c.
func radixGenerators(c Coverage) (*rapid.Generator[spec.RadixScriptInput], *rapid.Generator[Bad[spec.RadixScriptInput]]) {
	return rapid.Custom(func(t *rapid.T) spec.RadixScriptInput { return radixSteps(t, 24, c) }),
		rapid.Custom(func(t *rapid.T) Bad[spec.RadixScriptInput] { return radixInvalid(t, c) })
}

// RadixSteps draws a script of up to maxSteps steps shaped like a cache's
// life: keys from a small alphabet that share prefixes, extending earlier
// keys; locks and unlocks of live nodes (tracked on a reference tree while
// drawing); evictions of part of the tree; occasional bad steps the tree
// must reject without changing (unaligned keys, wrong value lengths,
// foreign nodes, underflows, negative counts, bad plans). Most trees keep
// CP owner metadata (docs/spec/radix-acks.md §4.2) and some steps plan owner-lane
// evictions (§4.4), sometimes for a CP size the tree has no metadata for.
func RadixSteps(t *rapid.T, maxSteps int) spec.RadixScriptInput {
	return radixSteps(t, maxSteps, Coverage{})
}

// radixSteps is RadixSteps inside c: a step of a kind c leaves out is
// drawn and dropped (neither kept nor run on the generator's tree), and a
// score is made exact when c leaves hashed scores out.
func radixSteps(t *rapid.T, maxSteps int, c Coverage) spec.RadixScriptInput {
	create := spec.RadixStep{
		Op:       spec.StepCreate,
		PageSize: rapid.SampledFrom([]int{1, 1, 2, 4, 64}).Draw(t, "page_size"),
		Eagle:    rapid.IntRange(0, 4).Draw(t, "eagle") == 0,
		Disable:  rapid.IntRange(0, 19).Draw(t, "disable") == 0,
		Policy:   rapid.SampledFrom([]spec.EvictPolicy{"", "", spec.PolicyLRU, spec.PolicyLFU, spec.PolicyFIFO, spec.PolicyMRU, spec.PolicyFILO, spec.PolicyPriority}).Draw(t, "policy"),
		CPSize:   rapid.SampledFrom([]int{0, 0, 1, 2, 3, 4, 8}).Draw(t, "cp_size"),
	}
	if draft := rapid.SampledFrom([]int{0, 0, 0, 2, 5}).Draw(t, "cp_draft_size"); create.CPSize > 0 && draft != create.CPSize {
		create.CPDraftSize = draft
	}
	g := &scriptGen{t: t, steps: []spec.RadixStep{create}, cover: c}
	g.reset(create)
	n := rapid.IntRange(0, maxSteps).Draw(t, "steps")
	for range n {
		g.step()
	}
	return spec.RadixScriptInput{Steps: g.steps}
}

// scriptGen draws steps while a reference tree follows them, so locks
// target live nodes and evictions ask for sizes the tree holds.
type scriptGen struct {
	t      *rapid.T
	steps  []spec.RadixStep
	tree   spec.RadixTree
	keys   [][]int64
	nextVS spec.SlotIdx
	buf    []spec.Unit
	cover  Coverage // the part of radix.script the steps stay inside
}

func (g *scriptGen) reset(create spec.RadixStep) {
	tree, err := ref.NewRadixTree(stepConfig(create))
	if err != nil {
		panic(err)
	}
	g.tree, g.keys = tree, nil
}

// step draws the next step, appends it and runs it on the generator's
// tree; it returns the step and its canonical result (nil for a create,
// which replaces the tree).
func (g *scriptGen) step() (spec.RadixStep, []byte) {
	t := g.t
	var s spec.RadixStep
	switch op := rapid.IntRange(0, 111).Draw(t, "op"); {
	case op < 36:
		s = spec.RadixStep{Op: spec.StepInsert, Key: g.key(), Priority: rapid.IntRange(-1, 2).Draw(t, "priority")}
		s.Extra, s.Salt = g.namespace()
		if rapid.Bool().Draw(t, "explicit_value") {
			s.Value = g.values(len(s.Key))
		}
		g.keys = append(g.keys, s.Key)
	case op < 66:
		s = spec.RadixStep{Op: spec.StepMatch, Key: g.key()}
		s.Extra, s.Salt = g.namespace()
		if last := g.steps[len(g.steps)-1]; last.Op == spec.StepMatch && rapid.IntRange(0, 3).Draw(t, "repeat") == 0 {
			s = last
		} else if rapid.IntRange(0, 2).Draw(t, "score") == 0 {
			s.Op, s.Exact = spec.StepScore, rapid.Bool().Draw(t, "exact")
			s.Exact = s.Exact || !g.cover.Option(radixHashedScore)
		}
	case op < 76:
		s = spec.RadixStep{Op: spec.StepLock, Node: g.node(false)}
	case op < 86:
		s = spec.RadixStep{Op: spec.StepUnlock, Node: g.node(true)}
	case op < 97:
		hi := g.tree.EvictableSize() + 2
		s = spec.RadixStep{Op: spec.StepEvict, NumTokens: rapid.IntRange(-1, hi).Draw(t, "num_tokens")}
	case op < 100:
		s = g.steps[0]
		s.Disable = false
		g.reset(s)
		g.steps = append(g.steps, s)
		return s, nil
	default:
		s = g.plan()
	}
	if !g.cover.Step(s.Op) {
		return s, nil // a kind the declaration leaves out: dropped
	}
	g.steps = append(g.steps, s)
	return s, g.apply(s)
}

// apply runs s on the generator's tree (errors are expected: bad steps are
// drawn on purpose and leave the tree unchanged) and returns the canonical
// result.
func (g *scriptGen) apply(s spec.RadixStep) []byte {
	var out []byte
	out, g.buf = applyStep(g.tree, s, g.buf)
	return out
}

// applyStep runs s on tree with its key decoded into buf (reused, as a
// caller reuses request buffers) and returns the canonical result and the
// buffer. Op "prefix_len" runs the read-only PrefixLen.
func applyStep(tree spec.RadixTree, s spec.RadixStep, buf []spec.Unit) ([]byte, []spec.Unit) {
	buf = buf[:0]
	for _, u := range s.Key {
		buf = append(buf, spec.Unit(u))
	}
	k := spec.RadixKey{Units: buf, Extra: spec.ExtraKeyOf(s.Extra, s.Salt)}
	var out any
	var err error
	switch s.Op {
	case spec.StepInsert:
		out, err = tree.Insert(k, s.Value, s.Priority)
	case spec.StepMatch:
		out, err = tree.MatchPrefix(k)
	case spec.StepLock:
		out, err = tree.IncLockRef(s.Node)
	case spec.StepUnlock:
		out, err = tree.DecLockRef(s.Node)
	case spec.StepEvict:
		out, err = tree.Evict(s.NumTokens)
	case spec.StepPlanEvict:
		out, err = tree.EvictOwnerLanes(ref.PlanRequestOf(s))
	case "prefix_len":
		out, err = tree.PrefixLen(k)
	case spec.StepScore:
		out, err = ref.ScoreKey(tree, k, s.Exact)
	}
	return catalog.Canonical(out, err), buf
}

// plan draws a plan_evict step: usually for the tree's CP size, sometimes
// for another (a metadata miss), rarely for a bad one; per-lane needs and
// free pages of a few pages each, rarely a list of the wrong length or a
// negative entry; the load's node is a live node, the root or an odd id.
func (g *scriptGen) plan() spec.RadixStep {
	t := g.t
	s := spec.RadixStep{Op: spec.StepPlanEvict, DryRun: rapid.IntRange(0, 3).Draw(t, "dry_run") == 0}
	switch rapid.IntRange(0, 19).Draw(t, "plan_cp") {
	case 0, 1:
		s.CPSize = rapid.IntRange(1, 5).Draw(t, "other_cp_size")
	case 2:
		s.CPSize = rapid.SampledFrom([]int{-1, spec.MaxCPSize + 1}).Draw(t, "bad_cp_size")
	case 3, 4:
		s.CPSize = g.steps[0].CPSize
	case 5: // a tree without CP has no size to default to
	default:
		if g.steps[0].CPSize == 0 {
			s.CPSize = rapid.IntRange(1, 4).Draw(t, "explicit_cp_size")
		}
	}
	n := s.CPSize
	if n == 0 {
		n = g.steps[0].CPSize
	}
	n = max(1, min(n, 8))
	s.Need, s.Free = make([]int, n), make([]int, n)
	for r := range n {
		s.Need[r] = rapid.IntRange(0, 5).Draw(t, "need")
		s.Free[r] = rapid.IntRange(0, 2).Draw(t, "free")
	}
	switch rapid.IntRange(0, 19).Draw(t, "bad_lanes") {
	case 0:
		s.Free = append(s.Free, 0)
	case 1:
		s.Need[rapid.IntRange(0, n-1).Draw(t, "neg_lane")] = -1
	}
	if len(g.tree.State().Nodes) > 1 && rapid.IntRange(0, 3).Draw(t, "load_path") > 0 {
		s.Node = g.node(false)
	}
	return s
}

// key draws a key of whole pages (plus the one extra token an Eagle tree's
// bigrams need), sometimes extending an earlier key, sometimes unaligned.
func (g *scriptGen) key() []int64 {
	t, ps := g.t, g.steps[0].PageSize
	var k []int64
	if len(g.keys) > 0 && rapid.Bool().Draw(t, "extend") {
		prev := rapid.SampledFrom(g.keys).Draw(t, "prev")
		k = append(k, prev[:rapid.IntRange(0, len(prev)).Draw(t, "keep")/ps*ps]...)
	}
	pages := rapid.IntRange(0, 3).Draw(t, "pages")
	for range pages * ps {
		k = append(k, rapid.Int64Range(0, 3).Draw(t, "token"))
	}
	if g.steps[0].Eagle && len(k) > 0 {
		k = append(k, rapid.Int64Range(0, 3).Draw(t, "token"))
	}
	if ps > 1 && rapid.IntRange(0, 9).Draw(t, "unaligned") == 0 {
		k = append(k, rapid.Int64Range(0, 3).Draw(t, "tail"))
	}
	return k
}

func (g *scriptGen) namespace() (extra, salt *string) {
	choices := []*string{nil, nil, nil, new(""), new("A")}
	return rapid.SampledFrom(choices).Draw(g.t, "extra"), rapid.SampledFrom(choices[1:]).Draw(g.t, "salt")
}

// values draws n fresh slots, or rarely a list of the wrong length.
func (g *scriptGen) values(n int) []spec.SlotIdx {
	if rapid.IntRange(0, 19).Draw(g.t, "bad_value_len") == 0 {
		n++
	}
	v := make([]spec.SlotIdx, n)
	for i := range v {
		g.nextVS++
		v[i] = 1000 + g.nextVS
	}
	return v
}

// node draws a live node id (a locked one when unlocking), sometimes the
// root, sometimes an id that is not in the tree.
func (g *scriptGen) node(locked bool) spec.NodeID {
	st := g.tree.State()
	var ids []spec.NodeID
	for _, n := range st.Nodes[1:] {
		if !locked || n.LockRef > 0 {
			ids = append(ids, n.ID)
		}
	}
	if len(ids) == 0 || rapid.IntRange(0, 9).Draw(g.t, "odd_node") == 0 {
		return rapid.Int64Range(-1, st.NextID+1).Draw(g.t, "any_node")
	}
	return rapid.SampledFrom(ids).Draw(g.t, "node")
}

// radixInvalid draws a script inside c and breaks it once; a violation
// that needs a step kind c leaves out (a key with a bad token rides on a
// match, or an insert) becomes an unknown op instead.
func radixInvalid(t *rapid.T, c Coverage) Bad[spec.RadixScriptInput] {
	in := radixSteps(t, 8, c)
	at := rapid.IntRange(0, len(in.Steps)-1).Draw(t, "at")
	violation := rapid.IntRange(0, 5).Draw(t, "violation")
	keyed := c.Allowed([]string{spec.StepMatch, spec.StepInsert})
	if violation == 5 && len(keyed) == 0 {
		violation = 1
	}
	switch violation {
	case 0:
		in.Steps[0].Op = rapid.SampledFrom(append(c.Allowed([]string{spec.StepInsert, spec.StepMatch, spec.StepEvict}), "")).Draw(t, "first_op")
		return Bad[spec.RadixScriptInput]{in, spec.ErrScriptOrder}
	case 1:
		bad := rapid.SampledFrom([]string{"split", "Insert", "reset"}).Draw(t, "bad_op")
		if len(in.Steps) == 1 {
			in.Steps = append(in.Steps, spec.RadixStep{Op: bad})
		} else {
			in.Steps[max(at, 1)].Op = bad
		}
		return Bad[spec.RadixScriptInput]{in, spec.ErrBadEnum}
	case 2:
		in.Steps[0].PageSize = rapid.IntRange(-2, 0).Draw(t, "bad_page_size")
		return Bad[spec.RadixScriptInput]{in, spec.ErrInvalidPageSize}
	case 3:
		in.Steps[0].Policy = spec.EvictPolicy(rapid.SampledFrom([]string{"LRU", "random", "arc"}).Draw(t, "bad_policy"))
		return Bad[spec.RadixScriptInput]{in, spec.ErrBadEnum}
	case 4:
		in.Steps[0].CPSize = rapid.SampledFrom([]int{-1, spec.MaxCPSize + 1}).Draw(t, "bad_cp_size")
		return Bad[spec.RadixScriptInput]{in, spec.ErrBadCPSize}
	default:
		bad := rapid.SampledFrom([]int64{-1, 1 << 32, -1 << 40}).Draw(t, "bad_token")
		key := append(slices.Clone(in.Steps[at].Key), bad)
		in.Steps = slices.Insert(in.Steps, at+1, spec.RadixStep{Op: keyed[0], Key: key})
		return Bad[spec.RadixScriptInput]{in, spec.ErrTokenRange}
	}
}

// stepConfig is a create step's tree configuration.
func stepConfig(s spec.RadixStep) spec.TreeConfig {
	return spec.TreeConfig{PageSize: s.PageSize, Eagle: s.Eagle, Disable: s.Disable, Policy: s.Policy, CPSize: s.CPSize, CPDraftSize: s.CPDraftSize}
}

func steps(s ...spec.RadixStep) spec.RadixScriptInput { return spec.RadixScriptInput{Steps: s} }

func ins(key []int64, value ...spec.SlotIdx) spec.RadixStep {
	if len(value) == 0 {
		value = nil
	}
	return spec.RadixStep{Op: spec.StepInsert, Key: key, Value: value}
}

func mat(key ...int64) spec.RadixStep { return spec.RadixStep{Op: spec.StepMatch, Key: key} }

func create(ps int) spec.RadixStep { return spec.RadixStep{Op: spec.StepCreate, PageSize: ps} }

func iota64(from, n int) []int64 {
	k := make([]int64, n)
	for i := range k {
		k[i] = int64(from + i)
	}
	return k
}

func radixBoundary() []Case[spec.RadixScriptInput] {
	a, b := "A", "B"
	eagle := create(64)
	eagle.Eagle = true
	return []Case[spec.RadixScriptInput]{
		{"worked-example-page-size-1", steps(create(1), // §1.4 and §1.8
			ins([]int64{1, 2, 3}, 10, 11, 12), ins([]int64{1, 2, 4}, 20, 21, 22), ins([]int64{5, 6}, 30, 31),
			mat(1, 2, 4), mat(1, 2, 4, 9), spec.RadixStep{Op: spec.StepLock, Node: 3},
			spec.RadixStep{Op: spec.StepEvict, NumTokens: 1}, spec.RadixStep{Op: spec.StepEvict, NumTokens: 10},
			spec.RadixStep{Op: spec.StepUnlock, Node: 3}, spec.RadixStep{Op: spec.StepEvict, NumTokens: 3})},
		{"worked-example-page-size-2", steps(create(2), // §1.4
			ins([]int64{1, 2, 3, 4}, 10, 11, 12, 13), mat(1, 2, 3, 5, 6),
			ins([]int64{1, 2, 3, 5, 7, 8}, 30, 31, 32, 33, 34, 35), mat(1, 2, 3, 5, 7))},
		{"namespaces-unset-empty-and-named-differ", steps(create(1),
			spec.RadixStep{Op: spec.StepInsert, Key: []int64{1, 2}, Extra: &a},
			spec.RadixStep{Op: spec.StepMatch, Key: []int64{1, 2}, Extra: &b},
			spec.RadixStep{Op: spec.StepMatch, Key: []int64{1, 2}},
			spec.RadixStep{Op: spec.StepMatch, Key: []int64{1, 2}, Extra: new("")},
			spec.RadixStep{Op: spec.StepMatch, Key: []int64{1, 2}, Extra: &a, Salt: new("")},
			spec.RadixStep{Op: spec.StepMatch, Key: []int64{1, 2}, Extra: &a})},
		// §1.1 amendment: upstream turns cache_salt "" into None, so an
		// entry inserted with salt "" answers a match without one ([10,11]).
		{"empty-salt-is-no-salt", steps(create(1),
			spec.RadixStep{Op: spec.StepInsert, Key: []int64{1, 2}, Value: []spec.SlotIdx{10, 11}, Salt: new("")},
			mat(1, 2))},
		{"eagle-130-tokens-cache-128-bigrams", steps(eagle, ins(iota64(0, 129)), mat(iota64(0, 130)...))},
		{"page-64-split-at-second-page", steps(create(64), ins(iota64(0, 192)), mat(append(iota64(0, 64), iota64(500, 64)...)...), mat(iota64(0, 192)...))},
		{"query-shorter-than-a-page", steps(create(4), ins(iota64(0, 4)), mat(0, 1, 2))},
		{"unlock-underflow-and-foreign-nodes", steps(create(1), ins([]int64{1, 2}),
			spec.RadixStep{Op: spec.StepUnlock, Node: 1}, spec.RadixStep{Op: spec.StepLock, Node: 7},
			spec.RadixStep{Op: spec.StepLock}, spec.RadixStep{Op: spec.StepEvict, NumTokens: -1})},
		{"disabled-cache", steps(spec.RadixStep{Op: spec.StepCreate, PageSize: 1, Disable: true}, ins([]int64{1}), mat(1))},
		{"evict-zero-does-nothing", steps(create(1), ins([]int64{1}), spec.RadixStep{Op: spec.StepEvict})},
		{"owner-split-example", steps(cpCreate(1, 2, 0), ins([]int64{1, 2, 3, 4}), mat(1))}, // §4.2: [2,2] → [1,0] + [1,2]
		evictTie(spec.PolicyLRU), evictTie(spec.PolicyLFU), evictTie(spec.PolicyMRU), evictTie(spec.PolicyPriority),
		{"owner-counts-for-target-and-draft-sizes", steps(cpCreate(2, 4, 3), ins(iota64(0, 10)), mat(iota64(0, 6)...), ins(append(iota64(0, 4), 9, 9)))},
		{"owner-plan-worked-example", ownerPlanWorkedExample()},
		{"owner-plan-pushes-a-parent-that-becomes-a-leaf", steps(cpCreate(1, 2, 0),
			ins([]int64{1, 2}), ins([]int64{1, 2, 3, 4}), plan(0, []int{4, 0}, []int{0, 0}))},
		{"owner-plan-skipped-child-keeps-its-parent", steps(cpCreate(1, 2, 0), // leaf [3] (page 2, lane 0) is skipped
			ins([]int64{1, 2}), ins([]int64{1, 2, 3}), ins([]int64{1, 2, 4, 5}), plan(0, []int{0, 2}, []int{0, 0}))},
		{"owner-plan-excludes-an-unlocked-load-path", steps(cpCreate(1, 2, 0),
			ins([]int64{1, 2}), ins([]int64{5, 6}), plan(1, []int{2, 2}, []int{0, 0}))},
		{"owner-plan-without-deficit-admits-nothing", steps(cpCreate(1, 2, 0), ins([]int64{1, 2}), plan(0, []int{1, 3}, []int{1, 5}))},
		{"owner-plan-metadata-miss", steps(cpCreate(1, 2, 0), ins([]int64{1, 2, 3}), ins([]int64{7, 8}),
			spec.RadixStep{Op: spec.StepPlanEvict, CPSize: 3, Need: []int{0, 0, 2}, Free: []int{0, 0, 0}})},
		{"owner-plan-on-a-tree-without-cp", steps(create(2), ins([]int64{1, 2, 3, 4}),
			spec.RadixStep{Op: spec.StepPlanEvict, Need: []int{1}, Free: []int{0}},
			spec.RadixStep{Op: spec.StepPlanEvict, CPSize: 1, Need: []int{1}, Free: []int{0}})},
		{"owner-plan-bad-requests-change-nothing", steps(cpCreate(1, 2, 0), ins([]int64{1, 2}),
			spec.RadixStep{Op: spec.StepPlanEvict, CPSize: -1, Need: []int{1}, Free: []int{0}},
			spec.RadixStep{Op: spec.StepPlanEvict, CPSize: spec.MaxCPSize + 1},
			plan(0, []int{1}, []int{0, 0}), plan(0, []int{1, 0}, []int{0}),
			plan(0, []int{1, -1}, []int{0, 0}), plan(0, []int{1, 0}, []int{-2, 0}),
			plan(9, []int{1, 0}, []int{0, 0}))},
		// §1.7 amendment: node 1 is locked only through its child (lock_ref 1,
		// no lock of its own), so unlocking it is ErrLockUnderflow and changes
		// nothing; the child's own unlock then succeeds.
		{"unlock-of-a-node-locked-only-by-its-child", steps(create(1), ins([]int64{1, 2}), ins([]int64{1, 2, 3, 4}),
			spec.RadixStep{Op: spec.StepLock, Node: 2}, spec.RadixStep{Op: spec.StepUnlock, Node: 1},
			spec.RadixStep{Op: spec.StepUnlock, Node: 2})},
		// §1.10: an insert whose value length differs from its key
		// (ErrValueLength) or whose key is not whole pages (ErrUnalignedKey)
		// changes nothing; in Eagle mode the value is checked against the
		// tokens and the alignment against the bigrams (4 tokens: 3 bigrams).
		{"insert-rejections-change-nothing", steps(create(2), ins([]int64{1, 2}, 10), ins([]int64{1, 2, 3}),
			spec.RadixStep{Op: spec.StepCreate, PageSize: 2, Eagle: true},
			ins([]int64{1, 2, 3, 4}, 10, 11, 12), ins([]int64{1, 2, 3, 4}), ins([]int64{1, 2, 3, 4, 5}, 10, 11, 12, 13, 14))},
		// §1.4 and §2.1 at a page of more than 64 bigrams, where fast packs
		// each looked-up page into a heap buffer instead of its 64-unit stack
		// one (Tree.scratchFor); 201 tokens are two pages, and the first
		// match splits the node after one.
		// An Eagle match whose second page differs: the pair-view compare
		// finds the difference inside a chunk of 8 bigrams.
		{"eagle-second-page-differs-in-a-pair-chunk", steps(spec.RadixStep{Op: spec.StepCreate, PageSize: 8, Eagle: true},
			ins(iota64(0, 17)), mat(append(iota64(0, 9), 99, 99, 99, 99, 99, 99, 99, 99)...))},
		{"eagle-page-over-64-bigrams", steps(spec.RadixStep{Op: spec.StepCreate, PageSize: 100, Eagle: true},
			ins(iota64(0, 201)), mat(append(iota64(0, 101), 999)...), mat(iota64(0, 201)...))},
		// §1.10 amendment (scripts): a script that cannot run is rejected
		// whole, naming steps[i].field (radixRejects).
		{"script-without-create-first", steps(mat(1))},
		{"script-with-an-unknown-op", steps(create(1), spec.RadixStep{Op: "split"})},
		{"script-with-page-size-zero", steps(create(0))},
		{"script-with-cp-size-past-the-maximum", steps(cpCreate(1, spec.MaxCPSize+1, 0))},
		{"script-with-cp-draft-size-equal-to-cp-size", steps(cpCreate(1, 4, 4))},
		{"script-with-a-33-bit-token", steps(create(1), ins([]int64{1, 1 << 32}))},
	}
}

// radixRejects are the boundary scripts ref must reject whole.
var radixRejects = map[string]*spec.Sentinel{
	"script-without-create-first":                spec.ErrScriptOrder,
	"script-with-an-unknown-op":                  spec.ErrBadEnum,
	"script-with-page-size-zero":                 spec.ErrInvalidPageSize,
	"script-with-cp-size-past-the-maximum":       spec.ErrBadCPSize,
	"script-with-cp-draft-size-equal-to-cp-size": spec.ErrBadCPSize,
	"script-with-a-33-bit-token":                 spec.ErrTokenRange,
}

// evictTie is §1.2 item 3's id tie-break under policy p: the insert that
// splits [1,2,3] at [1,2] stamps the old leaf [3] and the new leaf [4] with
// the same tick (and priority), so the keys of LRU, LFU, MRU and priority
// tie and the lower id goes first; the matches show which leaf one evicted
// token removed. FIFO and FILO cannot tie: an insert creates one leaf, and
// a split keeps the old node's creation tick.
func evictTie(p spec.EvictPolicy) Case[spec.RadixScriptInput] {
	c := create(1)
	c.Policy = p
	return Case[spec.RadixScriptInput]{"evict-tie-breaks-by-id-" + strings.ToLower(string(p)), steps(c,
		ins([]int64{1, 2, 3}, 10, 11, 12), ins([]int64{1, 2, 4}, 20, 21, 22),
		spec.RadixStep{Op: spec.StepEvict, NumTokens: 1}, mat(1, 2, 3), mat(1, 2, 4))}
}

// cpCreate creates a tree with CP owner metadata for cp (and draft) ranks.
func cpCreate(ps, cp, draft int) spec.RadixStep {
	return spec.RadixStep{Op: spec.StepCreate, PageSize: ps, CPSize: cp, CPDraftSize: draft}
}

// plan executes an owner-lane plan for the tree's CP size with the load
// path ending at node.
func plan(node spec.NodeID, need, free []int) spec.RadixStep {
	return spec.RadixStep{Op: spec.StepPlanEvict, Node: node, Need: need, Free: free}
}

// ownerPlanWorkedExample is docs/spec/radix-acks.md §4.4's example at page size 1 and
// N = 2: leaves L3 (node 2, s = 2, n = 1, counts [1,0]), L1 (node 4, s = 4,
// n = 2, [1,1]) and L2 (node 6, s = 4, n = 3, [2,1]) in LRU order, their
// parents locked by other requests. Dry runs give victims [L1] for deficit
// [0,1], [L3, L1, L2] for [3,0], and [L1, L2] with [0,3] remaining (refused)
// for [0,5]; then [0,1] is executed (L1 goes) and [0,5] refused (nothing
// goes, one refusal counted).
func ownerPlanWorkedExample() spec.RadixScriptInput {
	dry := func(need ...int) spec.RadixStep {
		s := plan(0, need, []int{0, 0})
		s.DryRun = true
		return s
	}
	return steps(cpCreate(1, 2, 0),
		ins([]int64{10, 11}), ins([]int64{10, 11, 12}),
		ins([]int64{20, 21, 22, 23}), ins([]int64{20, 21, 22, 23, 24, 25}),
		ins([]int64{30, 31, 32, 33}), ins([]int64{30, 31, 32, 33, 34, 35, 36}),
		spec.RadixStep{Op: spec.StepLock, Node: 1}, spec.RadixStep{Op: spec.StepLock, Node: 3}, spec.RadixStep{Op: spec.StepLock, Node: 5},
		dry(0, 1), dry(3, 0), dry(0, 5),
		plan(0, []int{0, 1}, []int{0, 0}), plan(0, []int{0, 5}, []int{0, 0}))
}

func radixRegressions() []Case[spec.RadixScriptInput] {
	path := []spec.RadixStep{create(1)}
	for i := 1; i <= 4; i++ {
		path = append(path, ins(iota64(0, 4*i)))
	}
	return []Case[spec.RadixScriptInput]{
		// §1.11 B1.a: a full-hit match over a 4-node path of 4 units copies
		// 12+8+4 = 24 units when slices copy, 0 when they are views.
		{"radix-key-slices-copy", steps(append(path, mat(iota64(0, 16)...))...)},
		// §1.11 B1.b: the caller reuses its key buffer (the script decodes
		// every key into one buffer) after inserting a view of it.
		// A sub-page query never reaches the child map, so the rewritten
		// node key shows in the final tree deterministically.
		{"radix-stored-key-views", steps(create(2), ins([]int64{1, 2, 3, 4}, 10, 11, 12, 13), mat(9))},
		// §4.6 B4.a: one scanned leaf; the fixed planner reads its metadata
		// (owner_count_recomputations 0), the historic one recounted it (1).
		{"owner-counts-recounted", steps(cpCreate(1, 2, 0), ins([]int64{1, 2}), plan(0, []int{1, 0}, []int{0, 0}))},
		// §4.6 B4.b: node s = 0, n = 4, N = 2 ([2,2]) split at one page; the
		// load path (the prefix) is locked, so only the suffix ([1,2]) is
		// evictable. Deficit [2,0]: fixed, victims [suffix] leave [1,0] and
		// the load is refused; with the counts kept the suffix claims [2,2].
		{"split-keeps-owner-counts", steps(cpCreate(1, 2, 0), ins([]int64{1, 2, 3, 4}), mat(1),
			spec.RadixStep{Op: spec.StepLock, Node: 2}, plan(2, []int{2, 0}, []int{0, 0}))},
	}
}

func radixTreeInvariants(_ spec.Limits, _ spec.RadixScriptInput, out spec.RadixScriptOutput) error {
	return ref.CheckTreeState(out.Tree)
}

// radixStateRoundTrips: the final tree state decodes from its canonical
// JSON to the same state, so a client reading the output sees the tree the
// twin returned; a node's namespace keeps unset, "" and named apart
// (ExtraKey's JSON methods are inverses, §1.1 amendment).
func radixStateRoundTrips(_ spec.Limits, _ spec.RadixScriptInput, out spec.RadixScriptOutput) error {
	b, err := catalog.Marshal(out.Tree)
	if err != nil {
		return err
	}
	var back spec.TreeState
	if err := json.Unmarshal(b, &back); err != nil {
		return fmt.Errorf("the tree state does not decode: %w", err)
	}
	if diff := cmp.Diff(out.Tree, back); diff != "" {
		return fmt.Errorf("the tree state changes through JSON (-returned +decoded):\n%s", diff)
	}
	return nil
}

// treeUnits converts a step's key to the tree's units (bigrams in Eagle
// mode) and its slots (simulation mode: the tokens), as §1.5 step 1 does.
func treeUnits(cfg spec.RadixStep, s spec.RadixStep) ([]spec.Unit, []spec.SlotIdx) {
	units := make([]spec.Unit, len(s.Key))
	vals := slices.Clone(s.Value)
	for i, u := range s.Key {
		units[i] = spec.Unit(u)
		if s.Value == nil {
			vals = append(vals, u)
		}
	}
	if cfg.Eagle {
		k, _ := ref.ToBigram(spec.RadixKey{Units: units})
		units, vals = k.Units, vals[:len(k.Units)]
	}
	return units, vals
}

// pageModel is §1.9 P1's naive model: each page-aligned prefix (with its
// namespace) maps to that page's slots, set by the first insert.
type pageModel map[string][]spec.SlotIdx

func modelKey(s spec.RadixStep, units []spec.Unit, end int) string {
	return fmt.Sprint(spec.ExtraKeyOf(s.Extra, s.Salt), units[:end])
}

// radixModelEquivalence is §1.9 P1: until the first eviction of a tree
// (after which the naive model no longer knows what is resident), an insert
// returns the leading pages already present times the page size, and a
// match returns the model's slots of the longest run of present pages.
func radixModelEquivalence(_ spec.Limits, in spec.RadixScriptInput, out spec.RadixScriptOutput) error {
	var cfg spec.RadixStep
	var model pageModel
	for i, s := range in.Steps {
		r := out.Trace[i]
		if s.Op == spec.StepCreate {
			cfg, model = s, pageModel{}
			continue
		}
		if model == nil || r.Error != nil {
			continue
		}
		ps := cfg.PageSize
		units, vals := treeUnits(cfg, s)
		present := 0
		for present+ps <= len(units) && model[modelKey(s, units, present+ps)] != nil {
			present += ps
		}
		switch s.Op {
		case spec.StepEvict:
			model = nil
		case spec.StepPlanEvict:
			if len(r.Plan.Victims) > 0 && r.Plan.Admitted && !s.DryRun {
				model = nil
			}
		case spec.StepInsert:
			want := present
			if cfg.Disable {
				want = 0
			}
			if *r.PrefixLen != want {
				return fmt.Errorf("step %d: insert returned %d, the model has %d units present", i, *r.PrefixLen, want)
			}
			for end := ps; end <= len(units) && !cfg.Disable; end += ps {
				if k := modelKey(s, units, end); model[k] == nil {
					model[k] = vals[end-ps : end]
				}
			}
		case spec.StepMatch:
			want := []spec.SlotIdx{}
			for end := ps; end <= present && !cfg.Disable; end += ps {
				want = append(want, model[modelKey(s, units, end)]...)
			}
			if !slices.Equal(want, r.Match.Indices) {
				return fmt.Errorf("step %d: match returned %v, the model has %v", i, r.Match.Indices, want)
			}
		}
	}
	return nil
}

// radixMatchIdempotent is §1.9 P3: two consecutive identical matches
// return identical slots (only the first may split).
func radixMatchIdempotent(_ spec.Limits, in spec.RadixScriptInput, out spec.RadixScriptOutput) error {
	for i := 1; i < len(in.Steps); i++ {
		a, b := in.Steps[i-1], in.Steps[i]
		if a.Op != spec.StepMatch || b.Op != spec.StepMatch || !slices.Equal(a.Key, b.Key) ||
			spec.ExtraKeyOf(a.Extra, a.Salt) != spec.ExtraKeyOf(b.Extra, b.Salt) || out.Trace[i].Error != nil {
			continue
		}
		if !slices.Equal(out.Trace[i-1].Match.Indices, out.Trace[i].Match.Indices) {
			return fmt.Errorf("steps %d and %d: the same match returned %v then %v", i-1, i, out.Trace[i-1].Match.Indices, out.Trace[i].Match.Indices)
		}
	}
	return nil
}

// radixMatchBounded is §1.9 P4: a match returns at most the query's whole
// pages (counted in the tree's units).
func radixMatchBounded(_ spec.Limits, in spec.RadixScriptInput, out spec.RadixScriptOutput) error {
	var cfg spec.RadixStep
	for i, s := range in.Steps {
		if s.Op == spec.StepCreate {
			cfg = s
		}
		if s.Op != spec.StepMatch || out.Trace[i].Error != nil {
			continue
		}
		units, _ := treeUnits(cfg, s)
		if n := len(out.Trace[i].Match.Indices); n > len(units)/cfg.PageSize*cfg.PageSize || n%cfg.PageSize != 0 {
			return fmt.Errorf("step %d: match of %d units at page size %d returned %d slots", i, len(units), cfg.PageSize, n)
		}
	}
	return nil
}

// radixHashedScoreIsExact checks §1.14 on generated scripts, where no two
// prefixes share a 64-bit hash: every hashed score equals the exact score
// the reference gives for the same script with exact set on every score.
func radixHashedScoreIsExact(lim spec.Limits, in spec.RadixScriptInput, out spec.RadixScriptOutput) error {
	exact := spec.RadixScriptInput{Steps: slices.Clone(in.Steps)}
	for i := range exact.Steps {
		exact.Steps[i].Exact = exact.Steps[i].Op == spec.StepScore || exact.Steps[i].Exact
	}
	want, err := ref.RadixScript(lim, exact)
	if err != nil {
		return fmt.Errorf("the exact script was rejected: %w", err)
	}
	for i, s := range in.Steps {
		if s.Op == spec.StepScore && !s.Exact && !reflect.DeepEqual(out.Trace[i], want.Trace[i]) {
			return fmt.Errorf("step %d: hashed score %+v, exact %+v", i, out.Trace[i], want.Trace[i])
		}
	}
	return nil
}

// radixSizeAccounting checks §1.7 and §1.8 on the trace: a lock moves
// exactly -delta units from evictable to protected and an unlock moves delta
// back; an eviction frees at least min(request, evictable) units, all from
// the evictable size, one slot list per victim; an insert adds its new
// units to the evictable size; a match and a rejected step change no size.
func radixSizeAccounting(_ spec.Limits, in spec.RadixScriptInput, out spec.RadixScriptOutput) error {
	for i := 1; i < len(in.Steps); i++ {
		s, r, prev := in.Steps[i], out.Trace[i], out.Trace[i-1]
		dE, dP := r.EvictableSize-prev.EvictableSize, r.ProtectedSize-prev.ProtectedSize
		var ok bool
		switch {
		case s.Op == spec.StepCreate:
			ok = r.EvictableSize == 0 && r.ProtectedSize == 0
		case r.Error != nil || s.Op == spec.StepMatch || s.Op == spec.StepScore:
			ok = dE == 0 && dP == 0
		case s.Op == spec.StepLock || s.Op == spec.StepUnlock:
			ok = dE == *r.Delta && dP == -*r.Delta
		case s.Op == spec.StepEvict:
			e := r.Evict
			ok = dE == -e.Evicted && dP == 0 && e.Evicted >= min(s.NumTokens, prev.EvictableSize) &&
				len(e.Freed) == len(e.Victims)
		case s.Op == spec.StepPlanEvict:
			ok = dE == -r.Plan.Evicted && dP == 0
		case s.Op == spec.StepInsert:
			var cfg spec.RadixStep
			for _, c := range in.Steps[:i] {
				if c.Op == spec.StepCreate {
					cfg = c
				}
			}
			units, _ := treeUnits(cfg, s)
			ok = dP == 0 && (dE == len(units)-*r.PrefixLen || cfg.Disable && dE == 0)
		}
		if !ok {
			return fmt.Errorf("step %d (%s): sizes moved by (%d, %d): %+v", i, s.Op, dE, dP, r)
		}
	}
	return nil
}
