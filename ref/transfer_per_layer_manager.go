package ref

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/kvtwin/kvtwin/spec"
)

// This file holds the per-layer prefill→decode transfer of docs/spec/transfer.md §4:
// the reference manager of spec.PerLayerManager (package spec holds the
// types both twins share, the sentinels and the interface), a plain
// single-threaded state machine whose every step is explicit (the worker
// pool is WorkerStep, the finish deadline is "now"). It is the contract the goroutine manager in fast
// must reproduce step for step in its deterministic mode.

// Failure reasons, written once so both twins report equal strings.

// ReasonHookOutOfRange is NoteEnqueued's fail-closed reason (§4.3).
func ReasonHookOutOfRange(l, n int) string {
	return fmt.Sprintf("hook layer %d out of range N=%d", l, n)
}

// ReasonEventWait is SubmitGroup's event-failure reason (§4.3 step 3).
func ReasonEventWait(err error) string { return "event wait: " + err.Error() }

// ReasonTimeout is Finish's timeout reason (§4.3 step 2, §9).
func ReasonTimeout(processed, target int) string {
	return fmt.Sprintf("finish TIMEOUT processed=%d/%d", processed, target)
}

// ReasonSyncFailed is Finish's fallback failure reason (§4.3 step 3).
func ReasonSyncFailed(st int) string { return fmt.Sprintf("fallback sync transfer status %d", st) }

// ReasonWaitFailed is Finish's WaitBatches failure reason (§4.3 step 4).
func ReasonWaitFailed(st int) string { return fmt.Sprintf("wait batches status %d", st) }

// LogFinish emits §9's records for one completed Finish: DEBUG timing and
// completion lines on success, exactly one WARNING otherwise. Written once
// so both twins log alike; the clock reaches only the log, never a result.
func LogFinish(logger *slog.Logger, s spec.ContextState, async, sync int, t spec.FinishTimings) {
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
func LogDrain(logger *slog.Logger, s spec.ContextState) {
	if logger != nil {
		logger.Log(context.Background(), slog.LevelDebug, "per-layer context drained", "room", s.Room,
			"chunk", s.Chunk, "batches", len(s.Batches))
	}
}

// ---- the reference manager ----

type refContext struct {
	room      uint64
	chunk     int64
	plan      spec.LayerPlan
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
	ev     spec.Event
}

type refManager struct {
	cfg      spec.PerLayerConfig
	engine   spec.Engine
	events   spec.EventFactory
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
func NewPerLayerManager(cfg spec.PerLayerConfig, engine spec.Engine, events spec.EventFactory, logger *slog.Logger) (spec.PerLayerManager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &refManager{cfg: cfg, engine: engine, events: events, logger: logger, active: map[uint64][]*refContext{}}, nil
}

// Register is §4.4 Register: exactly one non-dummy info, dedup by (room,
// chunk) without a build, append at the back, never overwrite.
func (m *refManager) Register(room uint64, chunkKey int64, infos int, build spec.BuildFunc) (bool, error) {
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
		return spec.Reject(spec.ErrForwardState, "forward", true, "forward_begin outside a forward")
	}
	m.forward = true
	return nil
}

// ForwardEnd clears forwardInProgress.
func (m *refManager) ForwardEnd() error {
	if !m.forward {
		return spec.Reject(spec.ErrForwardState, "forward", false, "forward_end inside a forward")
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
func (m *refManager) WorkerStep() (spec.WorkResult, error) {
	if len(m.queue) == 0 {
		return spec.WorkResult{Idle: true}, nil
	}
	it := m.queue[0]
	if !it.ev.Query() {
		return spec.WorkResult{}, spec.Reject(spec.ErrEventPending, "event", it.ev.ID(), "a completed event")
	}
	m.queue = m.queue[1:]
	id := it.ctx.submitGroup(m.engine, it.layers, it.ev)
	return spec.WorkResult{Room: it.ctx.room, Chunk: it.ctx.chunk, Layers: it.layers, Batch: id}, nil
}

// submitGroup is §4.3 SubmitGroup, steps 1–8; it returns the batch id
// submitted, or 0.
func (c *refContext) submitGroup(engine spec.Engine, layers []int, ev spec.Event) uint64 {
	defer func() { c.processed += len(layers) }()
	if c.failed || c.finished {
		return 0
	}
	if err := ev.Wait(0); err != nil {
		c.fail(ReasonEventWait(err))
		return 0
	}
	var blocks []spec.Block
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
		c.fail(spec.ReasonSubmitFailed)
		return 0
	}
	c.batches = append(c.batches, id)
	return id
}

// Finish is §4.4 Finish with the chunk-key hardening.
func (m *refManager) Finish(room uint64, chunkKey int64) (spec.FinishResult, error) {
	dq := m.active[room]
	if len(dq) == 0 || dq[0].chunk > chunkKey {
		return spec.FinishResult{Chunk: chunkKey}, nil
	}
	if dq[0].chunk < chunkKey {
		return spec.FinishResult{}, spec.Reject(spec.ErrFinishOrder, "chunk", chunkKey, fmt.Sprintf("the room's front chunk %d", dq[0].chunk))
	}
	c := m.popFront(room)
	st := c.finish(m.engine, m.logger)
	m.lastDone = c
	return spec.FinishResult{Handled: true, Status: st, Chunk: c.chunk, Session: c.plan.Session, Reason: c.reason}, nil
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
func (c *refContext) finish(engine spec.Engine, logger *slog.Logger) int {
	if c.finished {
		return c.status
	}
	c.sealed = true
	if c.processed < c.target {
		c.fail(ReasonTimeout(c.processed, c.target))
	}
	if !c.failed {
		var blocks []spec.Block
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
	LogFinish(logger, c.state(), c.async, c.sync, spec.FinishTimings{})
	return c.status
}

// Refinish re-finishes the last finished context (§4.8.9).
func (m *refManager) Refinish() (spec.FinishResult, bool) {
	c := m.lastDone
	if c == nil {
		return spec.FinishResult{}, false
	}
	st := c.finish(m.engine, m.logger)
	return spec.FinishResult{Handled: true, Status: st, Chunk: c.chunk, Session: c.plan.Session, Reason: c.reason}, true
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
func (c *refContext) drain(engine spec.Engine, logger *slog.Logger) {
	c.fail(spec.ReasonDropped)
	c.sealed = true
	if len(c.batches) > 0 {
		engine.WaitBatches(c.batches)
	}
	c.finished, c.status = true, -1
	LogDrain(logger, c.state())
}

// State returns the observable state.
func (m *refManager) State() spec.PerLayerState {
	s := spec.PerLayerState{Forward: m.forward, Builds: m.builds, Events: m.nEvents, Rooms: []spec.RoomState{}, Queue: []spec.WorkItemState{}}
	for _, room := range m.rooms {
		rs := spec.RoomState{Room: room, Contexts: []spec.ContextState{}}
		for _, c := range m.active[room] {
			rs.Contexts = append(rs.Contexts, c.state())
		}
		s.Rooms = append(s.Rooms, rs)
	}
	for _, it := range m.queue {
		s.Queue = append(s.Queue, spec.WorkItemState{Room: it.ctx.room, Chunk: it.ctx.chunk, Session: it.ctx.plan.Session,
			Layers: slices.Clone(it.layers), Event: it.ev.ID()})
	}
	return s
}

func (c *refContext) state() spec.ContextState {
	return spec.ContextState{Room: c.room, Chunk: c.chunk, Session: c.plan.Session, Layers: len(c.enqueued),
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
