package fast

import (
	"log/slog"
	"math/bits"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// This file is the production per-layer transfer manager of docs/spec/transfer.md
// §4: a sync.Mutex over the rooms and an unbounded slice-backed work queue
// with a sync.Cond, W worker goroutines, per-context locks and condition
// variables, and a layer-end notifier that never blocks and does not
// allocate (a non-boundary layer is a few compares and an atomic load).
// With Workers = 0 it runs in deterministic mode (§4.9): the driver runs
// the workers one item at a time with WorkerStep and Finish's deadline is
// "now", so the script op and the state machine reproduce ref step for step.

// defaultFinishTimeout is the seed's finish timeout (§4.1).
const defaultFinishTimeout = 30 * time.Second

// perLayerOptions configures a PerLayerManager built by newPerLayerManager.
type perLayerOptions struct {
	// Config holds H and K.
	Config spec.PerLayerConfig
	// Engine moves the blocks.
	Engine spec.Engine
	// Events records one event per boundary.
	Events spec.EventFactory
	// Workers is W; 0 selects the deterministic mode.
	Workers int
	// Timeout bounds Finish's wait and each event wait in the real mode
	// (default defaultFinishTimeout).
	Timeout time.Duration
	// Logger receives §9's records; nil discards them.
	Logger *slog.Logger
}

type workItem struct {
	ctx    *perLayerCtx
	layers []int
	ev     spec.Event
}

// PerLayerManager is the per-layer transfer manager (docs/spec/transfer.md §4.4). Its
// methods are safe for concurrent use; OnLayerEnd is meant for the forward
// goroutine, Finish and Drop for the transfer worker.
type PerLayerManager struct {
	cfg      spec.PerLayerConfig
	engine   spec.Engine
	events   spec.EventFactory
	logger   *slog.Logger
	timeout  time.Duration
	stepping bool
	faults   fault.Transfer

	forward atomic.Bool
	nActive atomic.Int64 // contexts in the rooms' deques

	mu       sync.Mutex
	cond     sync.Cond // the queue gained an item, or the manager closed
	rooms    []uint64
	active   map[uint64][]*perLayerCtx
	queue    []workItem
	head     int
	builds   int
	nEvents  int
	lastDone *perLayerCtx
	closed   bool
	wg       sync.WaitGroup
}

// NewPerLayerManager is the spec.NewPerLayerManagerFunc of the fast twin: a
// PerLayerManager in deterministic mode (§4.9), with no worker goroutines;
// the driver runs the workers one item at a time with WorkerStep.
func NewPerLayerManager(cfg spec.PerLayerConfig, engine spec.Engine, events spec.EventFactory, logger *slog.Logger) (spec.PerLayerManager, error) {
	return newPerLayerManagerWithFaults(cfg, engine, events, logger, fault.Transfer{})
}

// newPerLayerManagerWithFaults is NewPerLayerManager with the historic bugs
// f selects put back, for the bug zoo only: fault.Hooks hands it to
// equiv/mutants (hooks.go). With the zero value it is NewPerLayerManager.
func newPerLayerManagerWithFaults(cfg spec.PerLayerConfig, engine spec.Engine, events spec.EventFactory, logger *slog.Logger, f fault.Transfer) (spec.PerLayerManager, error) {
	m, err := newPerLayerManager(perLayerOptions{Config: cfg, Engine: engine, Events: events, Logger: logger}, f)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// newPerLayerManager starts a manager with opts.Workers worker goroutines
// (none in deterministic mode) and the historic bugs f selects (the zero
// value in production); Close stops the goroutines. No op drives the real
// mode (Workers > 0): fast's tests and benchmarks reach it through
// export_test.go.
func newPerLayerManager(opts perLayerOptions, f fault.Transfer) (*PerLayerManager, error) {
	if err := opts.Config.Validate(); err != nil {
		return nil, err
	}
	if opts.Workers < 0 {
		return nil, spec.Reject(spec.ErrNegative, "workers", opts.Workers, ">= 0")
	}
	m := &PerLayerManager{cfg: opts.Config, engine: opts.Engine, events: opts.Events, logger: opts.Logger,
		timeout: opts.Timeout, stepping: opts.Workers == 0, faults: f, active: map[uint64][]*perLayerCtx{}}
	if m.timeout <= 0 {
		m.timeout = defaultFinishTimeout
	}
	m.cond.L = &m.mu
	for range opts.Workers {
		m.wg.Add(1)
		go m.worker()
	}
	return m, nil
}

// Register is §4.4 Register: only with exactly one non-dummy info, dedup
// by (room, chunk), never overwriting; build runs under the manager lock
// (it is called before the forward, off the hot path).
func (m *PerLayerManager) Register(room uint64, chunkKey int64, infos int, build spec.BuildFunc) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := ref.CheckRegister(m.forward.Load(), chunkKey, infos); err != nil {
		return false, err
	}
	if infos != 1 && !m.faults.RegisterAnyInfos {
		return false, nil
	}
	dq := m.active[room]
	at := slices.IndexFunc(dq, func(c *perLayerCtx) bool { return c.chunk == chunkKey })
	if at >= 0 && !m.faults.RegisterOverwrites {
		return true, nil
	}
	m.builds++
	plan := build()
	if plan == nil {
		return false, nil
	}
	c := newPLCtx(room, chunkKey, *plan, &m.faults)
	switch {
	case at >= 0: // B3: the registered context is orphaned
		dq[at] = c
	case len(dq) > 0 && m.faults.OneContextPerRoom: // B6: the room's one slot is overwritten
		dq[0] = c
	default:
		if len(dq) == 0 {
			m.rooms = append(m.rooms, room)
		}
		m.active[room] = append(dq, c)
		m.nActive.Add(1)
	}
	return true, nil
}

// HasRoom reports whether room has a registered, unfinished chunk.
func (m *PerLayerManager) HasRoom(room uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.active[room]) > 0
}

// ForwardBegin starts a forward; Register is refused until ForwardEnd.
func (m *PerLayerManager) ForwardBegin() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.forward.Load() {
		return spec.Reject(spec.ErrForwardState, "forward", true, "forward_begin outside a forward")
	}
	m.forward.Store(true)
	return nil
}

// ForwardEnd ends the forward.
func (m *PerLayerManager) ForwardEnd() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.forward.Load() {
		return spec.Reject(spec.ErrForwardState, "forward", false, "forward_end inside a forward")
	}
	m.forward.Store(false)
	return nil
}

// OnLayerEnd is the layer-end notifier (§4.4). A non-boundary layer, or a
// boundary with no active context, returns without locking; a boundary
// records one event shared by every context and queues one item per
// context that newly enqueued a layer. It never blocks on the workers and
// allocates nothing beyond the queue's amortized growth.
func (m *PerLayerManager) OnLayerEnd(l int) (int, error) {
	if !m.forward.Load() || uint(l) >= uint(m.cfg.Hooked) {
		return 0, ref.CheckOnLayerEnd(m.cfg, m.forward.Load(), l)
	}
	if m.nActive.Load() == 0 || !m.cfg.IsBoundary(l) {
		return 0, nil
	}
	return m.boundary(l), nil
}

func (m *PerLayerManager) boundary(l int) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.rooms) == 0 {
		return 0
	}
	ev := m.events.Record()
	m.nEvents++
	g0 := m.cfg.GroupStart(l)
	pushed := false
	for _, room := range m.rooms {
		for _, c := range m.active[room] {
			if layers := c.noteGroup(g0, l); len(layers) > 0 {
				m.queue = append(m.queue, workItem{ctx: c, layers: layers, ev: ev})
				pushed = true
			}
		}
	}
	if pushed {
		m.cond.Broadcast()
	}
	return ev.ID()
}

// pop removes the front item; the caller holds m.mu and the queue is non-empty.
func (m *PerLayerManager) pop() workItem {
	it := m.queue[m.head]
	m.queue[m.head] = workItem{}
	m.head++
	if m.head == len(m.queue) {
		m.queue, m.head = m.queue[:0], 0
	}
	return it
}

func (m *PerLayerManager) worker() {
	defer m.wg.Done()
	for {
		m.mu.Lock()
		for m.head == len(m.queue) && !m.closed {
			m.cond.Wait()
		}
		if m.head == len(m.queue) {
			m.mu.Unlock()
			return
		}
		it := m.pop()
		m.mu.Unlock()
		it.ctx.submitGroup(m.engine, it.layers, it.ev, m.timeout)
	}
}

// WorkerStep runs the front work item on the caller (deterministic mode).
// An item whose event has not completed is refused and stays queued.
func (m *PerLayerManager) WorkerStep() (spec.WorkResult, error) {
	if !m.stepping {
		return spec.WorkResult{}, spec.Reject(spec.ErrNotStepping, "workers", "real", "0 (deterministic mode)")
	}
	m.mu.Lock()
	if m.head == len(m.queue) {
		m.mu.Unlock()
		return spec.WorkResult{Idle: true}, nil
	}
	if ev := m.queue[m.head].ev; !ev.Query() {
		m.mu.Unlock()
		return spec.WorkResult{}, spec.Reject(spec.ErrEventPending, "event", ev.ID(), "a completed event")
	}
	it := m.pop()
	m.mu.Unlock()
	id := it.ctx.submitGroup(m.engine, it.layers, it.ev, m.timeout)
	return spec.WorkResult{Room: it.ctx.room, Chunk: it.ctx.chunk, Layers: slices.Clone(it.layers), Batch: id}, nil
}

// Finish is §4.4 Finish: the room's front chunk, if it is chunkKey, is
// popped and finished; a front chunk beyond chunkKey means this chunk never
// registered (handled = false).
func (m *PerLayerManager) Finish(room uint64, chunkKey int64) (spec.FinishResult, error) {
	m.mu.Lock()
	dq := m.active[room]
	if len(dq) == 0 || (!m.faults.OneContextPerRoom && dq[0].chunk > chunkKey) {
		m.mu.Unlock()
		return spec.FinishResult{Chunk: chunkKey}, nil
	}
	if !m.faults.OneContextPerRoom && dq[0].chunk < chunkKey {
		m.mu.Unlock()
		return spec.FinishResult{}, spec.Reject(spec.ErrFinishOrder, "chunk", chunkKey, "the room's front chunk "+itoa(dq[0].chunk))
	}
	c := m.popFront(room)
	m.mu.Unlock()
	st := c.finish(m.engine, m.logger, m.timeout, m.stepping)
	m.mu.Lock()
	m.lastDone = c
	m.mu.Unlock()
	return c.result(st), nil
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// popFront removes the room's front context; the caller holds m.mu.
func (m *PerLayerManager) popFront(room uint64) *perLayerCtx {
	dq := m.active[room]
	c := dq[0]
	dq[0] = nil
	if len(dq) == 1 {
		delete(m.active, room)
		m.rooms = slices.DeleteFunc(m.rooms, func(r uint64) bool { return r == room })
	} else {
		m.active[room] = dq[1:]
	}
	m.nActive.Add(-1)
	return c
}

// Refinish calls Finish again on the most recently finished context.
func (m *PerLayerManager) Refinish() (spec.FinishResult, bool) {
	m.mu.Lock()
	c := m.lastDone
	m.mu.Unlock()
	if c == nil {
		return spec.FinishResult{}, false
	}
	return c.result(c.finish(m.engine, m.logger, m.timeout, m.stepping)), true
}

// Drop drains every context of room (§4.4): each waits its batches and
// finishes −1 without the fallback transfer.
func (m *PerLayerManager) Drop(room uint64) int {
	m.mu.Lock()
	var drained []*perLayerCtx
	for len(m.active[room]) > 0 {
		drained = append(drained, m.popFront(room))
	}
	m.mu.Unlock()
	for _, c := range drained {
		c.drain(m.engine, m.logger)
	}
	return len(drained)
}

// State returns the observable state (spec.PerLayerState).
func (m *PerLayerManager) State() spec.PerLayerState {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := spec.PerLayerState{Forward: m.forward.Load(), Builds: m.builds, Events: m.nEvents,
		Rooms: make([]spec.RoomState, 0, len(m.rooms)), Queue: make([]spec.WorkItemState, 0, len(m.queue)-m.head)}
	for _, room := range m.rooms {
		rs := spec.RoomState{Room: room, Contexts: make([]spec.ContextState, 0, len(m.active[room]))}
		for _, c := range m.active[room] {
			rs.Contexts = append(rs.Contexts, c.state())
		}
		s.Rooms = append(s.Rooms, rs)
	}
	for _, it := range m.queue[m.head:] {
		s.Queue = append(s.Queue, spec.WorkItemState{Room: it.ctx.room, Chunk: it.ctx.chunk, Session: it.ctx.plan.Session,
			Layers: slices.Clone(it.layers), Event: it.ev.ID()})
	}
	return s
}

// Close lets the workers empty the queue, then stops them. Safe to call twice.
func (m *PerLayerManager) Close() {
	m.mu.Lock()
	m.closed = true
	m.cond.Broadcast()
	m.mu.Unlock()
	m.wg.Wait()
}

// perLayerCtx is one chunk's per-layer transfer context (§4.3).
type perLayerCtx struct {
	room   uint64
	chunk  int64
	plan   spec.LayerPlan
	n      int
	faults *fault.Transfer

	mu        sync.Mutex
	cond      sync.Cond // processed grew, or the finish deadline passed
	enqueued  []uint64
	submitted []uint64
	target    int
	processed int
	batches   []uint64
	layerBuf  []int // backing store of the work items' layer lists
	failed    bool
	reason    string
	sealed    bool
	finished  bool
	timedOut  bool
	status    int
	async     int
	sync      int
}

func newPLCtx(room uint64, chunk int64, plan spec.LayerPlan, f *fault.Transfer) *perLayerCtx {
	n := len(plan.Blocks)
	words := (n + 63) / 64
	c := &perLayerCtx{room: room, chunk: chunk, plan: plan, n: n, faults: f,
		enqueued: make([]uint64, words), submitted: make([]uint64, words), layerBuf: make([]int, 0, n)}
	c.cond.L = &c.mu
	return c
}

func has(b []uint64, l int) bool { return b[l>>6]&(1<<(l&63)) != 0 }
func set(b []uint64, l int)      { b[l>>6] |= 1 << (l & 63) }

// noteGroup is NoteEnqueued (§4.3) over layers g0..l; it returns the newly
// enqueued ones as a sub-slice of layerBuf (each layer enters it at most
// once, so it never grows past N and the notifier does not allocate).
func (c *perLayerCtx) noteGroup(g0, l int) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	start := len(c.layerBuf)
	for x := g0; x <= l; x++ {
		if c.sealed {
			break
		}
		if x >= c.n {
			c.fail(ref.ReasonHookOutOfRange(x, c.n))
			continue
		}
		if has(c.enqueued, x) && !c.faults.NoEnqueueDedup {
			continue
		}
		set(c.enqueued, x)
		c.target++
		c.layerBuf = append(c.layerBuf, x)
	}
	return c.layerBuf[start:len(c.layerBuf):len(c.layerBuf)]
}

func (c *perLayerCtx) fail(reason string) {
	if !c.failed {
		c.failed, c.reason = true, reason
	}
}

// submitGroup is §4.3 SubmitGroup: fail closed, wait the event off the
// lock, re-check, submit the not-yet-submitted layers' blocks in one async
// batch under the lock, count the layers processed.
func (c *perLayerCtx) submitGroup(engine spec.Engine, layers []int, ev spec.Event, timeout time.Duration) uint64 {
	c.mu.Lock()
	if c.failed || c.finished {
		c.done(len(layers))
		c.mu.Unlock()
		return 0
	}
	c.mu.Unlock()
	err := ev.Wait(timeout)
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.done(len(layers))
	if err != nil {
		c.fail(ref.ReasonEventWait(err))
		return 0
	}
	if c.failed || c.finished {
		return 0
	}
	var blocks []spec.Block
	for _, l := range layers {
		if !has(c.submitted, l) {
			set(c.submitted, l)
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

func (c *perLayerCtx) done(n int) {
	c.processed += n
	c.cond.Broadcast()
}

// finish is §4.3 Finish. In deterministic mode the deadline is now; in the
// real mode a timer wakes the wait at the deadline.
func (c *perLayerCtx) finish(engine spec.Engine, logger *slog.Logger, timeout time.Duration, stepping bool) int {
	c.mu.Lock()
	if c.finished {
		st := c.status
		c.mu.Unlock()
		return st
	}
	c.sealed = true
	target := c.target
	if c.faults.FinishRequiresAll {
		target = c.n
	}
	var t spec.FinishTimings
	t0 := time.Now()
	if c.processed < target && !stepping {
		timer := time.AfterFunc(timeout, func() {
			c.mu.Lock()
			c.timedOut = true
			c.cond.Broadcast()
			c.mu.Unlock()
		})
		for c.processed < target && !c.timedOut {
			c.cond.Wait()
		}
		timer.Stop()
	}
	if c.processed < target {
		c.fail(ref.ReasonTimeout(c.processed, target))
	}
	t.WaitEnqueued = time.Since(t0)
	var missed []spec.Block
	if !c.failed && !c.faults.FinishRequiresAll {
		for l := range c.n {
			if !has(c.submitted, l) {
				set(c.submitted, l)
				c.sync++
				missed = append(missed, c.plan.Blocks[l]...)
			}
		}
	}
	batches := c.batches
	c.mu.Unlock()
	// Nothing can submit now: the context is sealed and either every
	// enqueued layer is processed or it failed, so the lists are final.
	t1 := time.Now()
	syncSt := 0
	if len(missed) > 0 {
		syncSt = engine.SyncTransfer(c.plan.Session, missed)
	}
	t.Fallback = time.Since(t1)
	t2 := time.Now()
	waitSt := 0
	if len(batches) > 0 {
		waitSt = engine.WaitBatches(batches)
	}
	t.WaitBatches = time.Since(t2)
	c.mu.Lock()
	if syncSt != 0 {
		c.fail(ref.ReasonSyncFailed(syncSt))
	}
	if waitSt != 0 {
		c.fail(ref.ReasonWaitFailed(waitSt))
	}
	c.finished = true
	if c.failed {
		c.status = -1
	}
	s := c.stateLocked()
	async, sync := c.async, c.sync
	c.mu.Unlock()
	ref.LogFinish(logger, s, async, sync, t)
	return s.Status
}

// drain is §4.3 Drain.
func (c *perLayerCtx) drain(engine spec.Engine, logger *slog.Logger) {
	c.mu.Lock()
	c.fail(spec.ReasonDropped)
	c.sealed = true
	batches := c.batches
	c.mu.Unlock()
	if len(batches) > 0 {
		engine.WaitBatches(batches)
	}
	c.mu.Lock()
	c.finished, c.status = true, -1
	s := c.stateLocked()
	c.mu.Unlock()
	ref.LogDrain(logger, s)
}

func (c *perLayerCtx) result(st int) spec.FinishResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	return spec.FinishResult{Handled: true, Status: st, Chunk: c.chunk, Session: c.plan.Session, Reason: c.reason}
}

func (c *perLayerCtx) state() spec.ContextState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stateLocked()
}

func (c *perLayerCtx) stateLocked() spec.ContextState {
	return spec.ContextState{Room: c.room, Chunk: c.chunk, Session: c.plan.Session, Layers: c.n,
		Enqueued: bitList(c.enqueued), Target: c.target, Submitted: bitList(c.submitted), Processed: c.processed,
		Batches: append([]uint64{}, c.batches...), Failed: c.failed, Reason: c.reason, Sealed: c.sealed,
		Finished: c.finished, Status: c.status}
}

func bitList(b []uint64) []int {
	out := []int{}
	for w, word := range b {
		for word != 0 {
			out = append(out, w*64+bits.TrailingZeros64(word))
			word &= word - 1
		}
	}
	return out
}
