package equiv

import (
	"fmt"
	"slices"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// HiCacheAckScript is the differential spec of hicache.ack_script (docs/spec/radix-acks.md
// §3). The step-by-step state machine over the write states themselves is
// TestAckQueueTwinsAgreeAfterEveryStep; this spec holds the script-level
// generators, the §3.4 worked examples and §3.5 minimal inputs, and the
// §3.3 properties read off a trace and the final states.
func HiCacheAckScript() *Spec[spec.HiCacheAckScriptInput, spec.HiCacheAckScriptOutput] {
	valid, invalid := ackGenerators(Coverage{})
	return &Spec[spec.HiCacheAckScriptInput, spec.HiCacheAckScriptOutput]{
		Op:          catalog.HiCacheAckScript(),
		Valid:       valid,
		Invalid:     invalid,
		Vocabulary:  ackVocabulary(),
		Boundary:    ackBoundary(),
		Regressions: ackRegressions(),
		Script:      stepsOf(func(in *spec.HiCacheAckScriptInput) *[]spec.AckStep { return &in.Steps }),
		Props: []Prop[spec.HiCacheAckScriptInput, spec.HiCacheAckScriptOutput]{
			{"write-invariants", ackWriteInvariants},
			{"spmd-consistency", ackSPMDConsistency},
			{"drain-pops-agreed", ackDrainPopsAgreed},
			{"duplicates-warn", ackDuplicatesWarn},
			{"terminal-ends-run", ackTerminalEndsRun},
		},
	}
}

// ackVocabulary is what an adapter may declare part of: the step kinds
// (create required: it must come first).
func ackVocabulary() *Vocabulary[spec.HiCacheAckScriptInput] {
	kinds := []string{spec.AckCreate, spec.AckNode, spec.AckEvictDevice, spec.AckLock, spec.AckUnlock, spec.AckReserve,
		spec.AckLayerStep, spec.AckWriteBackup, spec.AckWriteNonCP, spec.AckEventsComplete, spec.AckWritingCheck,
		spec.AckRollback, spec.AckRollbackPrepared, spec.AckHas, spec.AckAppend, spec.AckInjectDuplicate, spec.AckReset}
	return &Vocabulary[spec.HiCacheAckScriptInput]{
		Steps:    kinds,
		Required: []string{spec.AckCreate},
		Uses: func(in spec.HiCacheAckScriptInput) ([]string, []string) {
			return stepKinds(kinds, func(yield func(string) bool) {
				for _, s := range in.Steps {
					if !yield(s.Op) {
						return
					}
				}
			}), nil
		},
		Generate: ackGenerators,
	}
}

// ackGenerators are hicache.ack_script's generators under c.
func ackGenerators(c Coverage) (*rapid.Generator[spec.HiCacheAckScriptInput], *rapid.Generator[Bad[spec.HiCacheAckScriptInput]]) {
	return rapid.Custom(func(t *rapid.T) spec.HiCacheAckScriptInput { return ackSteps(t, 32, c) }),
		rapid.Custom(func(t *rapid.T) Bad[spec.HiCacheAckScriptInput] { return ackInvalid(t, c) })
}

// AckSteps draws a script of up to maxSteps steps shaped like a CP
// scheduler's write-through: a group of 1–4 ranks; nodes declared as
// requests arrive; reservations with per-rank owned pages (zero-owned
// ranks often); layer steps across forwards; write_backup fallbacks that
// sometimes fail mid-layers or after the ack; non-CP writes; partial event
// readiness per rank; drains between any two ops; rollbacks; refusals; and
// occasional bad steps and injected faults (duplicates, unknown acks).
// A terminal consumer error ends the script.
func AckSteps(t *rapid.T, maxSteps int) spec.HiCacheAckScriptInput {
	return ackSteps(t, maxSteps, Coverage{})
}

// ackSteps is AckSteps inside c: a step of a kind c leaves out is drawn
// and dropped, neither kept nor run on the generator's group.
func ackSteps(t *rapid.T, maxSteps int, c Coverage) spec.HiCacheAckScriptInput {
	g := newAckGen(t)
	g.cover = c
	n := rapid.IntRange(0, maxSteps).Draw(t, "steps")
	for range n {
		if g.halted {
			break
		}
		g.step()
	}
	return spec.HiCacheAckScriptInput{Steps: g.steps}
}

// ackGen draws steps while a reference group follows them, so steps name
// live nodes, ongoing registrations and reachable event counts.
type ackGen struct {
	t       *rapid.T
	steps   []spec.AckStep
	results []spec.AckStepResult
	group   []spec.AckQueue
	halted  bool
	cover   Coverage // the part of hicache.ack_script the steps stay inside
}

func newAckGen(t *rapid.T) *ackGen {
	create := spec.AckStep{
		Op:           spec.AckCreate,
		Ranks:        rapid.SampledFrom([]int{1, 2, 2, 3, 4}).Draw(t, "ranks"),
		Layers:       rapid.IntRange(1, 3).Draw(t, "layers"),
		HostCapacity: rapid.IntRange(2, 16).Draw(t, "host_capacity"),
	}
	g := &ackGen{t: t}
	g.apply(create)
	return g
}

// apply appends s and runs it on the generator's group, returning its
// result; a step of a kind the coverage leaves out is dropped (the zero
// result).
func (g *ackGen) apply(s spec.AckStep) spec.AckStepResult {
	if !g.cover.Step(s.Op) {
		return spec.AckStepResult{}
	}
	if s.Op == spec.AckCreate {
		g.group = make([]spec.AckQueue, s.Ranks)
		for r := range g.group {
			q, err := ref.NewAckQueue(spec.AckConfig{NumLayers: s.Layers, HostCapacity: s.HostCapacity})
			if err != nil {
				panic(err)
			}
			g.group[r] = q
		}
	}
	g.steps = append(g.steps, s)
	r := ref.RunAckGroupStep(g.group, s, len(g.steps)-1)
	g.results = append(g.results, r)
	g.halted = r.Terminal
	return r
}

// step draws the next step (sometimes preceded by a step it implies, such
// as the event completions an idle loop sees before it drains) and runs it
// on the group; callers find every new step and result at the end of
// g.steps and g.results.
func (g *ackGen) step() {
	g.apply(g.draw())
}

// uniform draws an int in [0, n) close to uniformly: rapid favours small
// and boundary integers (good for sizes, bad for a weighted choice among
// ops), so the draw is mixed by a multiplicative hash. Shrinking still
// works: it moves toward the draw 0, which is the first band.
func uniform(t *rapid.T, n int, label string) int {
	x := rapid.Uint64().Draw(t, label)
	return int((x * 0x9E3779B97F4A7C15 >> 32) % uint64(n))
}

// oneIn draws true about once in n.
func oneIn(t *rapid.T, n int, label string) bool { return uniform(t, n, label) == 0 }

// draw picks the next step by weight: bands of [0, 1000).
func (g *ackGen) draw() spec.AckStep {
	t := g.t
	switch op := uniform(t, 1000, "op"); {
	case op < 120:
		return g.events()
	case op < 260:
		return g.drain()
	case op < 400:
		return spec.AckStep{Op: spec.AckReserve, Node: g.target(), Owned: g.owned()}
	case op < 520:
		return spec.AckStep{Op: spec.AckLayerStep, Layer: g.layer()}
	case op < 600:
		return spec.AckStep{Op: spec.AckWriteNonCP, Node: g.target()}
	case op < 610:
		first := g.steps[0]
		return spec.AckStep{Op: spec.AckCreate, Ranks: first.Ranks, Layers: first.Layers, HostCapacity: first.HostCapacity}
	case op < 620:
		return spec.AckStep{Op: spec.AckReset}
	case op < 700:
		fail := rapid.SampledFrom([]spec.FailAt{"", spec.FailNone, spec.FailMidLayers, spec.FailAfterAck}).Draw(t, "fail_at")
		return spec.AckStep{Op: spec.AckWriteBackup, Node: g.target(), Owned: g.owned(), FailAt: fail}
	case op < 760:
		return spec.AckStep{Op: spec.AckInjectDuplicate, Node: g.queued()}
	case op < 820:
		kind := rapid.SampledFrom([]string{spec.AckRollback, spec.AckRollbackPrepared}).Draw(t, "rollback")
		return spec.AckStep{Op: kind, Node: g.node(true)}
	case op < 850:
		return spec.AckStep{Op: spec.AckHas, Node: rapid.Int64Range(-1, g.state().NextID+1).Draw(t, "has_node")}
	case op < 870:
		return spec.AckStep{Op: rapid.SampledFrom([]string{spec.AckEvictDevice, spec.AckLock, spec.AckUnlock}).Draw(t, "node_op"), Node: g.node(false)}
	case op < 890:
		return g.appendAck()
	}
	return g.declare()
}

// appendAck pushes an ack by fault injection: a declared node, sometimes
// a pending one, sometimes with a second id that may be unknown.
func (g *ackGen) appendAck() spec.AckStep {
	t := g.t
	ids := []spec.NodeID{g.node(false)}
	if p := g.state().Pending; len(p) > 0 && rapid.Bool().Draw(t, "pending_id") {
		ids[0] = rapid.SampledFrom(p).Draw(t, "pending").ID
	}
	if rapid.Bool().Draw(t, "two_ids") {
		ids = append(ids, rapid.Int64Range(-1, g.state().NextID+2).Draw(t, "append_id"))
	}
	return spec.AckStep{Op: spec.AckAppend, IDs: ids}
}

func (g *ackGen) state() spec.AckState { return g.group[0].State() }

// declare draws a node: usually the next id, sometimes a skip ahead, rarely
// a reused id or a negative length.
func (g *ackGen) declare() spec.AckStep {
	t := g.t
	s := spec.AckStep{Op: spec.AckNode, ValueLen: rapid.IntRange(0, 4).Draw(t, "value_len")}
	switch {
	case oneIn(t, 10, "skip_ahead"):
		s.Node = g.state().NextID + rapid.Int64Range(0, 3).Draw(t, "skip")
	case oneIn(t, 20, "reuse_id"):
		s.Node = rapid.Int64Range(1, g.state().NextID).Draw(t, "reused")
	case oneIn(t, 20, "negative_len"):
		s.ValueLen = -1
	}
	return s
}

// target draws the node a write registers: often a freshly declared one
// (the prepare path mints a node per request per chunk), otherwise any
// node as node(false) draws it.
func (g *ackGen) target() spec.NodeID {
	if rapid.Bool().Draw(g.t, "fresh") {
		s := spec.AckStep{Op: spec.AckNode, ValueLen: rapid.IntRange(1, 3).Draw(g.t, "fresh_len")}
		if r := g.apply(s); r.Node != nil {
			return *r.Node
		}
	}
	return g.node(false)
}

// node draws a declared node (an ongoing one when ongoing), sometimes any
// id near the table, which may be unknown or not registered.
func (g *ackGen) node(ongoing bool) spec.NodeID {
	st := g.state()
	var ids []spec.NodeID
	if ongoing {
		for _, r := range st.Ongoing {
			ids = append(ids, r.ID)
		}
	} else {
		for _, n := range st.Nodes {
			ids = append(ids, n.ID)
		}
	}
	if len(ids) == 0 || oneIn(g.t, 12, "odd_node") {
		return rapid.Int64Range(-1, st.NextID+1).Draw(g.t, "any_node")
	}
	return rapid.SampledFrom(ids).Draw(g.t, "node")
}

// queued draws an id named by a queued ack, or any id.
func (g *ackGen) queued() spec.NodeID {
	var ids []spec.NodeID
	for _, a := range g.state().Queue {
		ids = append(ids, a.NodeIDs...)
	}
	if len(ids) == 0 {
		return g.node(false)
	}
	return rapid.SampledFrom(ids).Draw(g.t, "queued")
}

// owned draws each rank's owned pages: zero often (the zero-owned rank).
func (g *ackGen) owned() []int {
	o := make([]int, len(g.group))
	for r := range o {
		o[r] = rapid.SampledFrom([]int{0, 0, 1, 1, 2, 3}).Draw(g.t, "owned")
	}
	return o
}

func (g *ackGen) layer() int {
	l := g.steps[0].Layers
	for _, s := range g.steps {
		if s.Op == spec.AckCreate {
			l = s.Layers
		}
	}
	if oneIn(g.t, 30, "bad_layer") {
		return rapid.SampledFrom([]int{-1, l}).Draw(g.t, "bad_layer_value")
	}
	return rapid.IntRange(0, l-1).Draw(g.t, "layer")
}

// events completes some of one rank's (or every rank's) unready acks.
func (g *ackGen) events() spec.AckStep {
	s := spec.AckStep{Op: spec.AckEventsComplete}
	q := g.group[0]
	if rapid.Bool().Draw(g.t, "one_rank") {
		r := rapid.IntRange(0, len(g.group)-1).Draw(g.t, "rank")
		s.Rank, q = &r, g.group[r]
	}
	st := q.State()
	unready := len(st.Queue) - q.ReadyPrefix()
	for _, qq := range g.group {
		unready = min(unready, len(qq.State().Queue)-qq.ReadyPrefix())
	}
	s.K = rapid.IntRange(0, unready).Draw(g.t, "k")
	if oneIn(g.t, 30, "bad_k") {
		s.K = rapid.SampledFrom([]int{-1, unready + 1}).Draw(g.t, "bad_k_value")
	}
	return s
}

// drain is a writing check: usually the MIN all-reduce, sometimes an
// explicit agreed count, rarely one beyond some rank's readiness.
func (g *ackGen) drain() spec.AckStep {
	if rapid.IntRange(0, 2).Draw(g.t, "settle") > 0 {
		unready := 0
		for r, q := range g.group {
			if u := len(q.State().Queue) - q.ReadyPrefix(); r == 0 || u < unready {
				unready = u
			}
		}
		g.apply(ackEvents(unready))
	}
	s := spec.AckStep{Op: spec.AckWritingCheck}
	switch {
	case oneIn(g.t, 10, "explicit_agreed"):
		s.Agreed = new(rapid.IntRange(0, ref.AgreedDrain(g.group)).Draw(g.t, "agreed"))
	case oneIn(g.t, 20, "agreed_beyond"):
		s.Agreed = new(ref.AgreedDrain(g.group) + rapid.IntRange(1, 2).Draw(g.t, "beyond"))
	}
	return s
}

// ackViolationStep is the step kind violation v of ackInvalid inserts
// ("": none).
func ackViolationStep(v int) string {
	switch v {
	case 6, 8:
		return spec.AckReserve
	case 7:
		return spec.AckWriteBackup
	case 9:
		return spec.AckEventsComplete
	}
	return ""
}

// ackInvalid draws a script inside c and breaks it once; a violation whose
// step c leaves out becomes an unknown op instead.
func ackInvalid(t *rapid.T, c Coverage) Bad[spec.HiCacheAckScriptInput] {
	in := ackSteps(t, 8, c)
	at := rapid.IntRange(0, len(in.Steps)).Draw(t, "at")
	insert := func(s spec.AckStep) {
		in.Steps = slices.Insert(in.Steps, max(at, 1), s)
	}
	ranks := in.Steps[0].Ranks
	violation := rapid.IntRange(0, 9).Draw(t, "violation")
	if k := ackViolationStep(violation); k != "" && !c.Step(k) {
		violation = 1
	}
	switch violation {
	case 0:
		in.Steps[0].Op = rapid.SampledFrom(append(c.Allowed([]string{spec.AckReserve, spec.AckWritingCheck}), "")).Draw(t, "first_op")
		return Bad[spec.HiCacheAckScriptInput]{in, spec.ErrScriptOrder}
	case 1:
		insert(spec.AckStep{Op: rapid.SampledFrom([]string{"drain", "Reserve", "evict_host"}).Draw(t, "bad_op")})
		return Bad[spec.HiCacheAckScriptInput]{in, spec.ErrBadEnum}
	case 2:
		in.Steps[0].Ranks = rapid.IntRange(-1, 0).Draw(t, "bad_ranks")
		return Bad[spec.HiCacheAckScriptInput]{in, spec.ErrBadCPSize}
	case 3:
		in.Steps[0].Layers = rapid.IntRange(-1, 0).Draw(t, "bad_layers")
		return Bad[spec.HiCacheAckScriptInput]{in, spec.ErrBadNumLayers}
	case 4:
		in.Steps[0].HostCapacity = -1
		return Bad[spec.HiCacheAckScriptInput]{in, spec.ErrNegative}
	case 5:
		in.Steps[0].HostCapacity = 1 << 40
		return Bad[spec.HiCacheAckScriptInput]{in, spec.ErrTooLarge}
	case 6:
		insert(spec.AckStep{Op: spec.AckReserve, Node: 1, Owned: make([]int, ranks+rapid.SampledFrom([]int{-1, 1}).Draw(t, "owned_len"))})
		return Bad[spec.HiCacheAckScriptInput]{in, spec.ErrLengthMismatch}
	case 7:
		insert(spec.AckStep{Op: spec.AckWriteBackup, Node: 1, Owned: make([]int, ranks), FailAt: "sometimes"})
		return Bad[spec.HiCacheAckScriptInput]{in, spec.ErrBadEnum}
	case 8:
		owned := make([]int, ranks)
		owned[rapid.IntRange(0, ranks-1).Draw(t, "bad_owned_rank")] = -1
		insert(spec.AckStep{Op: spec.AckReserve, Node: 1, Owned: owned})
		return Bad[spec.HiCacheAckScriptInput]{in, spec.ErrNegative}
	default:
		insert(spec.AckStep{Op: spec.AckEventsComplete, Rank: new(rapid.SampledFrom([]int{-1, ranks}).Draw(t, "bad_rank"))})
		return Bad[spec.HiCacheAckScriptInput]{in, spec.ErrBadCPRank}
	}
}

// Script-building helpers for the tables and the scenario tests.

func ackCreate(ranks, layers, capacity int) spec.AckStep {
	return spec.AckStep{Op: spec.AckCreate, Ranks: ranks, Layers: layers, HostCapacity: capacity}
}

func ackNode(id spec.NodeID, valueLen int) spec.AckStep {
	return spec.AckStep{Op: spec.AckNode, Node: id, ValueLen: valueLen}
}

func ackOn(op string, id spec.NodeID) spec.AckStep { return spec.AckStep{Op: op, Node: id} }

func ackReserve(id spec.NodeID, owned ...int) spec.AckStep {
	return spec.AckStep{Op: spec.AckReserve, Node: id, Owned: owned}
}

func ackBackup(id spec.NodeID, fail spec.FailAt, owned ...int) spec.AckStep {
	return spec.AckStep{Op: spec.AckWriteBackup, Node: id, Owned: owned, FailAt: fail}
}

func ackLayer(l int) spec.AckStep { return spec.AckStep{Op: spec.AckLayerStep, Layer: l} }

func ackEvents(k int) spec.AckStep { return spec.AckStep{Op: spec.AckEventsComplete, K: k} }

func ackRankEvents(rank, k int) spec.AckStep {
	return spec.AckStep{Op: spec.AckEventsComplete, Rank: &rank, K: k}
}

func ackDrain() spec.AckStep { return spec.AckStep{Op: spec.AckWritingCheck} }

func ackScript(s ...spec.AckStep) spec.HiCacheAckScriptInput {
	return spec.HiCacheAckScriptInput{Steps: s}
}

func ackBoundary() []Case[spec.HiCacheAckScriptInput] {
	return []Case[spec.HiCacheAckScriptInput]{
		// §3.4 "fast path versus scan": a merged [3,5] ack, Has on both
		// sides of the max, the max kept after the drain.
		{"worked-example-has-fast-path", ackScript(ackCreate(1, 1, 8),
			ackOn(spec.AckHas, 3), ackNode(3, 1), ackNode(5, 1), ackReserve(3, 1), ackReserve(5, 1), ackLayer(0),
			ackOn(spec.AckHas, 4), ackOn(spec.AckHas, 5), ackOn(spec.AckHas, 6), ackEvents(1), ackDrain(), ackOn(spec.AckHas, 5))},
		// §3.4 duplicate consumer, both copies ready in one drain.
		{"worked-example-duplicate-one-drain", ackScript(ackCreate(1, 1, 8),
			ackNode(7, 1), ackOn(spec.AckWriteNonCP, 7), ackOn(spec.AckInjectDuplicate, 7), ackEvents(2), ackDrain())},
		// §3.4 duplicate consumer split across drains.
		{"worked-example-duplicate-split-drains", ackScript(ackCreate(1, 1, 8),
			ackNode(7, 1), ackOn(spec.AckWriteNonCP, 7), ackOn(spec.AckInjectDuplicate, 7), ackEvents(1), ackDrain(),
			ackEvents(1), ackDrain())},
		// §3.4 unknown ack: fail fast, the run ends.
		{"worked-example-unknown-ack", ackScript(ackCreate(1, 1, 8),
			spec.AckStep{Op: spec.AckAppend, IDs: []spec.NodeID{9}}, ackEvents(1), ackDrain(), ackOn(spec.AckHas, 9))},
		// MIN draining over ranks with different readiness, and a drain
		// asked beyond one rank's ready prefix, refused as a whole.
		{"min-drain-over-ranks", ackScript(ackCreate(3, 2, 8),
			ackNode(0, 2), ackNode(0, 2), ackReserve(1, 1, 1, 0), ackReserve(2, 2, 0, 0), ackLayer(0), ackLayer(1),
			ackOn(spec.AckWriteNonCP, 2), ackRankEvents(0, 1), ackRankEvents(1, 1), ackDrain(),
			spec.AckStep{Op: spec.AckWritingCheck, Agreed: new(1)}, ackRankEvents(2, 1), ackDrain())},
		// Every refusal reason, the host-full retry through evict_host, and
		// the bad inputs of §3.6 as step errors.
		{"refusals-and-bad-steps", ackScript(ackCreate(2, 2, 4),
			ackNode(0, 2), ackNode(0, 2), ackNode(0, 3), ackOn(spec.AckWriteNonCP, 1), ackOn(spec.AckWriteNonCP, 1),
			ackReserve(1, 1, 1), ackEvents(1), ackDrain(), ackOn(spec.AckEvictDevice, 1), ackOn(spec.AckWriteNonCP, 2),
			ackOn(spec.AckWriteNonCP, 3), ackEvents(1), ackDrain(), ackOn(spec.AckWriteNonCP, 3), ackOn(spec.AckWriteNonCP, 1),
			spec.AckStep{Op: spec.AckAppend}, ackLayer(2), ackOn(spec.AckRollback, 2), ackOn(spec.AckRollback, 2),
			ackReserve(9, 0, 0), ackNode(1, 1), ackEvents(-1), ackEvents(5))},
		// A zero-layer-written mid_layers failure (L = 1) and a reset.
		{"single-layer-backup-and-reset", ackScript(ackCreate(2, 1, 2),
			ackNode(0, 1), ackBackup(1, spec.FailMidLayers, 1, 0), ackBackup(1, spec.FailNone, 0, 1), ackEvents(1), ackDrain(),
			spec.AckStep{Op: spec.AckReset}, ackOn(spec.AckHas, 1), ackNode(0, 2))},
		// §3.2 and §3.6's failure paths, each pinned once (generated scripts
		// reach them only on some seeds): the other terminal drain error, the
		// undrained-ack refusal (W9's queued duplicate of a completed id), a
		// reserve of a backed-up node, the registration's lock against
		// eviction, lock underflow, op 12's unregistered rollback, a
		// duplicate injected for an id no ack names, and an all-ranks event
		// sweep one rank must reject; and the §3.2 amendment's id bound
		// (2^40), which generated scripts never reach.
		{"ack-for-pending-backup-terminal", ackScript(ackCreate(1, 2, 8),
			ackNode(0, 1), ackReserve(1, 1), spec.AckStep{Op: spec.AckAppend, IDs: []spec.NodeID{1}}, ackEvents(1), ackDrain(),
			ackOn(spec.AckHas, 1))},
		{"undrained-ack-refused", ackScript(ackCreate(1, 1, 8),
			ackNode(0, 1), ackOn(spec.AckWriteNonCP, 1), ackOn(spec.AckInjectDuplicate, 1), ackEvents(1), ackDrain(), ackReserve(1, 1))},
		{"reserve-already-backed-up", ackScript(ackCreate(1, 1, 8),
			ackNode(0, 1), ackOn(spec.AckWriteNonCP, 1), ackEvents(1), ackDrain(), ackReserve(1, 1))},
		{"evict-registered-node-locked", ackScript(ackCreate(1, 1, 8),
			ackNode(0, 1), ackOn(spec.AckWriteNonCP, 1), ackOn(spec.AckEvictDevice, 1))},
		{"unlock-underflow", ackScript(ackCreate(1, 1, 8),
			ackNode(0, 1), ackOn(spec.AckLock, 1), ackOn(spec.AckUnlock, 1), ackOn(spec.AckUnlock, 1))},
		{"rollback-prepared-not-registered", ackScript(ackCreate(1, 1, 8),
			ackNode(0, 1), ackOn(spec.AckRollbackPrepared, 1))},
		{"inject-duplicate-not-queued", ackScript(ackCreate(1, 1, 8),
			ackNode(0, 1), ackOn(spec.AckInjectDuplicate, 1))},
		{"events-beyond-one-rank-refused-on-all", ackScript(ackCreate(2, 1, 8),
			ackNode(0, 1), ackOn(spec.AckWriteNonCP, 1), ackRankEvents(0, 1), ackEvents(1))},
		{"node-id-past-bound-refused", ackScript(ackCreate(1, 1, 8), ackNode(spec.MaxAckNodeID+1, 1))},
		// §3.2 op 3's evict_host retry that succeeds: the host is full, two
		// backed-up nodes have lost their device values, and a one-slot
		// write frees node 1 only (ascending id, stopping once enough is
		// freed) before it allocates.
		{"host-full-evicts-first-backed-up-node", ackScript(ackCreate(1, 1, 2),
			ackNode(0, 1), ackNode(0, 1), ackNode(0, 1), ackOn(spec.AckWriteNonCP, 1), ackOn(spec.AckWriteNonCP, 2),
			ackEvents(2), ackDrain(), ackOn(spec.AckEvictDevice, 1), ackOn(spec.AckEvictDevice, 2),
			ackOn(spec.AckWriteNonCP, 3), ackEvents(1), ackDrain(), ackOn(spec.AckHas, 3))},
		// §3.2 op 11's scrub empties the queue behind a partial drain: the
		// drain pops one of three acks, the two rollbacks scrub the other
		// two, and the next write's ack is the only queued one.
		{"rollback-scrubs-queue-behind-partial-drain", ackScript(ackCreate(1, 1, 8),
			ackNode(0, 1), ackNode(0, 1), ackNode(0, 1), ackNode(0, 1), ackOn(spec.AckWriteNonCP, 1),
			ackOn(spec.AckWriteNonCP, 2), ackOn(spec.AckWriteNonCP, 3), ackEvents(1), ackDrain(),
			ackOn(spec.AckRollback, 2), ackOn(spec.AckRollback, 3), ackOn(spec.AckWriteNonCP, 4), ackOn(spec.AckHas, 4),
			ackEvents(1), ackDrain(), ackOn(spec.AckHas, 4))},
		// §3.2 op 9: a negative agreed count is bad input, refused as a
		// step error on the group as a whole.
		{"writing-check-negative-agreed-refused", ackScript(ackCreate(2, 1, 8),
			ackNode(0, 1), ackOn(spec.AckWriteNonCP, 1), ackEvents(1), spec.AckStep{Op: spec.AckWritingCheck, Agreed: new(-1)},
			ackDrain())},
		// A non-CP write registers the node's whole device value, and
		// DeclareNode does not bound value_len: a value past MaxOwnedPages
		// is refused by the reservation's owned-pages check (a step error
		// naming "owned"), before any host slot is sought.
		{"write-noncp-value-past-owned-bound-refused", ackScript(ackCreate(1, 1, 8),
			ackNode(0, spec.MaxOwnedPages+1), ackOn(spec.AckWriteNonCP, 1), ackOn(spec.AckHas, 1))},
	}
}

func ackRegressions() []Case[spec.HiCacheAckScriptInput] {
	return []Case[spec.HiCacheAckScriptInput]{
		// §3.5 B3.a: WriteNonCP(5) must raise the max; Has(5) is true.
		{"ack-funnel-bypass", ackScript(ackCreate(1, 1, 8), ackNode(5, 1), ackOn(spec.AckWriteNonCP, 5), ackOn(spec.AckHas, 5))},
		// §3.5 B3.b after-ack: the rollback scrubs {4}; the re-registration
		// completes only through its own ack.
		{"rollback-leaves-orphan-ack", ackScript(ackCreate(1, 2, 8), ackNode(4, 2),
			ackBackup(4, spec.FailAfterAck, 2), ackBackup(4, spec.FailNone, 2), ackEvents(1), ackDrain())},
		// §3.5 B3.b mid-layer: node 6 takes node 4's freed slots; the next
		// forward must write node 6 only.
		{"rollback-leaves-layer-state", ackScript(ackCreate(1, 2, 2), ackNode(4, 2), ackNode(6, 2),
			ackBackup(4, spec.FailMidLayers, 2), ackReserve(6, 2), ackLayer(0), ackLayer(1), ackEvents(1), ackDrain())},
		// §3.5 B3.c: the duplicate of a completed ack warns, not KeyError.
		{"consumer-forgets-completed", ackScript(ackCreate(1, 1, 8), ackNode(7, 1), ackOn(spec.AckWriteNonCP, 7),
			ackOn(spec.AckInjectDuplicate, 7), ackEvents(2), ackDrain())},
		// §3.5 B3.d: an ack for an id never registered fails fast.
		{"blind-pop-unknown-ack", ackScript(ackCreate(1, 1, 8), spec.AckStep{Op: spec.AckAppend, IDs: []spec.NodeID{9}}, ackEvents(1), ackDrain())},
		// The early return that lets ranks diverge: rank 1 owns no page of
		// node 1 but must still register and ack at the last layer step.
		{"zero-owned-rank-returns-early", ackScript(ackCreate(2, 2, 4), ackNode(0, 2), ackReserve(1, 2, 0),
			ackLayer(0), ackLayer(1), ackEvents(1), ackDrain())},
		// Upstream's early return on an empty Ongoing alone (§6 item 4): the
		// queued duplicate of a completed ack must still drain.
		{"writing-check-strands-duplicates", ackScript(ackCreate(1, 1, 8), ackNode(7, 1), ackOn(spec.AckWriteNonCP, 7),
			ackOn(spec.AckInjectDuplicate, 7), ackEvents(1), ackDrain(), ackEvents(1), ackDrain())},
	}
}

// finalUnspecified reports whether the final states are outside the
// invariants' scope: a terminal consumer error leaves them unspecified.
func finalUnspecified(out spec.HiCacheAckScriptOutput) bool {
	return len(out.Trace) > 0 && out.Trace[len(out.Trace)-1].Terminal
}

// ackWriteInvariants is §3.3 W1–W4 and W6–W9 on every rank's final state.
func ackWriteInvariants(_ spec.Limits, _ spec.HiCacheAckScriptInput, out spec.HiCacheAckScriptOutput) error {
	if finalUnspecified(out) {
		return nil
	}
	for r, s := range out.Ranks {
		if err := ref.CheckAckState(s); err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
	}
	return nil
}

// ackSPMDConsistency is §3.3 W11: every step returned the same outcome on
// every rank, and the final ranks agree on ongoing ids, queue id
// sequences, lock refs and completed memory.
func ackSPMDConsistency(_ spec.Limits, _ spec.HiCacheAckScriptInput, out spec.HiCacheAckScriptOutput) error {
	for i, r := range out.Trace {
		if r.Diverged != nil {
			return fmt.Errorf("W11: step %d (%s): ranks returned different outcomes %+v", i, r.Op, r.Diverged)
		}
	}
	if finalUnspecified(out) {
		return nil
	}
	return ref.CheckAckRanks(out.Ranks)
}

// ackDrainPopsAgreed is §3.2 op 9 with §3.1 step 3: a writing check without
// an explicit count pops exactly MIN(ReadyPrefix) over ranks before it.
func ackDrainPopsAgreed(_ spec.Limits, in spec.HiCacheAckScriptInput, out spec.HiCacheAckScriptOutput) error {
	for i := 1; i < len(out.Trace); i++ {
		s, r := in.Steps[i], out.Trace[i]
		if s.Op != spec.AckWritingCheck || s.Agreed != nil || r.Error != nil || r.Diverged != nil {
			continue
		}
		want := slices.Min(out.Trace[i-1].ReadyPrefix)
		if r.Drain == nil || r.Drain.Popped != want {
			return fmt.Errorf("step %d: the drain popped %+v, want MIN ready prefix %d", i, r.Drain, want)
		}
	}
	return nil
}

// ackDuplicatesWarn is §3.2 op 9's duplicate rule: each rank's warning count
// rises by exactly the duplicates a drain reports and by nothing else
// (a create or reset restarts it at 0).
func ackDuplicatesWarn(_ spec.Limits, in spec.HiCacheAckScriptInput, out spec.HiCacheAckScriptOutput) error {
	for i := 1; i < len(out.Trace); i++ {
		s, r, prev := in.Steps[i], out.Trace[i], out.Trace[i-1]
		if s.Op == spec.AckCreate || s.Op == spec.AckReset {
			continue
		}
		for rank := range r.DuplicateAcks {
			d := 0
			if s.Op == spec.AckWritingCheck && r.Drain != nil {
				d = r.Drain.Duplicates
			} else if s.Op == spec.AckWritingCheck && r.Diverged != nil && r.Diverged[rank].Drain != nil {
				d = r.Diverged[rank].Drain.Duplicates
			}
			if r.DuplicateAcks[rank] != prev.DuplicateAcks[rank]+d {
				return fmt.Errorf("step %d rank %d: duplicate warnings %d -> %d, the drain reported %d", i, rank, prev.DuplicateAcks[rank], r.DuplicateAcks[rank], d)
			}
		}
	}
	return nil
}

// ackTerminalEndsRun is §3.2 op 9's fail-fast rule: only an unknown ack or
// an ack for a pending backup is terminal, it ends the run, and a run
// that did not halt traced every step.
func ackTerminalEndsRun(_ spec.Limits, in spec.HiCacheAckScriptInput, out spec.HiCacheAckScriptOutput) error {
	for i, r := range out.Trace {
		if !r.Terminal {
			continue
		}
		if e := r.Error; e == nil || (e.Code != spec.ErrUnknownWriteAck.Code() && e.Code != spec.ErrAckForPendingBackup.Code()) {
			if r.Diverged == nil {
				return fmt.Errorf("step %d is terminal without a terminal error: %+v", i, r)
			}
		}
		if i != len(out.Trace)-1 || out.Halted != (i < len(in.Steps)-1) {
			return fmt.Errorf("terminal step %d is not the end of the run (trace %d of %d steps, halted %t)", i, len(out.Trace), len(in.Steps), out.Halted)
		}
		return nil
	}
	if len(out.Trace) != len(in.Steps) || out.Halted {
		return fmt.Errorf("a run without a terminal error traced %d of %d steps (halted %t)", len(out.Trace), len(in.Steps), out.Halted)
	}
	return nil
}
