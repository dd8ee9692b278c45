package ref

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// This file holds the per-layer prefill→decode transfer of docs/spec/transfer.md §4:
// the types both twins share, the sentinels, the PerLayerManager interface
// and the reference manager, a plain single-threaded state machine whose
// every step is explicit (the worker pool is WorkerStep, the finish
// deadline is "now"). It is the contract the goroutine manager in fast
// must reproduce step for step in its deterministic mode.

// PerLayerConfig is the manager's configuration (§4.1).
type PerLayerConfig struct {
	// Hooked is H, the number of layers whose write hook fires; in [0, MaxTransferLayers].
	Hooked int `json:"hooked"`
	// Group is K, the layers per submit; >= 1 (1 means per-layer).
	Group int `json:"group"`
}

// IsBoundary reports whether layer l closes a group: every K-th layer and
// the last hooked one (§4.4 OnLayerEnd step 2).
func (c PerLayerConfig) IsBoundary(l int) bool { return (l+1)%c.Group == 0 || l+1 == c.Hooked }

// GroupStart is the first layer of l's group, (l/K)*K.
func (c PerLayerConfig) GroupStart(l int) int { return l / c.Group * c.Group }

// LayerPlan is what build_per_layer_context produced for one chunk (§4.2):
// the engine session and, per transfer entry l in [0, N), its blocks
// (build_layer_blocks). len(Blocks) is the context's N.
type LayerPlan struct {
	// Session names the decode session (and the context in engine logs).
	Session string
	// Blocks[l] are entry l's blocks; may be empty (an empty-layer skip).
	Blocks [][]Block
}

// BuildFunc builds a chunk's plan; nil means "use the monolithic send".
type BuildFunc func() *LayerPlan

// ContextState is the observable state of one context (§4.3).
type ContextState struct {
	// Room is the request's bootstrap room.
	Room uint64 `json:"room"`
	// Chunk is the chunk key (start_send_idx).
	Chunk int64 `json:"chunk"`
	// Session is the plan's session.
	Session string `json:"session"`
	// Layers is N.
	Layers int `json:"layers"`
	// Enqueued are the layers NoteEnqueued accepted, ascending; never nil.
	Enqueued []int `json:"enqueued"`
	// Target is the completion target: |Enqueued| (the count of accepted notes).
	Target int `json:"target"`
	// Submitted are the layers handed to the engine (async or sync), ascending; never nil.
	Submitted []int `json:"submitted"`
	// Processed counts layers the workers are done with.
	Processed int `json:"processed"`
	// Batches are the async batch ids, in submit order; never nil.
	Batches []uint64 `json:"batches"`
	// Failed is set once a failure was recorded.
	Failed bool `json:"failed,omitempty"`
	// Reason is the first failure's reason.
	Reason string `json:"reason,omitempty"`
	// Sealed is set once Finish or Drain started: no more enqueues.
	Sealed bool `json:"sealed,omitempty"`
	// Finished is set once Finish or Drain completed.
	Finished bool `json:"finished,omitempty"`
	// Status is the final status (0 or -1) once Finished.
	Status int `json:"status"`
}

// RoomState is one room's FIFO of contexts, front first.
type RoomState struct {
	// Room is the bootstrap room.
	Room uint64 `json:"room"`
	// Contexts are the registered, unfinished chunks in send order.
	Contexts []ContextState `json:"contexts"`
}

// WorkItemState is one queued work item.
type WorkItemState struct {
	// Room and Chunk name the context.
	Room uint64 `json:"room"`
	// Chunk is the context's chunk key.
	Chunk int64 `json:"chunk"`
	// Session is the context's session (distinguishes an orphaned context).
	Session string `json:"session"`
	// Layers are the newly enqueued layers.
	Layers []int `json:"layers"`
	// Event is the id of the boundary event the item waits on.
	Event int `json:"event"`
}

// PerLayerState is the manager's whole observable state.
type PerLayerState struct {
	// Forward is set between ForwardBegin and ForwardEnd.
	Forward bool `json:"forward"`
	// Builds counts build calls (§4.8.8: a deduplicated Register builds nothing).
	Builds int `json:"builds"`
	// Events counts recorded boundary events.
	Events int `json:"events"`
	// Rooms are the active rooms in activation order; never nil.
	Rooms []RoomState `json:"rooms"`
	// Queue is the work queue, front first; never nil.
	Queue []WorkItemState `json:"queue"`
}

// WorkResult is what one worker step did.
type WorkResult struct {
	// Idle is set when the queue was empty.
	Idle bool `json:"idle,omitempty"`
	// Room and Chunk name the item's context.
	Room uint64 `json:"room,omitempty"`
	// Chunk is the item's chunk key.
	Chunk int64 `json:"chunk,omitempty"`
	// Layers are the item's layers.
	Layers []int `json:"layers,omitempty"`
	// Batch is the async batch id submitted (0: none).
	Batch uint64 `json:"batch,omitempty"`
}

// FinishResult is Manager.Finish's answer (§4.4).
type FinishResult struct {
	// Handled is false when the caller must use the monolithic send.
	Handled bool `json:"handled"`
	// Status is the context's final status (0 or -1) when handled.
	Status int `json:"status"`
	// Chunk is the chunk key of the context that finished (B6 shows here).
	Chunk int64 `json:"chunk"`
	// Session is the finished context's session ("" when not handled).
	Session string `json:"session,omitempty"`
	// Reason is the failure reason when Status != 0.
	Reason string `json:"reason,omitempty"`
}

// PerLayerManager is the per-layer transfer manager of §4.4; both twins
// implement it. Every refused call returns a Reject error and changes nothing.
type PerLayerManager interface {
	// Register registers chunk chunkKey of room before the forward
	// (§4.4). It returns false when the caller must use the monolithic send.
	Register(room uint64, chunkKey int64, nonDummyInfos int, build BuildFunc) (bool, error)
	// HasRoom reports whether the room has a registered, unfinished chunk.
	HasRoom(room uint64) bool
	// ForwardBegin starts a forward (Register is refused until ForwardEnd).
	ForwardBegin() error
	// ForwardEnd ends the forward.
	ForwardEnd() error
	// OnLayerEnd is the layer-end notifier (§4.4); it returns the recorded
	// event id at a boundary with active contexts, else 0. It never blocks.
	OnLayerEnd(l int) (int, error)
	// WorkerStep runs the front work item (deterministic mode only).
	WorkerStep() (WorkResult, error)
	// Finish finishes the room's front chunk if it is chunkKey (§4.4).
	Finish(room uint64, chunkKey int64) (FinishResult, error)
	// Refinish calls Finish again on the most recently finished context
	// (§4.8.9 idempotence); false when none finished yet.
	Refinish() (FinishResult, bool)
	// Drop drains every context of room (§4.4) and returns how many.
	Drop(room uint64) int
	// State returns the observable state.
	State() PerLayerState
	// Close stops the workers (a no-op in deterministic mode).
	Close()
}

// NewPerLayerManagerFunc constructs a manager in deterministic mode over
// engine and events, logging to logger (nil: discard).
type NewPerLayerManagerFunc func(cfg PerLayerConfig, engine Engine, events EventFactory, logger *slog.Logger) (PerLayerManager, error)

// Failure reasons, written once so both twins report equal strings.

// ReasonHookOutOfRange is NoteEnqueued's fail-closed reason (§4.3).
func ReasonHookOutOfRange(l, n int) string {
	return fmt.Sprintf("hook layer %d out of range N=%d", l, n)
}

// ReasonEventWait is SubmitGroup's event-failure reason (§4.3 step 3).
func ReasonEventWait(err error) string { return "event wait: " + err.Error() }

// ReasonSubmitFailed is SubmitGroup's id-0 reason (§4.3 step 7).
const ReasonSubmitFailed = "submit failed"

// ReasonTimeout is Finish's timeout reason (§4.3 step 2, §9).
func ReasonTimeout(processed, target int) string {
	return fmt.Sprintf("finish TIMEOUT processed=%d/%d", processed, target)
}

// ReasonSyncFailed is Finish's fallback failure reason (§4.3 step 3).
func ReasonSyncFailed(st int) string { return fmt.Sprintf("fallback sync transfer status %d", st) }

// ReasonWaitFailed is Finish's WaitBatches failure reason (§4.3 step 4).
func ReasonWaitFailed(st int) string { return fmt.Sprintf("wait batches status %d", st) }

// ReasonDropped is Drain's reason (§4.3).
const ReasonDropped = "dropped"

// FinishTimings are the durations §9's DEBUG breakdown reports.
type FinishTimings struct {
	// WaitEnqueued is the wait for processed >= target.
	WaitEnqueued time.Duration
	// Fallback is the sync transfer of the missed layers.
	Fallback time.Duration
	// WaitBatches is the wait on the async batches.
	WaitBatches time.Duration
}

// LogFinish emits §9's records for one completed Finish: DEBUG timing and
// completion lines on success, exactly one WARNING otherwise. Written once
// so both twins log alike; the clock reaches only the log, never a result.
func LogFinish(logger *slog.Logger, s ContextState, async, sync int, t FinishTimings) {
	if logger == nil {
		return
	}
	ctx := context.Background()
	if s.Status == 0 {
		logger.Log(ctx, slog.LevelDebug, "per-layer finish timing", "room", s.Room, "chunk", s.Chunk,
			"wait_enqueued", t.WaitEnqueued, "fallback_sync", t.Fallback, "wait_batches", t.WaitBatches)
		logger.Log(ctx, slog.LevelDebug, "per-layer finish done", "room", s.Room, "chunk", s.Chunk,
			"layers_async", async, "layers_sync", sync, "batches", len(s.Batches))
		return
	}
	logger.Log(ctx, slog.LevelWarn, "per-layer finish failed", "room", s.Room, "chunk", s.Chunk,
		"status", s.Status, "processed", fmt.Sprintf("%d/%d", s.Processed, s.Target),
		"batches", len(s.Batches), "reason", s.Reason)
}

// LogDrain emits Drain's DEBUG record (§9).
func LogDrain(logger *slog.Logger, s ContextState) {
	if logger != nil {
		logger.Log(context.Background(), slog.LevelDebug, "per-layer context drained", "room", s.Room,
			"chunk", s.Chunk, "batches", len(s.Batches))
	}
}

// ---- the reference manager ----

type refContext struct {
	room      uint64
	chunk     int64
	plan      LayerPlan
	enqueued  []bool
	target    int
	submitted []bool
	processed int
	batches   []uint64
	failed    bool
	reason    string
	sealed    bool
	finished  bool
	status    int
	async     int
	sync      int
}

type refItem struct {
	ctx    *refContext
	layers []int
	ev     Event
}

type refManager struct {
	cfg      PerLayerConfig
	engine   Engine
	events   EventFactory
	logger   *slog.Logger
	forward  bool
	builds   int
	nEvents  int
	rooms    []uint64
	active   map[uint64][]*refContext
	queue    []refItem
	lastDone *refContext
}

// NewPerLayerManager returns the reference manager (deterministic mode
// only: WorkerStep runs the workers, Finish's deadline is "now").
func NewPerLayerManager(cfg PerLayerConfig, engine Engine, events EventFactory, logger *slog.Logger) (PerLayerManager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &refManager{cfg: cfg, engine: engine, events: events, logger: logger, active: map[uint64][]*refContext{}}, nil
}

// Register is §4.4 Register: exactly one non-dummy info, dedup by (room,
// chunk) without a build, append at the back, never overwrite.
func (m *refManager) Register(room uint64, chunkKey int64, infos int, build BuildFunc) (bool, error) {
	if err := CheckRegister(m.forward, chunkKey, infos); err != nil {
		return false, err
	}
	if infos != 1 {
		return false, nil
	}
	for _, c := range m.active[room] {
		if c.chunk == chunkKey {
			return true, nil // the same chunk: dedup, no build (§4.8.8)
		}
	}
	m.builds++
	plan := build()
	if plan == nil {
		return false, nil
	}
	n := len(plan.Blocks)
	c := &refContext{room: room, chunk: chunkKey, plan: *plan, enqueued: make([]bool, n), submitted: make([]bool, n)}
	if len(m.active[room]) == 0 {
		m.rooms = append(m.rooms, room)
	}
	m.active[room] = append(m.active[room], c) // never overwrite
	return true, nil
}

// HasRoom is §4.4 HasRoom.
func (m *refManager) HasRoom(room uint64) bool { return len(m.active[room]) > 0 }

// ForwardBegin sets forwardInProgress (§4.4 precondition of Register).
func (m *refManager) ForwardBegin() error {
	if m.forward {
		return Reject(ErrForwardState, "forward", true, "forward_begin outside a forward")
	}
	m.forward = true
	return nil
}

// ForwardEnd clears forwardInProgress.
func (m *refManager) ForwardEnd() error {
	if !m.forward {
		return Reject(ErrForwardState, "forward", false, "forward_end inside a forward")
	}
	m.forward = false
	return nil
}

// OnLayerEnd is §4.4 OnLayerEnd: at a boundary, one event shared by every
// context and one work item per context that newly enqueued a layer.
func (m *refManager) OnLayerEnd(l int) (int, error) {
	if err := CheckOnLayerEnd(m.cfg, m.forward, l); err != nil {
		return 0, err
	}
	if len(m.rooms) == 0 || !m.cfg.IsBoundary(l) {
		return 0, nil
	}
	ev := m.events.Record()
	m.nEvents++
	for _, room := range m.rooms {
		for _, c := range m.active[room] {
			var newly []int
			for x := m.cfg.GroupStart(l); x <= l; x++ {
				if c.noteEnqueued(x) {
					newly = append(newly, x)
				}
			}
			if len(newly) > 0 {
				m.queue = append(m.queue, refItem{ctx: c, layers: newly, ev: ev})
			}
		}
	}
	return ev.ID(), nil
}

// noteEnqueued is §4.3 NoteEnqueued.
func (c *refContext) noteEnqueued(l int) bool {
	if c.sealed {
		return false
	}
	if l < 0 || l >= len(c.enqueued) {
		c.fail(ReasonHookOutOfRange(l, len(c.enqueued)))
		return false
	}
	if c.enqueued[l] {
		return false
	}
	c.enqueued[l] = true
	c.target++
	return true
}

func (c *refContext) fail(reason string) {
	if !c.failed {
		c.failed, c.reason = true, reason
	}
}

// WorkerStep is one worker of §4.3 SubmitGroup on the front item; an item
// whose event has not completed is refused and stays queued.
func (m *refManager) WorkerStep() (WorkResult, error) {
	if len(m.queue) == 0 {
		return WorkResult{Idle: true}, nil
	}
	it := m.queue[0]
	if !it.ev.Query() {
		return WorkResult{}, Reject(ErrEventPending, "event", it.ev.ID(), "a completed event")
	}
	m.queue = m.queue[1:]
	id := it.ctx.submitGroup(m.engine, it.layers, it.ev)
	return WorkResult{Room: it.ctx.room, Chunk: it.ctx.chunk, Layers: it.layers, Batch: id}, nil
}

// submitGroup is §4.3 SubmitGroup, steps 1–8; it returns the batch id
// submitted, or 0.
func (c *refContext) submitGroup(engine Engine, layers []int, ev Event) uint64 {
	defer func() { c.processed += len(layers) }()
	if c.failed || c.finished {
		return 0
	}
	if err := ev.Wait(0); err != nil {
		c.fail(ReasonEventWait(err))
		return 0
	}
	var blocks []Block
	for _, l := range layers {
		if !c.submitted[l] {
			c.submitted[l] = true
			c.async++
			blocks = append(blocks, c.plan.Blocks[l]...)
		}
	}
	if len(blocks) == 0 {
		return 0
	}
	id := engine.SubmitAsync(c.plan.Session, blocks)
	if id == 0 {
		c.fail(ReasonSubmitFailed)
		return 0
	}
	c.batches = append(c.batches, id)
	return id
}

// Finish is §4.4 Finish with the chunk-key hardening.
func (m *refManager) Finish(room uint64, chunkKey int64) (FinishResult, error) {
	dq := m.active[room]
	if len(dq) == 0 || dq[0].chunk > chunkKey {
		return FinishResult{Chunk: chunkKey}, nil
	}
	if dq[0].chunk < chunkKey {
		return FinishResult{}, Reject(ErrFinishOrder, "chunk", chunkKey, fmt.Sprintf("the room's front chunk %d", dq[0].chunk))
	}
	c := m.popFront(room)
	st := c.finish(m.engine, m.logger)
	m.lastDone = c
	return FinishResult{Handled: true, Status: st, Chunk: c.chunk, Session: c.plan.Session, Reason: c.reason}, nil
}

func (m *refManager) popFront(room uint64) *refContext {
	dq := m.active[room]
	c := dq[0]
	if len(dq) == 1 {
		delete(m.active, room)
		m.rooms = slices.DeleteFunc(m.rooms, func(r uint64) bool { return r == room })
	} else {
		m.active[room] = dq[1:]
	}
	return c
}

// finish is §4.3 Finish with the deterministic deadline: the driver runs
// no worker while Finish waits, so work still pending is a timeout.
func (c *refContext) finish(engine Engine, logger *slog.Logger) int {
	if c.finished {
		return c.status
	}
	c.sealed = true
	if c.processed < c.target {
		c.fail(ReasonTimeout(c.processed, c.target))
	}
	if !c.failed {
		var blocks []Block
		for l := range c.submitted {
			if !c.submitted[l] {
				c.submitted[l] = true
				c.sync++
				blocks = append(blocks, c.plan.Blocks[l]...)
			}
		}
		if len(blocks) > 0 {
			if st := engine.SyncTransfer(c.plan.Session, blocks); st != 0 {
				c.fail(ReasonSyncFailed(st))
			}
		}
	}
	if len(c.batches) > 0 {
		if st := engine.WaitBatches(c.batches); st != 0 {
			c.fail(ReasonWaitFailed(st))
		}
	}
	c.finished = true
	if c.failed {
		c.status = -1
	}
	LogFinish(logger, c.state(), c.async, c.sync, FinishTimings{})
	return c.status
}

// Refinish re-finishes the last finished context (§4.8.9).
func (m *refManager) Refinish() (FinishResult, bool) {
	c := m.lastDone
	if c == nil {
		return FinishResult{}, false
	}
	st := c.finish(m.engine, m.logger)
	return FinishResult{Handled: true, Status: st, Chunk: c.chunk, Session: c.plan.Session, Reason: c.reason}, true
}

// Drop is §4.4 Drop: every context of the room drained, front first.
func (m *refManager) Drop(room uint64) int {
	n := 0
	for m.HasRoom(room) {
		c := m.popFront(room)
		c.drain(m.engine, m.logger)
		n++
	}
	return n
}

// drain is §4.3 Drain: fail, seal, wait every batch (status ignored), finish −1.
func (c *refContext) drain(engine Engine, logger *slog.Logger) {
	c.fail(ReasonDropped)
	c.sealed = true
	if len(c.batches) > 0 {
		engine.WaitBatches(c.batches)
	}
	c.finished, c.status = true, -1
	LogDrain(logger, c.state())
}

// State returns the observable state.
func (m *refManager) State() PerLayerState {
	s := PerLayerState{Forward: m.forward, Builds: m.builds, Events: m.nEvents, Rooms: []RoomState{}, Queue: []WorkItemState{}}
	for _, room := range m.rooms {
		rs := RoomState{Room: room, Contexts: []ContextState{}}
		for _, c := range m.active[room] {
			rs.Contexts = append(rs.Contexts, c.state())
		}
		s.Rooms = append(s.Rooms, rs)
	}
	for _, it := range m.queue {
		s.Queue = append(s.Queue, WorkItemState{Room: it.ctx.room, Chunk: it.ctx.chunk, Session: it.ctx.plan.Session,
			Layers: slices.Clone(it.layers), Event: it.ev.ID()})
	}
	return s
}

func (c *refContext) state() ContextState {
	return ContextState{Room: c.room, Chunk: c.chunk, Session: c.plan.Session, Layers: len(c.enqueued),
		Enqueued: setBits(c.enqueued), Target: c.target, Submitted: setBits(c.submitted), Processed: c.processed,
		Batches: append([]uint64{}, c.batches...), Failed: c.failed, Reason: c.reason, Sealed: c.sealed,
		Finished: c.finished, Status: c.status}
}

func setBits(b []bool) []int {
	out := []int{}
	for i, v := range b {
		if v {
			out = append(out, i)
		}
	}
	return out
}

// Close is a no-op: the reference manager runs no goroutine.
func (m *refManager) Close() {}
