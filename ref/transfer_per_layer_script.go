package ref

import (
	"fmt"
	"log/slog"
	"slices"
)

// The transfer.per_layer_script op (docs/spec/transfer.md §4): a list of the §4.8
// operations run on one manager in deterministic mode over the in-memory
// engine and fake events. The output is the trace, the manager's final
// state, the engine's call log and the digest of the destination arena, so
// the stateful manager gets fixtures, an HTTP endpoint and the datadriven
// scenarios of the historic bugs.

// Per-layer script step kinds.
const (
	// PerLayerCreate builds the arenas and the manager (layers N, hooked H, group K, item_len, src_pages, dst_pages).
	PerLayerCreate = "create"
	// PerLayerRegister registers a chunk (room, chunk, infos, owned, dst).
	PerLayerRegister = "register"
	// PerLayerForwardBegin starts a forward.
	PerLayerForwardBegin = "forward_begin"
	// PerLayerForwardEnd ends the forward.
	PerLayerForwardEnd = "forward_end"
	// PerLayerLayerEnd is the layer-end hook (layer).
	PerLayerLayerEnd = "layer_end"
	// PerLayerCompleteEvent completes a recorded event (event, fail).
	PerLayerCompleteEvent = "complete_event"
	// PerLayerWorkerStep runs the front work item.
	PerLayerWorkerStep = "worker_step"
	// PerLayerEngineComplete completes an async batch (batch, fail).
	PerLayerEngineComplete = "engine_complete"
	// PerLayerInject arms an engine fault (fault).
	PerLayerInject = "inject"
	// PerLayerFinish is Manager.Finish (room, chunk).
	PerLayerFinish = "finish"
	// PerLayerRefinish finishes the last finished context again.
	PerLayerRefinish = "refinish"
	// PerLayerDrop is Manager.Drop (room).
	PerLayerDrop = "drop"
	// PerLayerHas is Manager.HasRoom (room).
	PerLayerHas = "has"
	// PerLayerMonolithic is the monolithic send of a chunk (room, chunk, owned, dst): the §4.4 fallback path.
	PerLayerMonolithic = "monolithic"
)

var perLayerOps = []string{PerLayerCreate, PerLayerRegister, PerLayerForwardBegin, PerLayerForwardEnd, PerLayerLayerEnd, PerLayerCompleteEvent,
	PerLayerWorkerStep, PerLayerEngineComplete, PerLayerInject, PerLayerFinish, PerLayerRefinish, PerLayerDrop, PerLayerHas, PerLayerMonolithic}

// ErrPageOutOfArena: a register step names a page outside the arena's pages per layer.
var ErrPageOutOfArena = NewSentinel("page_out_of_arena", "page outside the arena")

// PerLayerStep is one step of a per-layer script. Which fields apply depends on Op.
type PerLayerStep struct {
	// Op is one of the PerLayer* step kinds.
	Op string `json:"op"`
	// Layers is N, the transfer entries per context (create).
	Layers int `json:"layers,omitzero"`
	// Hooked is H (create).
	Hooked int `json:"hooked,omitzero"`
	// Group is K (create).
	Group int `json:"group,omitzero"`
	// ItemLen is the bytes per page (create).
	ItemLen int `json:"item_len,omitzero"`
	// SrcPages and DstPages are the pages per layer of each arena (create).
	SrcPages int `json:"src_pages,omitzero"`
	// DstPages is the decode arena's pages per layer (create).
	DstPages int `json:"dst_pages,omitzero"`
	// Room is the bootstrap room (register, finish, drop, has, monolithic).
	Room uint64 `json:"room,omitzero"`
	// Chunk is the chunk key (register, finish, monolithic).
	Chunk int64 `json:"chunk,omitzero"`
	// Infos is the number of non-dummy decode infos of the room (register).
	Infos int `json:"infos,omitzero"`
	// Owned are the CP-filtered prefill pages (register, monolithic).
	Owned []int64 `json:"owned,omitzero"`
	// Dst are the decode pages receiving Owned (register, monolithic).
	Dst []int64 `json:"dst,omitzero"`
	// Layer is the hooked layer (layer_end).
	Layer int `json:"layer,omitzero"`
	// Event is the event id (complete_event).
	Event int `json:"event,omitzero"`
	// Batch is the batch id (engine_complete).
	Batch uint64 `json:"batch,omitzero"`
	// Fail completes the event or batch with a failure.
	Fail bool `json:"fail,omitzero"`
	// Fault is the armed engine fault (inject).
	Fault EngineFault `json:"fault,omitzero"`
}

// TransferPerLayerScriptInput is the input of transfer.per_layer_script.
type TransferPerLayerScriptInput struct {
	// Steps run in order; the first must be a create.
	Steps []PerLayerStep `json:"steps"`
}

// PerLayerStepResult is the result of one step: at most one result field, or an error.
type PerLayerStepResult struct {
	// Op echoes the step's op.
	Op string `json:"op"`
	// Registered is Register's answer.
	Registered *bool `json:"registered,omitempty"`
	// Event is the event a boundary layer_end recorded.
	Event int `json:"event,omitempty"`
	// Work is what a worker step did.
	Work *WorkResult `json:"work,omitempty"`
	// Finish is what finish / refinish returned.
	Finish *FinishResult `json:"finish,omitempty"`
	// Drained is the number of contexts a drop drained.
	Drained *int `json:"drained,omitempty"`
	// Has is HasRoom's answer.
	Has *bool `json:"has,omitempty"`
	// Status is a monolithic send's status.
	Status *int `json:"status,omitempty"`
	// Error is the canonical rejection of the step (nothing changed).
	Error *ErrorObject `json:"error,omitempty"`
}

// TransferPerLayerScriptOutput is the output of transfer.per_layer_script.
type TransferPerLayerScriptOutput struct {
	// Trace has one result per step.
	Trace []PerLayerStepResult `json:"trace"`
	// State is the manager's final state.
	State PerLayerState `json:"state"`
	// Calls is the engine's call log, in call order; never nil.
	Calls []EngineCall `json:"calls"`
	// Unwaited are the async batch ids never listed by a wait; never nil.
	Unwaited []uint64 `json:"unwaited"`
	// DstDigest is the hex SHA-256 of the final destination arena.
	DstDigest string `json:"dst_digest"`
}

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
func (g PerLayerGeometry) Plan(session string, owned, dst []int64) *LayerPlan {
	runs := groupRuns(owned, dst)
	il := uint64(g.ItemLen)
	p := &LayerPlan{Session: session, Blocks: make([][]Block, g.Layers)}
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
func GeometryOf(s PerLayerStep) PerLayerGeometry {
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
func validatePerLayerScript(lim Limits, in TransferPerLayerScriptInput) error {
	if len(in.Steps) == 0 || in.Steps[0].Op != PerLayerCreate {
		op := ""
		if len(in.Steps) > 0 {
			op = in.Steps[0].Op
		}
		return Reject(ErrScriptOrder, "steps[0].op", op, `"create"`)
	}
	var g PerLayerGeometry
	for i, s := range in.Steps {
		at := Idx("steps", i) + "."
		if !slices.Contains(perLayerOps, s.Op) {
			return Reject(ErrBadEnum, at+"op", s.Op, "one of create, register, forward_begin, forward_end, layer_end, complete_event, worker_step, engine_complete, inject, finish, refinish, drop, has, monolithic")
		}
		switch s.Op {
		case PerLayerCreate:
			if i > 0 {
				return Reject(ErrScriptOrder, at+"op", s.Op, "create only as the first step")
			}
			if err := validatePerLayerCreate(lim, s); err != nil {
				return prefixField(err, at)
			}
			g = GeometryOf(s)
		case PerLayerRegister, PerLayerMonolithic:
			if err := g.checkPages(s.Owned, s.Dst); err != nil {
				return prefixField(err, at)
			}
		case PerLayerInject:
			if err := s.Fault.validate(at + "fault"); err != nil {
				return err
			}
		}
	}
	return nil
}

func validatePerLayerCreate(lim Limits, s PerLayerStep) error {
	if s.Layers < 1 || s.Layers > MaxTransferLayers {
		return Reject(ErrBadNumLayers, "layers", s.Layers, fmt.Sprintf("in [1, %d]", MaxTransferLayers))
	}
	if err := (PerLayerConfig{Hooked: s.Hooked, Group: s.Group}).Validate(); err != nil {
		return err
	}
	if s.ItemLen < 1 {
		return Reject(ErrZeroItemLen, "item_len", s.ItemLen, ">= 1")
	}
	if s.SrcPages < 1 {
		return Reject(ErrNegative, "src_pages", s.SrcPages, ">= 1")
	}
	if s.DstPages < 1 {
		return Reject(ErrNegative, "dst_pages", s.DstPages, ">= 1")
	}
	for _, a := range []struct {
		field string
		pages int
	}{{"src_pages", s.SrcPages}, {"dst_pages", s.DstPages}} {
		per := int64(a.pages)
		if MulOverflows(per, int64(s.ItemLen)) || MulOverflows(per*int64(s.ItemLen), int64(s.Layers)) {
			return Reject(ErrOverflow, a.field, a.pages, "layers*pages*item_len in int64")
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
		return Reject(ErrLengthMismatch, "dst", len(dst), fmt.Sprintf("== len(owned) (%d)", len(owned)))
	}
	for i, p := range owned {
		if p < 0 || p >= int64(g.SrcPages) {
			return Reject(ErrPageOutOfArena, Idx("owned", i), p, fmt.Sprintf("in [0, src_pages=%d)", g.SrcPages))
		}
	}
	seen := map[int64]bool{}
	for i, p := range dst {
		if p < 0 || p >= int64(g.DstPages) {
			return Reject(ErrPageOutOfArena, Idx("dst", i), p, fmt.Sprintf("in [0, dst_pages=%d)", g.DstPages))
		}
		if seen[p] {
			return Reject(ErrDuplicateDstPage, Idx("dst", i), p, "distinct decode pages")
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
	Manager PerLayerManager
	// Engine is the in-memory engine.
	Engine *MemEngine
	// Events is the fake event factory.
	Events *FakeEvents
}

// NewPerLayerRun builds the arenas, engine, events and manager of a validated
// create step. newManager is the twin's constructor; logger may be nil.
func NewPerLayerRun(s PerLayerStep, newManager NewPerLayerManagerFunc, logger *slog.Logger) (*PerLayerRun, error) {
	g := GeometryOf(s)
	src, dst := g.Arenas()
	r := &PerLayerRun{Geometry: g, Engine: NewMemEngine(src, dst, true), Events: &FakeEvents{}}
	m, err := newManager(PerLayerConfig{Hooked: s.Hooked, Group: s.Group}, r.Engine, r.Events, logger)
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
func (r *PerLayerRun) Step(s PerLayerStep, index int) PerLayerStepResult {
	res := PerLayerStepResult{Op: s.Op}
	var err error
	m := r.Manager
	switch s.Op {
	case PerLayerRegister:
		build := func() *LayerPlan { return r.Geometry.Plan(Session(s.Room, s.Chunk, index), s.Owned, s.Dst) }
		var ok bool
		if ok, err = m.Register(s.Room, s.Chunk, s.Infos, build); err == nil {
			res.Registered = &ok
		}
	case PerLayerForwardBegin:
		err = m.ForwardBegin()
	case PerLayerForwardEnd:
		err = m.ForwardEnd()
	case PerLayerLayerEnd:
		res.Event, err = m.OnLayerEnd(s.Layer)
	case PerLayerCompleteEvent:
		err = r.Events.Complete(s.Event, s.Fail)
	case PerLayerWorkerStep:
		var w WorkResult
		if w, err = m.WorkerStep(); err == nil {
			res.Work = &w
		}
	case PerLayerEngineComplete:
		err = r.Engine.engineComplete(s.Batch, !s.Fail)
	case PerLayerInject:
		r.Engine.injectFault(s.Fault)
	case PerLayerFinish:
		var f FinishResult
		if f, err = m.Finish(s.Room, s.Chunk); err == nil {
			res.Finish = &f
		}
	case PerLayerRefinish:
		if f, ok := m.Refinish(); ok {
			res.Finish = &f
		}
	case PerLayerDrop:
		res.Drained = new(m.Drop(s.Room))
	case PerLayerHas:
		res.Has = new(m.HasRoom(s.Room))
	case PerLayerMonolithic:
		plan := r.Geometry.Plan(Session(s.Room, s.Chunk, index), s.Owned, s.Dst)
		res.Status = new(MonolithicSend(r.Engine, plan.Session, plan.Blocks))
	}
	if err != nil {
		e := ErrorObjectOf(prefixField(err, Idx("steps", index)+"."))
		return PerLayerStepResult{Op: s.Op, Error: &e}
	}
	return res
}

// RunTransferPerLayerScript runs a script on a manager built by newManager. Both twins
// of transfer.per_layer_script call it with their own constructor, so the
// engine, events and interpreter are shared and the managers are what differs.
func RunTransferPerLayerScript(lim Limits, in TransferPerLayerScriptInput, newManager NewPerLayerManagerFunc) (TransferPerLayerScriptOutput, error) {
	if err := validatePerLayerScript(lim, in); err != nil {
		return TransferPerLayerScriptOutput{}, err
	}
	run, err := NewPerLayerRun(in.Steps[0], newManager, nil)
	if err != nil {
		return TransferPerLayerScriptOutput{}, prefixField(err, "steps[0].")
	}
	defer run.Manager.Close()
	out := TransferPerLayerScriptOutput{Trace: make([]PerLayerStepResult, 0, len(in.Steps))}
	out.Trace = append(out.Trace, PerLayerStepResult{Op: PerLayerCreate})
	for i, s := range in.Steps[1:] {
		out.Trace = append(out.Trace, run.Step(s, i+1))
	}
	out.State = run.Manager.State()
	out.Calls = run.Engine.Calls()
	if out.Calls == nil {
		out.Calls = []EngineCall{}
	}
	out.Unwaited = run.Engine.Unwaited()
	out.DstDigest = run.Engine.DstDigest()
	return out, nil
}

// TransferPerLayerScript is the reference twin of transfer.per_layer_script (docs/spec/transfer.md §4).
func TransferPerLayerScript(lim Limits, in TransferPerLayerScriptInput) (TransferPerLayerScriptOutput, error) {
	return RunTransferPerLayerScript(lim, in, NewPerLayerManager)
}
