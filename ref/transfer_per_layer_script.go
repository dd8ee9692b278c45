package ref

import (
	"fmt"
	"log/slog"
	"slices"

	"github.com/kvtwin/kvtwin/spec"
)

// The transfer.per_layer_script op (docs/spec/transfer.md §4): a list of the §4.8
// operations run on one manager in deterministic mode over the in-memory
// engine and fake events. The output is the trace, the manager's final
// state, the engine's call log and the digest of the destination arena, so
// the stateful manager gets fixtures, an HTTP endpoint and the datadriven
// scenarios of the historic bugs.

var perLayerOps = []string{spec.PerLayerCreate, spec.PerLayerRegister, spec.PerLayerForwardBegin, spec.PerLayerForwardEnd, spec.PerLayerLayerEnd, spec.PerLayerCompleteEvent,
	spec.PerLayerWorkerStep, spec.PerLayerEngineComplete, spec.PerLayerInject, spec.PerLayerFinish, spec.PerLayerRefinish, spec.PerLayerDrop, spec.PerLayerHas, spec.PerLayerMonolithic}

// PerLayerGeometry is the arena layout of a script (from its create step):
// layer l's buffer starts at l*pages*itemLen in each arena.
type PerLayerGeometry struct {
	// Layers is N.
	Layers int
	// ItemLen is the bytes per page.
	ItemLen int
	// SrcPages and DstPages are the pages per layer.
	SrcPages, DstPages int
}

// Plan builds the §4.2 plan of a chunk: the §2 runs of (owned, dst)
// computed once, and build_layer_blocks for every entry. Preconditions:
// pages validated by validatePerLayerScript.
func (g PerLayerGeometry) Plan(session string, owned, dst []int64) *spec.LayerPlan {
	runs := groupRuns(owned, dst)
	il := uint64(g.ItemLen)
	p := &spec.LayerPlan{Session: session, Blocks: make([][]spec.Block, g.Layers)}
	for l := range g.Layers {
		p.Blocks[l] = BuildLayerBlocks(uint64(l*g.SrcPages)*il, uint64(l*g.DstPages)*il, il, runs)
	}
	return p
}

// Arenas returns the initial arenas: src byte i is byte(i*131+17) (every
// layer's pages distinct), dst is all 0xEE (old bytes a missed copy keeps).
func (g PerLayerGeometry) Arenas() (src, dst []byte) {
	src = make([]byte, g.Layers*g.SrcPages*g.ItemLen)
	for i := range src {
		src[i] = byte(i*131 + 17)
	}
	dst = make([]byte, g.Layers*g.DstPages*g.ItemLen)
	for i := range dst {
		dst[i] = 0xEE
	}
	return src, dst
}

// GeometryOf is the geometry of a create step.
func GeometryOf(s spec.PerLayerStep) PerLayerGeometry {
	return PerLayerGeometry{Layers: s.Layers, ItemLen: s.ItemLen, SrcPages: s.SrcPages, DstPages: s.DstPages}
}

// validatePerLayerScript rejects a script that cannot run at all, naming
// steps[i].field: no create first, or a second create (ErrScriptOrder); an
// unknown op or fault (ErrBadEnum); a create with layers outside
// [1, MaxTransferLayers] (ErrBadNumLayers), a bad K or H, item_len < 1
// (ErrZeroItemLen), pages < 1 (ErrNegative) or arenas beyond lim; a
// register or monolithic step with owned/dst of different lengths
// (ErrLengthMismatch), a page outside [0, pages) (ErrPageOutOfArena) or a
// repeated dst page (ErrDuplicateDstPage). Runtime refusals are trace errors.
func validatePerLayerScript(lim spec.Limits, in spec.TransferPerLayerScriptInput) error {
	if len(in.Steps) == 0 || in.Steps[0].Op != spec.PerLayerCreate {
		op := ""
		if len(in.Steps) > 0 {
			op = in.Steps[0].Op
		}
		return spec.Reject(spec.ErrScriptOrder, "steps[0].op", op, `"create"`)
	}
	var g PerLayerGeometry
	for i, s := range in.Steps {
		at := spec.Idx("steps", i) + "."
		if !slices.Contains(perLayerOps, s.Op) {
			return spec.Reject(spec.ErrBadEnum, at+"op", s.Op, "one of create, register, forward_begin, forward_end, layer_end, complete_event, worker_step, engine_complete, inject, finish, refinish, drop, has, monolithic")
		}
		switch s.Op {
		case spec.PerLayerCreate:
			if i > 0 {
				return spec.Reject(spec.ErrScriptOrder, at+"op", s.Op, "create only as the first step")
			}
			if err := validatePerLayerCreate(lim, s); err != nil {
				return prefixField(err, at)
			}
			g = GeometryOf(s)
		case spec.PerLayerRegister, spec.PerLayerMonolithic:
			if err := g.checkPages(s.Owned, s.Dst); err != nil {
				return prefixField(err, at)
			}
		case spec.PerLayerInject:
			if err := s.Fault.Validate(at + "fault"); err != nil {
				return err
			}
		}
	}
	return nil
}

func validatePerLayerCreate(lim spec.Limits, s spec.PerLayerStep) error {
	if s.Layers < 1 || s.Layers > spec.MaxTransferLayers {
		return spec.Reject(spec.ErrBadNumLayers, "layers", s.Layers, fmt.Sprintf("in [1, %d]", spec.MaxTransferLayers))
	}
	if err := (spec.PerLayerConfig{Hooked: s.Hooked, Group: s.Group}).Validate(); err != nil {
		return err
	}
	if s.ItemLen < 1 {
		return spec.Reject(spec.ErrZeroItemLen, "item_len", s.ItemLen, ">= 1")
	}
	if s.SrcPages < 1 {
		return spec.Reject(spec.ErrNegative, "src_pages", s.SrcPages, ">= 1")
	}
	if s.DstPages < 1 {
		return spec.Reject(spec.ErrNegative, "dst_pages", s.DstPages, ">= 1")
	}
	for _, a := range []struct {
		field string
		pages int
	}{{"src_pages", s.SrcPages}, {"dst_pages", s.DstPages}} {
		per := int64(a.pages)
		if spec.MulOverflows(per, int64(s.ItemLen)) || spec.MulOverflows(per*int64(s.ItemLen), int64(s.Layers)) {
			return spec.Reject(spec.ErrOverflow, a.field, a.pages, "layers*pages*item_len in int64")
		}
		if err := lim.CheckOutput(a.field, per*int64(s.ItemLen)*int64(s.Layers), 1); err != nil {
			return err
		}
	}
	return nil
}

// checkPages validates a chunk's page pairs against the arenas: equal
// lengths, pages in range, distinct dst pages (docs/spec/transfer.md §3.5, property 4).
func (g PerLayerGeometry) checkPages(owned, dst []int64) error {
	if len(owned) != len(dst) {
		return spec.Reject(spec.ErrLengthMismatch, "dst", len(dst), fmt.Sprintf("== len(owned) (%d)", len(owned)))
	}
	for i, p := range owned {
		if p < 0 || p >= int64(g.SrcPages) {
			return spec.Reject(spec.ErrPageOutOfArena, spec.Idx("owned", i), p, fmt.Sprintf("in [0, src_pages=%d)", g.SrcPages))
		}
	}
	seen := map[int64]bool{}
	for i, p := range dst {
		if p < 0 || p >= int64(g.DstPages) {
			return spec.Reject(spec.ErrPageOutOfArena, spec.Idx("dst", i), p, fmt.Sprintf("in [0, dst_pages=%d)", g.DstPages))
		}
		if seen[p] {
			return spec.Reject(spec.ErrDuplicateDstPage, spec.Idx("dst", i), p, "distinct decode pages")
		}
		seen[p] = true
	}
	return nil
}

// PerLayerRun is a script run in progress: the manager, its engine and events.
// The script interpreter and the state-machine tests share it.
type PerLayerRun struct {
	// Geometry is the arena layout.
	Geometry PerLayerGeometry
	// Manager is the manager under test.
	Manager spec.PerLayerManager
	// Engine is the in-memory engine.
	Engine *MemEngine
	// Events is the fake event factory.
	Events *FakeEvents
}

// NewPerLayerRun builds the arenas, engine, events and manager of a validated
// create step. newManager is the twin's constructor; logger may be nil.
func NewPerLayerRun(s spec.PerLayerStep, newManager spec.NewPerLayerManagerFunc, logger *slog.Logger) (*PerLayerRun, error) {
	g := GeometryOf(s)
	src, dst := g.Arenas()
	r := &PerLayerRun{Geometry: g, Engine: NewMemEngine(src, dst, true), Events: &FakeEvents{}}
	m, err := newManager(spec.PerLayerConfig{Hooked: s.Hooked, Group: s.Group}, r.Engine, r.Events, logger)
	if err != nil {
		return nil, err
	}
	r.Manager = m
	return r, nil
}

// Session names the context built by the register step at index step
// (the monolithic step at that index), so a session in the engine log
// leads back to the step that gave its pages.
func Session(room uint64, chunk int64, step int) string {
	return fmt.Sprintf("room%d/chunk%d@%d", room, chunk, step)
}

// Step runs one validated non-create step and returns its result; errors
// are prefixed with steps[index].
func (r *PerLayerRun) Step(s spec.PerLayerStep, index int) spec.PerLayerStepResult {
	res := spec.PerLayerStepResult{Op: s.Op}
	var err error
	m := r.Manager
	switch s.Op {
	case spec.PerLayerRegister:
		build := func() *spec.LayerPlan { return r.Geometry.Plan(Session(s.Room, s.Chunk, index), s.Owned, s.Dst) }
		var ok bool
		if ok, err = m.Register(s.Room, s.Chunk, s.Infos, build); err == nil {
			res.Registered = &ok
		}
	case spec.PerLayerForwardBegin:
		err = m.ForwardBegin()
	case spec.PerLayerForwardEnd:
		err = m.ForwardEnd()
	case spec.PerLayerLayerEnd:
		res.Event, err = m.OnLayerEnd(s.Layer)
	case spec.PerLayerCompleteEvent:
		err = r.Events.Complete(s.Event, s.Fail)
	case spec.PerLayerWorkerStep:
		var w spec.WorkResult
		if w, err = m.WorkerStep(); err == nil {
			res.Work = &w
		}
	case spec.PerLayerEngineComplete:
		err = r.Engine.engineComplete(s.Batch, !s.Fail)
	case spec.PerLayerInject:
		r.Engine.injectFault(s.Fault)
	case spec.PerLayerFinish:
		var f spec.FinishResult
		if f, err = m.Finish(s.Room, s.Chunk); err == nil {
			res.Finish = &f
		}
	case spec.PerLayerRefinish:
		if f, ok := m.Refinish(); ok {
			res.Finish = &f
		}
	case spec.PerLayerDrop:
		res.Drained = new(m.Drop(s.Room))
	case spec.PerLayerHas:
		res.Has = new(m.HasRoom(s.Room))
	case spec.PerLayerMonolithic:
		plan := r.Geometry.Plan(Session(s.Room, s.Chunk, index), s.Owned, s.Dst)
		res.Status = new(MonolithicSend(r.Engine, plan.Session, plan.Blocks))
	}
	if err != nil {
		e := spec.ErrorObjectOf(prefixField(err, spec.Idx("steps", index)+"."))
		return spec.PerLayerStepResult{Op: s.Op, Error: &e}
	}
	return res
}

// RunTransferPerLayerScript runs a script on a manager built by newManager. Both twins
// of transfer.per_layer_script call it with their own constructor, so the
// engine, events and interpreter are shared and the managers are what differs.
func RunTransferPerLayerScript(lim spec.Limits, in spec.TransferPerLayerScriptInput, newManager spec.NewPerLayerManagerFunc) (spec.TransferPerLayerScriptOutput, error) {
	if err := validatePerLayerScript(lim, in); err != nil {
		return spec.TransferPerLayerScriptOutput{}, err
	}
	run, err := NewPerLayerRun(in.Steps[0], newManager, nil)
	if err != nil {
		return spec.TransferPerLayerScriptOutput{}, prefixField(err, "steps[0].")
	}
	defer run.Manager.Close()
	out := spec.TransferPerLayerScriptOutput{Trace: make([]spec.PerLayerStepResult, 0, len(in.Steps))}
	out.Trace = append(out.Trace, spec.PerLayerStepResult{Op: spec.PerLayerCreate})
	for i, s := range in.Steps[1:] {
		field := spec.Idx("steps", i+1)
		if err := lim.Poll(i+1, field); err != nil {
			return spec.TransferPerLayerScriptOutput{}, err
		}
		out.Trace = append(out.Trace, run.Step(s, i+1))
		// Every layer end hands the engine every registered page: the
		// log grows with layers × pages, so it is bounded as it grows
		// (by one step's blocks past the bound at most), not at the end.
		if err := lim.CheckOutput(field, run.Engine.Recorded(), EngineLogItemBytes); err != nil {
			return spec.TransferPerLayerScriptOutput{}, err
		}
	}
	out.State = run.Manager.State()
	out.Calls = run.Engine.Calls()
	if out.Calls == nil {
		out.Calls = []spec.EngineCall{}
	}
	out.Unwaited = run.Engine.Unwaited()
	out.DstDigest = run.Engine.DstDigest()
	return out, nil
}

// TransferPerLayerScript is the reference twin of transfer.per_layer_script (docs/spec/transfer.md §4).
func TransferPerLayerScript(lim spec.Limits, in spec.TransferPerLayerScriptInput) (spec.TransferPerLayerScriptOutput, error) {
	return RunTransferPerLayerScript(lim, in, NewPerLayerManager)
}
