package equiv

import (
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TransferPerLayerScript is the differential spec of transfer.per_layer_script
// (docs/spec/transfer.md §4). The step-by-step state machine over the managers
// themselves, with the byte comparison against a monolithic send on a
// clone, is TestPerLayerTwinsAgreeAfterEveryStep; this spec holds the
// script-level generators, the §4.6 worked trace and §4.7 minimal inputs,
// and the §4.8 invariants read off a trace, the engine log and the final
// state.
func TransferPerLayerScript() *Spec[spec.TransferPerLayerScriptInput, spec.TransferPerLayerScriptOutput] {
	valid, invalid := perLayerGenerators(Coverage{})
	return &Spec[spec.TransferPerLayerScriptInput, spec.TransferPerLayerScriptOutput]{
		Op:          catalog.TransferPerLayerScript(),
		Valid:       valid,
		Invalid:     invalid,
		Vocabulary:  perLayerVocabulary(),
		Boundary:    perLayerBoundary(),
		Regressions: perLayerRegressions(),
		Script:      stepsOf(func(in *spec.TransferPerLayerScriptInput) *[]spec.PerLayerStep { return &in.Steps }),
		Props: []Prop[spec.TransferPerLayerScriptInput, spec.TransferPerLayerScriptOutput]{
			{"enqueued-bounded", perLayerEnqueuedBounded},
			{"no-double-send", perLayerNoDoubleSend},
			{"no-submit-after-failure", perLayerNoSubmitAfterFailure},
			{"finish-zero-is-monolithic", perLayerFinishZeroIsMonolithic},
			{"batches-waited", perLayerBatchesWaited},
			{"fifo-per-room", perLayerFIFOPerRoom},
			{"refinish-idempotent", perLayerRefinishIdempotent},
		},
	}
}

// perLayerVocabulary is what an adapter may declare part of: the step
// kinds (create required: it must come first).
func perLayerVocabulary() *Vocabulary[spec.TransferPerLayerScriptInput] {
	kinds := []string{spec.PerLayerCreate, spec.PerLayerRegister, spec.PerLayerForwardBegin, spec.PerLayerForwardEnd,
		spec.PerLayerLayerEnd, spec.PerLayerCompleteEvent, spec.PerLayerWorkerStep, spec.PerLayerEngineComplete,
		spec.PerLayerInject, spec.PerLayerFinish, spec.PerLayerRefinish, spec.PerLayerDrop, spec.PerLayerHas, spec.PerLayerMonolithic}
	return &Vocabulary[spec.TransferPerLayerScriptInput]{
		Steps:    kinds,
		Required: []string{spec.PerLayerCreate},
		Uses: func(in spec.TransferPerLayerScriptInput) ([]string, []string) {
			return stepKinds(kinds, func(yield func(string) bool) {
				for _, s := range in.Steps {
					if !yield(s.Op) {
						return
					}
				}
			}), nil
		},
		Generate: perLayerGenerators,
	}
}

// perLayerGenerators are transfer.per_layer_script's generators under c.
func perLayerGenerators(c Coverage) (*rapid.Generator[spec.TransferPerLayerScriptInput], *rapid.Generator[Bad[spec.TransferPerLayerScriptInput]]) {
	return rapid.Custom(func(t *rapid.T) spec.TransferPerLayerScriptInput { return perLayerSteps(t, 40, c) }),
		rapid.Custom(func(t *rapid.T) Bad[spec.TransferPerLayerScriptInput] { return perLayerInvalid(t, c) })
}

// PerLayerSteps draws a script of up to maxSteps steps shaped like a prefill
// scheduler: 1–3 rooms registering chunks in send order (mostly with one
// non-dummy info), forwards firing the hooks in layer order, events and
// batches completing in any order, worker steps, injected engine faults,
// finishes of the front chunk (sometimes too early, so they time out),
// drops, duplicate registrations and finishes, and occasional refused
// steps. A reference run follows the steps so they name live events,
// batches and chunks.
func PerLayerSteps(t *rapid.T, maxSteps int) spec.TransferPerLayerScriptInput {
	return perLayerSteps(t, maxSteps, Coverage{})
}

// perLayerSteps is PerLayerSteps inside c: a step of a kind c leaves out
// is drawn and dropped, neither kept nor run on the reference.
func perLayerSteps(t *rapid.T, maxSteps int, c Coverage) spec.TransferPerLayerScriptInput {
	create := perLayerDrawCreate(t)
	g := newPerLayerGen(t, create, nil)
	g.cover = c
	for range rapid.IntRange(0, maxSteps).Draw(t, "steps") {
		g.step()
	}
	return spec.TransferPerLayerScriptInput{Steps: g.steps}
}

// perLayerDrawCreate draws a create step: N in [1, 6], H = N mostly (N−1: an
// MTP layer; N+1: a hook past N; 0: no hook), K in [1, 4], small arenas.
func perLayerDrawCreate(t *rapid.T) spec.PerLayerStep {
	n := rapid.IntRange(1, 6).Draw(t, "layers")
	create := spec.PerLayerStep{Op: spec.PerLayerCreate, Layers: n,
		Hooked:   rapid.SampledFrom([]int{n, n, n - 1, n + 1, 0}).Draw(t, "hooked"),
		Group:    rapid.IntRange(1, 4).Draw(t, "group"),
		ItemLen:  rapid.IntRange(1, 4).Draw(t, "item_len"),
		SrcPages: rapid.IntRange(1, 6).Draw(t, "src_pages"),
		DstPages: rapid.IntRange(1, 6).Draw(t, "dst_pages")}
	if create.Hooked < 0 {
		create.Hooked = 0
	}
	return create
}

// perLayerGen draws steps while a reference run follows them.
type perLayerGen struct {
	t       *rapid.T
	run     *ref.PerLayerRun
	steps   []spec.PerLayerStep
	results []spec.PerLayerStepResult
	next    map[uint64]int64 // each room's next chunk key
	layer   int              // the next layer a forward hooks
	cover   Coverage         // the part of the op the steps stay inside
}

func newPerLayerGen(t *rapid.T, create spec.PerLayerStep, logger *slog.Logger) *perLayerGen {
	run, err := ref.NewPerLayerRun(create, ref.NewPerLayerManager, logger)
	if err != nil {
		t.Fatal(err)
	}
	return &perLayerGen{t: t, run: run, steps: []spec.PerLayerStep{create}, results: []spec.PerLayerStepResult{{Op: spec.PerLayerCreate}},
		next: map[uint64]int64{}}
}

func (g *perLayerGen) apply(s spec.PerLayerStep) {
	if !g.cover.Step(s.Op) {
		return // a kind the declaration leaves out: dropped
	}
	g.results = append(g.results, g.run.Step(s, len(g.steps)))
	g.steps = append(g.steps, s)
}

func (g *perLayerGen) pages(label string) ([]int64, []int64) {
	geo := g.run.Geometry
	m := rapid.IntRange(0, min(geo.SrcPages, geo.DstPages)).Draw(g.t, label+"_n")
	src := rapid.Permutation(pageSeq(geo.SrcPages)).Draw(g.t, label+"_src")[:m]
	dst := rapid.Permutation(pageSeq(geo.DstPages)).Draw(g.t, label+"_dst")[:m]
	return src, dst
}

func pageSeq(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i)
	}
	return out
}

func (g *perLayerGen) step() {
	t := g.t
	st := g.run.Manager.State()
	switch rapid.IntRange(0, 15).Draw(t, "kind") {
	case 0, 1:
		room := uint64(rapid.IntRange(1, 3).Draw(t, "room"))
		chunk := g.next[room]
		if rapid.IntRange(0, 5).Draw(t, "dup") == 0 && chunk > 0 {
			chunk -= 4 // a duplicate registration of the last chunk
		} else {
			g.next[room] = chunk + 4
		}
		owned, dst := g.pages("reg")
		infos := rapid.SampledFrom([]int{1, 1, 1, 1, 0, 2}).Draw(t, "infos")
		g.apply(spec.PerLayerStep{Op: spec.PerLayerRegister, Room: room, Chunk: chunk, Infos: infos, Owned: owned, Dst: dst})
	case 2:
		if st.Forward {
			g.apply(spec.PerLayerStep{Op: spec.PerLayerForwardEnd})
		} else {
			g.layer = 0
			g.apply(spec.PerLayerStep{Op: spec.PerLayerForwardBegin})
		}
	case 3, 4, 5:
		l := g.layer
		if !st.Forward || l >= g.steps[0].Hooked || rapid.IntRange(0, 9).Draw(t, "odd_layer") == 0 {
			l = rapid.IntRange(-1, g.steps[0].Hooked).Draw(t, "layer")
		} else {
			g.layer++
		}
		g.apply(spec.PerLayerStep{Op: spec.PerLayerLayerEnd, Layer: l})
	case 6, 7:
		ev := 1
		if p := g.run.Events.Pending(); len(p) > 0 {
			ev = rapid.SampledFrom(p).Draw(t, "event")
		}
		g.apply(spec.PerLayerStep{Op: spec.PerLayerCompleteEvent, Event: ev, Fail: rapid.IntRange(0, 9).Draw(t, "ev_fail") == 0})
	case 8, 9:
		g.apply(spec.PerLayerStep{Op: spec.PerLayerWorkerStep})
	case 10:
		b := uint64(1)
		if f := g.run.Engine.InFlight(); len(f) > 0 {
			b = rapid.SampledFrom(f).Draw(t, "batch")
		}
		g.apply(spec.PerLayerStep{Op: spec.PerLayerEngineComplete, Batch: b, Fail: rapid.IntRange(0, 9).Draw(t, "b_fail") == 0})
	case 11:
		g.apply(spec.PerLayerStep{Op: spec.PerLayerInject, Fault: rapid.SampledFrom([]spec.EngineFault{spec.FaultSubmit, spec.FaultWait, spec.FaultSync}).Draw(t, "fault")})
	case 12, 13:
		room, chunk := uint64(rapid.IntRange(1, 3).Draw(t, "f_room")), int64(0)
		for _, r := range st.Rooms {
			if r.Room == room {
				chunk = r.Contexts[0].Chunk
			}
		}
		if rapid.IntRange(0, 7).Draw(t, "f_odd") == 0 {
			chunk = 4 * int64(rapid.IntRange(0, 3).Draw(t, "f_chunk"))
		}
		g.apply(spec.PerLayerStep{Op: spec.PerLayerFinish, Room: room, Chunk: chunk})
	case 14:
		g.apply(spec.PerLayerStep{Op: rapid.SampledFrom([]string{spec.PerLayerRefinish, spec.PerLayerHas, spec.PerLayerDrop}).Draw(t, "misc"),
			Room: uint64(rapid.IntRange(1, 3).Draw(t, "m_room"))})
	case 15:
		owned, dst := g.pages("mono")
		g.apply(spec.PerLayerStep{Op: spec.PerLayerMonolithic, Room: 9, Chunk: 0, Owned: owned, Dst: dst})
	}
}

// perLayerInvalid draws a valid script and breaks it once: the create step,
// the op of a step, or a register/monolithic step appended at the end
// with mismatched lengths, a page outside the arena or a repeated dst page.
//
// Under a coverage that leaves out the kind a violation appends (register,
// monolithic, inject), the violation is an unknown op instead.
func perLayerInvalid(t *rapid.T, cover Coverage) Bad[spec.TransferPerLayerScriptInput] {
	in := perLayerSteps(t, 8, cover)
	steps := slices.Clone(in.Steps)
	c := &steps[0]
	var want *spec.Sentinel
	violation := rapid.IntRange(0, 10).Draw(t, "violation")
	if k := perLayerViolationStep(violation); k != "" && !cover.Step(k) {
		violation = 6
	}
	switch violation {
	case 0:
		steps = steps[1:]
		want = spec.ErrScriptOrder
	case 1:
		c.Layers, want = rapid.SampledFrom([]int{0, -1, spec.MaxTransferLayers + 1}).Draw(t, "layers"), spec.ErrBadNumLayers
	case 2:
		c.Group, want = rapid.IntRange(-2, 0).Draw(t, "group"), spec.ErrBadGroupSize
	case 3:
		c.ItemLen, want = rapid.IntRange(-2, 0).Draw(t, "item_len"), spec.ErrZeroItemLen
	case 4:
		c.DstPages, want = 0, spec.ErrNegative
	case 5:
		c.ItemLen, want = 1<<40, spec.ErrTooLarge
	case 6:
		steps, want = append(steps, spec.PerLayerStep{Op: "warp"}), spec.ErrBadEnum
	case 7:
		steps, want = append(steps, spec.PerLayerStep{Op: spec.PerLayerRegister, Owned: []int64{0}}), spec.ErrLengthMismatch
	case 8:
		steps, want = append(steps, spec.PerLayerStep{Op: spec.PerLayerRegister, Owned: []int64{int64(c.SrcPages)}, Dst: []int64{0}}), spec.ErrPageOutOfArena
	case 9:
		if c.SrcPages < 2 {
			c.SrcPages = 2
		}
		steps, want = append(steps, spec.PerLayerStep{Op: spec.PerLayerMonolithic, Owned: []int64{0, 1}, Dst: []int64{0, 0}}), spec.ErrDuplicateDstPage
	case 10:
		steps, want = append(steps, spec.PerLayerStep{Op: spec.PerLayerInject, Fault: "cosmic_ray"}), spec.ErrBadEnum
	}
	return Bad[spec.TransferPerLayerScriptInput]{In: spec.TransferPerLayerScriptInput{Steps: steps}, Want: want}
}

// perLayerViolationStep is the step kind violation v of perLayerInvalid
// appends ("": none).
func perLayerViolationStep(v int) string {
	switch v {
	case 7, 8:
		return spec.PerLayerRegister
	case 9:
		return spec.PerLayerMonolithic
	case 10:
		return spec.PerLayerInject
	}
	return ""
}

// perLayerForward is the steps of one forward over layers [0, h): the hooks,
// then every event completed and the given number of worker steps.
func perLayerForward(h, events, work int) []spec.PerLayerStep {
	s := []spec.PerLayerStep{{Op: spec.PerLayerForwardBegin}}
	for l := range h {
		s = append(s, spec.PerLayerStep{Op: spec.PerLayerLayerEnd, Layer: l})
	}
	s = append(s, spec.PerLayerStep{Op: spec.PerLayerForwardEnd})
	for e := 1; e <= events; e++ {
		s = append(s, spec.PerLayerStep{Op: spec.PerLayerCompleteEvent, Event: e})
	}
	for range work {
		s = append(s, spec.PerLayerStep{Op: spec.PerLayerWorkerStep})
	}
	return s
}

func perLayerCreate(n, h, k int) spec.PerLayerStep {
	return spec.PerLayerStep{Op: spec.PerLayerCreate, Layers: n, Hooked: h, Group: k, ItemLen: 2, SrcPages: 4, DstPages: 4}
}

func perLayerReg(room uint64, chunk int64) spec.PerLayerStep {
	return spec.PerLayerStep{Op: spec.PerLayerRegister, Room: room, Chunk: chunk, Infos: 1, Owned: []int64{0, 1, 3}, Dst: []int64{2, 3, 0}}
}

func perLayerScript(parts ...[]spec.PerLayerStep) spec.TransferPerLayerScriptInput {
	var steps []spec.PerLayerStep
	for _, p := range parts {
		steps = append(steps, p...)
	}
	return spec.TransferPerLayerScriptInput{Steps: steps}
}

func one(s ...spec.PerLayerStep) []spec.PerLayerStep { return s }

func perLayerBoundary() []Case[spec.TransferPerLayerScriptInput] {
	fin := func(room uint64, chunk int64) spec.PerLayerStep {
		return spec.PerLayerStep{Op: spec.PerLayerFinish, Room: room, Chunk: chunk}
	}
	return []Case[spec.TransferPerLayerScriptInput]{
		{"worked-trace-4.6", catalog.TransferPerLayerScript().Sample},
		{"n1", perLayerScript(one(perLayerCreate(1, 1, 8), perLayerReg(1, 0)), perLayerForward(1, 1, 1), one(fin(1, 0)))},
		{"n-equals-k", perLayerScript(one(perLayerCreate(4, 4, 4), perLayerReg(1, 0)), perLayerForward(4, 1, 1), one(fin(1, 0)))},
		{"n-k-plus-1", perLayerScript(one(perLayerCreate(5, 5, 4), perLayerReg(1, 0)), perLayerForward(5, 2, 2), one(fin(1, 0)))},
		{"mtp-h-below-n", perLayerScript(one(perLayerCreate(5, 4, 2), perLayerReg(1, 0)), perLayerForward(4, 2, 2), one(fin(1, 0)))},
		{"two-rooms", perLayerScript(one(perLayerCreate(3, 3, 2), perLayerReg(1, 0), perLayerReg(2, 0)), perLayerForward(3, 2, 4), one(fin(2, 0), fin(1, 0)))},
		{"two-chunks-per-room", perLayerScript(one(perLayerCreate(3, 3, 2), perLayerReg(1, 0)), perLayerForward(3, 2, 2),
			one(perLayerReg(1, 4)), perLayerForward(3, 0, 0), one(fin(1, 0), fin(1, 4)))},
		{"no-hook-fired", perLayerScript(one(perLayerCreate(3, 0, 2), perLayerReg(1, 0), fin(1, 0)))},
		{"empty-owned-skip", perLayerScript(one(perLayerCreate(2, 2, 1),
			spec.PerLayerStep{Op: spec.PerLayerRegister, Room: 1, Infos: 1, Owned: []int64{}, Dst: []int64{}}), perLayerForward(2, 2, 2), one(fin(1, 0)))},
		{"hook-past-n-fails-closed", perLayerScript(one(perLayerCreate(2, 3, 4), perLayerReg(1, 0)), perLayerForward(3, 1, 1), one(fin(1, 0)))},
		{"submit-failure", perLayerScript(one(perLayerCreate(2, 2, 1), perLayerReg(1, 0), spec.PerLayerStep{Op: spec.PerLayerInject, Fault: spec.FaultSubmit}),
			perLayerForward(2, 2, 2), one(fin(1, 0)))},
		{"drop-waits-batches", perLayerScript(one(perLayerCreate(2, 2, 1), perLayerReg(1, 0), perLayerReg(1, 4)), perLayerForward(2, 2, 4),
			one(spec.PerLayerStep{Op: spec.PerLayerDrop, Room: 1}, spec.PerLayerStep{Op: spec.PerLayerHas, Room: 1}))},
		{"finish-behind-front-refused", perLayerScript(one(perLayerCreate(2, 2, 1), perLayerReg(1, 4), fin(1, 0), fin(1, 8)))},
		// §4.9's failure paths, each pinned once (generated scripts reach them
		// only on some seeds): an engine fault of every kind, a failed event,
		// a failed batch, and forward steps out of order.
		{"wait-failure", perLayerScript(one(perLayerCreate(2, 2, 1), perLayerReg(1, 0), spec.PerLayerStep{Op: spec.PerLayerInject, Fault: spec.FaultWait}),
			perLayerForward(2, 2, 2), one(fin(1, 0)))},
		{"sync-fallback-failure", perLayerScript(one(perLayerCreate(2, 1, 1), perLayerReg(1, 0), spec.PerLayerStep{Op: spec.PerLayerInject, Fault: spec.FaultSync}),
			perLayerForward(1, 1, 1), one(fin(1, 0)))},
		{"monolithic-sync-failure", perLayerScript(one(perLayerCreate(2, 2, 1), spec.PerLayerStep{Op: spec.PerLayerInject, Fault: spec.FaultSync},
			spec.PerLayerStep{Op: spec.PerLayerMonolithic, Room: 1, Owned: []int64{0, 1}, Dst: []int64{2, 3}}))},
		{"event-failure", perLayerScript(one(perLayerCreate(2, 2, 1), perLayerReg(1, 0)),
			one(spec.PerLayerStep{Op: spec.PerLayerForwardBegin}, spec.PerLayerStep{Op: spec.PerLayerLayerEnd}, spec.PerLayerStep{Op: spec.PerLayerLayerEnd, Layer: 1},
				spec.PerLayerStep{Op: spec.PerLayerForwardEnd}, spec.PerLayerStep{Op: spec.PerLayerCompleteEvent, Event: 1, Fail: true},
				spec.PerLayerStep{Op: spec.PerLayerCompleteEvent, Event: 2}, spec.PerLayerStep{Op: spec.PerLayerWorkerStep},
				spec.PerLayerStep{Op: spec.PerLayerWorkerStep}, fin(1, 0)))},
		{"batch-failure", perLayerScript(one(perLayerCreate(2, 2, 1), perLayerReg(1, 0)), perLayerForward(2, 2, 2),
			one(spec.PerLayerStep{Op: spec.PerLayerEngineComplete, Batch: 1, Fail: true}, fin(1, 0)))},
		{"forward-steps-out-of-order", perLayerScript(one(perLayerCreate(2, 2, 1), perLayerReg(1, 0),
			spec.PerLayerStep{Op: spec.PerLayerForwardEnd}, spec.PerLayerStep{Op: spec.PerLayerForwardBegin},
			spec.PerLayerStep{Op: spec.PerLayerForwardBegin}, spec.PerLayerStep{Op: spec.PerLayerForwardEnd}))},
		// §4.4 Register's argument checks: a negative chunk key fails the
		// step (the script validates pages, not keys) and registers nothing.
		{"register-negative-chunk", perLayerScript(one(perLayerCreate(2, 2, 1), perLayerReg(1, -1),
			spec.PerLayerStep{Op: spec.PerLayerHas, Room: 1}))},
	}
}

func perLayerRegressions() []Case[spec.TransferPerLayerScriptInput] {
	fin := spec.PerLayerStep{Op: spec.PerLayerFinish, Room: 7}
	return []Case[spec.TransferPerLayerScriptInput]{
		// B1: N=2, H=1, K=1. Fixed: 0 and entry 1 sent by the sync
		// fallback; buggy: "finish TIMEOUT processed=1/2".
		{"finish-requires-all-layers", perLayerScript(one(perLayerCreate(2, 1, 1), perLayerReg(7, 0)), perLayerForward(1, 1, 1), one(fin))},
		// B2: N=H=2, K=1; a second forward fires 0, 1 again before the
		// finish. Fixed target 2; buggy 4 and a timeout processed=2/4.
		{"enqueue-without-dedup", perLayerScript(one(perLayerCreate(2, 2, 1), perLayerReg(7, 0)), perLayerForward(2, 2, 2), perLayerForward(2, 0, 0), one(fin))},
		// B3: Register(7, 0) twice. Fixed: one build; buggy: two, the first orphaned.
		{"register-overwrites-room", perLayerScript(one(perLayerCreate(2, 2, 1), perLayerReg(7, 0), perLayerReg(7, 0)))},
		// B5: two non-dummy infos. Fixed: Register returns false.
		{"finish-per-info", perLayerScript(one(perLayerCreate(2, 2, 1),
			spec.PerLayerStep{Op: spec.PerLayerRegister, Room: 7, Infos: 2, Owned: []int64{0}, Dst: []int64{1}}, fin, fin))},
		// B6: register chunk 0, register chunk 4, finish chunk 0. Fixed
		// finishes chunk 0's context; buggy chunk 4's.
		{"one-context-per-room", perLayerScript(one(perLayerCreate(2, 2, 1), perLayerReg(7, 0), perLayerReg(7, 4), fin))},
	}
}

// ---- properties (docs/spec/transfer.md §4.8, read off the script output) ----

// perLayerEnqueuedBounded is §4.8.1: every context's enqueued layers lie in
// [0, H), number at most N, and its completion target is their count.
func perLayerEnqueuedBounded(_ spec.Limits, in spec.TransferPerLayerScriptInput, out spec.TransferPerLayerScriptOutput) error {
	h := in.Steps[0].Hooked
	for _, r := range out.State.Rooms {
		for _, c := range r.Contexts {
			for _, l := range c.Enqueued {
				if l < 0 || l >= h {
					return fmt.Errorf("%s: enqueued layer %d outside [0, H=%d)", c.Session, l, h)
				}
			}
			if len(c.Enqueued) > c.Layers || c.Target != len(c.Enqueued) {
				return fmt.Errorf("%s: target %d, |enqueued| %d, N %d", c.Session, c.Target, len(c.Enqueued), c.Layers)
			}
		}
	}
	return nil
}

// sent lists, per session, the blocks handed to the engine (async and sync).
func sent(out spec.TransferPerLayerScriptOutput) map[string][]spec.Block {
	m := map[string][]spec.Block{}
	for _, c := range out.Calls {
		if c.Kind != spec.CallWait {
			m[c.Session] = append(m[c.Session], c.Blocks...)
		}
	}
	return m
}

// perLayerNoDoubleSend is §4.8.2: no context hands the same block to the
// engine twice (the dst pages of a chunk are distinct, so its blocks are).
func perLayerNoDoubleSend(_ spec.Limits, _ spec.TransferPerLayerScriptInput, out spec.TransferPerLayerScriptOutput) error {
	for s, blocks := range sent(out) {
		seen := map[spec.Block]bool{}
		for _, b := range blocks {
			if seen[b] && b.Len > 0 {
				return fmt.Errorf("%s sent block %+v twice", s, b)
			}
			seen[b] = true
		}
	}
	return nil
}

// perLayerNoSubmitAfterFailure is §4.8.2's second half as the log shows it:
// after a session's failed submit or sync transfer, that session hands
// nothing more to the engine.
func perLayerNoSubmitAfterFailure(_ spec.Limits, _ spec.TransferPerLayerScriptInput, out spec.TransferPerLayerScriptOutput) error {
	failed := map[string]bool{}
	for i, c := range out.Calls {
		if c.Kind == spec.CallWait {
			continue
		}
		if failed[c.Session] {
			return fmt.Errorf("call %d: %s submitted after its failure", i, c.Session)
		}
		if c.Status != 0 {
			failed[c.Session] = true
		}
	}
	return nil
}

// stepOf is the register step index a session names (ref.Session).
func stepOf(session string) (int, bool) {
	i := strings.LastIndexByte(session, '@')
	if i < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(session[i+1:])
	return n, err == nil
}

// perLayerFinishZeroIsMonolithic is §4.8.4: after Finish returns 0, the
// multiset of the context's blocks handed to the engine equals the blocks
// of the monolithic send of its chunk.
func perLayerFinishZeroIsMonolithic(_ spec.Limits, in spec.TransferPerLayerScriptInput, out spec.TransferPerLayerScriptOutput) error {
	geo := ref.GeometryOf(in.Steps[0])
	got := sent(out)
	for i, r := range out.Trace {
		f := r.Finish
		if f == nil || !f.Handled || f.Status != 0 {
			continue
		}
		k, ok := stepOf(f.Session)
		if !ok || k <= 0 || k >= len(in.Steps) || in.Steps[k].Op != spec.PerLayerRegister {
			return fmt.Errorf("step %d: finished session %q names no register step", i, f.Session)
		}
		s := in.Steps[k]
		var want []spec.Block
		for _, bl := range geo.Plan(f.Session, s.Owned, s.Dst).Blocks {
			want = append(want, bl...)
		}
		if !sameMultiset(want, got[f.Session]) {
			return fmt.Errorf("step %d: %s finished 0 but sent %v, the monolithic send is %v", i, f.Session, got[f.Session], want)
		}
	}
	return nil
}

func sameMultiset(a, b []spec.Block) bool {
	cmp := func(x, y spec.Block) int {
		if x.Src != y.Src {
			return compare(x.Src, y.Src)
		}
		if x.Dst != y.Dst {
			return compare(x.Dst, y.Dst)
		}
		return compare(x.Len, y.Len)
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortFunc(a, cmp)
	slices.SortFunc(b, cmp)
	return slices.Equal(a, b)
}

func compare(x, y uint64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// perLayerBatchesWaited is §4.8.5 and §4.8.7: every batch of a context that
// finished or was dropped was listed by a wait, and a Finish that returned
// 0 saw every wait of its batches succeed. Batches left unwaited belong to
// contexts still registered.
func perLayerBatchesWaited(_ spec.Limits, _ spec.TransferPerLayerScriptInput, out spec.TransferPerLayerScriptOutput) error {
	owner := map[uint64]string{}
	for _, c := range out.Calls {
		if c.Kind == spec.CallAsync && c.Batch != 0 {
			owner[c.Batch] = c.Session
		}
	}
	live := map[string]bool{}
	for _, r := range out.State.Rooms {
		for _, c := range r.Contexts {
			live[c.Session] = true
		}
	}
	for _, id := range out.Unwaited {
		if !live[owner[id]] {
			return fmt.Errorf("batch %d of %s, which is no longer registered, was never waited", id, owner[id])
		}
	}
	waitFailed := map[string]bool{}
	for _, c := range out.Calls {
		if c.Kind == spec.CallWait && c.Status != 0 {
			for _, id := range c.Batches {
				waitFailed[owner[id]] = true
			}
		}
	}
	for i, r := range out.Trace {
		if f := r.Finish; f != nil && f.Handled && f.Status == 0 && waitFailed[f.Session] {
			return fmt.Errorf("step %d: %s finished 0 though a wait of its batches failed", i, f.Session)
		}
	}
	return nil
}

// perLayerFIFOPerRoom is §4.8.6: a handled finish finishes the chunk it named
// (contexts finish in send order), and every listed room has a context.
func perLayerFIFOPerRoom(_ spec.Limits, in spec.TransferPerLayerScriptInput, out spec.TransferPerLayerScriptOutput) error {
	for i, r := range out.Trace {
		if f := r.Finish; f != nil && f.Handled && r.Op == spec.PerLayerFinish && f.Chunk != in.Steps[i].Chunk {
			return fmt.Errorf("step %d: finish of chunk %d finished chunk %d", i, in.Steps[i].Chunk, f.Chunk)
		}
	}
	for _, r := range out.State.Rooms {
		if len(r.Contexts) == 0 {
			return fmt.Errorf("room %d is listed with no context", r.Room)
		}
	}
	return nil
}

// perLayerRefinishIdempotent is §4.8.9: finishing the last finished context
// again returns what its finish returned.
func perLayerRefinishIdempotent(_ spec.Limits, _ spec.TransferPerLayerScriptInput, out spec.TransferPerLayerScriptOutput) error {
	var last *spec.FinishResult
	for i, r := range out.Trace {
		switch {
		case r.Op == spec.PerLayerFinish && r.Finish != nil && r.Finish.Handled:
			last = r.Finish
		case r.Op == spec.PerLayerRefinish && r.Finish != nil:
			if last == nil || *last != *r.Finish {
				return fmt.Errorf("step %d: refinish returned %+v, the finish returned %+v", i, r.Finish, last)
			}
		}
	}
	return nil
}
