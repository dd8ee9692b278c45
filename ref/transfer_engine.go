package ref

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kvtwin/kvtwin/spec"
)

// This file holds the transfer-engine contract of docs/spec/transfer.md §0 (the
// Mooncake batch API), the in-memory engine over two byte arenas with
// injectable faults (§4.9 FakeEngine), and the fake CUDA events the
// per-layer manager waits on. Both twins of the per-layer manager drive
// the same engine, so a byte difference in the destination arena can only
// come from the managers.

// Engine sentinels.
var (
	// errUnknownBatch: completing a batch id that is not in flight.
	errUnknownBatch = spec.NewSentinel("unknown_batch", "no batch in flight with this id")
	// errUnknownEvent: completing an event id never recorded, or already completed.
	errUnknownEvent = spec.NewSentinel("unknown_event", "no pending event with this id")
	// errEventTimeout is the error of an event wait that ran past its timeout.
	errEventTimeout = spec.NewSentinel("event_timeout", "event wait timed out")
	// errEventFailed is the error of an event completed with a failure.
	errEventFailed = spec.NewSentinel("event_failed", "event completed with an error")
)

type memBatch struct {
	blocks []spec.Block
	done   bool
	status int
}

// MemEngine is the in-memory engine of docs/spec/transfer.md §4.9: blocks address a
// source and a destination byte arena by offset. SyncTransfer copies at
// once; an async batch copies when engineComplete or WaitBatches completes
// it. Faults are injected per call (injectFault) or by a schedule
// (Faulter); a block outside an arena fails its call instead of panicking.
// Safe for concurrent use.
type MemEngine struct {
	mu      sync.Mutex
	src     []byte
	dst     []byte
	nextID  uint64
	batches map[uint64]*memBatch
	calls   []spec.EngineCall
	record  bool
	// recorded counts the items of the call log: a call, its blocks and
	// the batch ids a wait listed (Recorded).
	recorded int64
	armed    map[spec.EngineFault]int
	// Faulter, when set, is asked once per call whether the call fails
	// (random fault schedules); it runs under the engine lock.
	Faulter func(spec.EngineFault) bool
	// WaitDelay is slept (outside the lock) by every WaitBatches: a slow wait.
	WaitDelay time.Duration
	// Reverse completes the batches of a WaitBatches in reverse order (reordered completion).
	Reverse bool
}

// NewMemEngine returns an engine over src and dst (not copied: dst is
// written in place). record keeps every call with its blocks (Calls).
func NewMemEngine(src, dst []byte, record bool) *MemEngine {
	return &MemEngine{src: src, dst: dst, batches: map[uint64]*memBatch{}, record: record, armed: map[spec.EngineFault]int{}}
}

// injectFault arms f: the next call of its kind fails.
func (e *MemEngine) injectFault(f spec.EngineFault) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.armed[f]++
}

func (e *MemEngine) fails(f spec.EngineFault) bool {
	if e.armed[f] > 0 {
		e.armed[f]--
		return true
	}
	return e.Faulter != nil && e.Faulter(f)
}

func (e *MemEngine) inBounds(blocks []spec.Block) bool {
	for _, b := range blocks {
		if addOverflowsU(b.Src, b.Len) || addOverflowsU(b.Dst, b.Len) ||
			b.Src+b.Len > uint64(len(e.src)) || b.Dst+b.Len > uint64(len(e.dst)) {
			return false
		}
	}
	return true
}

func (e *MemEngine) apply(blocks []spec.Block) {
	for _, b := range blocks {
		copy(e.dst[b.Dst:b.Dst+b.Len], e.src[b.Src:b.Src+b.Len])
	}
}

func (e *MemEngine) log(c spec.EngineCall) {
	if e.record {
		e.calls = append(e.calls, c)
		e.recorded += int64(1 + len(c.Blocks) + len(c.Batches))
	}
}

// Recorded is how many items the call log holds: one per call, block and
// listed batch id. The log is an output, and a script can make it grow
// with the product of its layers and pages, far faster than the script's
// own bytes; its interpreter bounds it after every step.
func (e *MemEngine) Recorded() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.recorded
}

// EngineLogItemBytes is what one item of the call log costs against the
// output bound: a spec.Block in memory (three uint64s) and its slice's
// share of a call's header, rounded up.
const EngineLogItemBytes = 32

// SyncTransfer copies blocks now (docs/spec/transfer.md §0). It fails with -1, copying
// nothing, on an injected fault or a block outside an arena.
func (e *MemEngine) SyncTransfer(session string, blocks []spec.Block) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := 0
	if e.fails(spec.FaultSync) || !e.inBounds(blocks) {
		st = -1
	} else {
		e.apply(blocks)
	}
	e.log(spec.EngineCall{Kind: spec.CallSync, Session: session, Blocks: slices.Clone(blocks), Status: st})
	return st
}

// SubmitAsync records blocks as a batch in flight and returns its id
// (1, 2, …), or 0 on an injected fault or a block outside an arena.
// It never blocks beyond the engine lock.
func (e *MemEngine) SubmitAsync(session string, blocks []spec.Block) uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	var id uint64
	if !e.fails(spec.FaultSubmit) && e.inBounds(blocks) {
		e.nextID++
		id = e.nextID
		e.batches[id] = &memBatch{blocks: blocks}
	}
	c := spec.EngineCall{Kind: spec.CallAsync, Session: session, Batch: id, Status: 0}
	if id == 0 {
		c.Status = -1
	}
	if e.record {
		c.Blocks = slices.Clone(blocks)
	}
	e.log(c)
	return id
}

// engineComplete finishes batch id now: ok copies its blocks, !ok fails it
// (its bytes are not written). A batch can complete once.
func (e *MemEngine) engineComplete(id uint64, ok bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	b := e.batches[id]
	if b == nil || b.done {
		return spec.Reject(errUnknownBatch, "batch", id, "a batch in flight")
	}
	e.finish(b, ok)
	return nil
}

func (e *MemEngine) finish(b *memBatch, ok bool) {
	b.done = true
	if ok {
		e.apply(b.blocks)
	} else {
		b.status = -1
	}
}

// WaitBatches completes every listed batch still in flight (successfully,
// unless a wait fault fires) and forgets the listed ids; it returns 0 iff
// every listed id was known and succeeded.
func (e *MemEngine) WaitBatches(ids []uint64) int {
	if e.WaitDelay > 0 {
		time.Sleep(e.WaitDelay)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	fail := e.fails(spec.FaultWait)
	st := 0
	order := ids
	if e.Reverse {
		order = slices.Clone(ids)
		slices.Reverse(order)
	}
	for _, id := range order {
		b := e.batches[id]
		if b == nil {
			st = -1
			continue
		}
		if !b.done {
			e.finish(b, !fail)
		}
		if b.status != 0 {
			st = -1
		}
		delete(e.batches, id)
	}
	e.log(spec.EngineCall{Kind: spec.CallWait, Batches: slices.Clone(ids), Status: st})
	return st
}

// InFlight returns the ids of the batches submitted and not yet completed, ascending.
func (e *MemEngine) InFlight() []uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	ids := []uint64{}
	for id, b := range e.batches {
		if !b.done {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// Unwaited returns the ids submitted and not yet listed by a WaitBatches, ascending.
func (e *MemEngine) Unwaited() []uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	ids := []uint64{}
	for id := range e.batches {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Calls returns a copy of the recorded calls (NewMemEngine's record flag).
func (e *MemEngine) Calls() []spec.EngineCall {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.calls)
}

// Dst returns a copy of the destination arena.
func (e *MemEngine) Dst() []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.dst)
}

// DstDigest is the hex SHA-256 of the destination arena.
func (e *MemEngine) DstDigest() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return sha256Hex(e.dst)
}

// sha256Hex is the hex SHA-256 of b.
func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// addOverflowsU reports whether a+b overflows uint64.
func addOverflowsU(a, b uint64) bool { return a+b < a }

// MonolithicSend is docs/spec/transfer.md §3.3: one SyncTransfer of every entry's
// blocks, entry-major. It is the reference the per-layer send must equal.
func MonolithicSend(e spec.Engine, session string, perLayer [][]spec.Block) int {
	var all []spec.Block
	for _, bl := range perLayer {
		all = append(all, bl...)
	}
	return e.SyncTransfer(session, all)
}

// fakeEvent is the test double of §4.9: Wait blocks until Complete.
type fakeEvent struct {
	id   int
	done chan struct{}
	err  error
}

// ID returns the event's sequence number.
func (f *fakeEvent) ID() int { return f.id }

// Query reports whether Complete was called.
func (f *fakeEvent) Query() bool {
	select {
	case <-f.done:
		return true
	default:
		return false
	}
}

// Wait waits for Complete, or returns errEventTimeout after timeout.
func (f *fakeEvent) Wait(timeout time.Duration) error {
	select {
	case <-f.done:
		return f.err
	default:
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-f.done:
		return f.err
	case <-t.C:
		return errEventTimeout
	}
}

// FakeEvents is the fake event factory: events complete when the test
// says so, or at once when Auto is set (a GPU that is never behind).
type FakeEvents struct {
	mu     sync.Mutex
	events []*fakeEvent
	// Auto completes every event as it is recorded.
	Auto bool
}

// Record returns the next event (ids 1, 2, …).
func (fe *FakeEvents) Record() spec.Event {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	ev := &fakeEvent{id: len(fe.events) + 1, done: make(chan struct{})}
	if fe.Auto {
		close(ev.done)
	}
	fe.events = append(fe.events, ev)
	return ev
}

// Complete completes event id; fail makes its Wait return errEventFailed.
// An unknown or already completed id is errUnknownEvent.
func (fe *FakeEvents) Complete(id int, fail bool) error {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	if id < 1 || id > len(fe.events) || fe.events[id-1].Query() {
		return spec.Reject(errUnknownEvent, "event", id, fmt.Sprintf("a pending event in [1, %d]", len(fe.events)))
	}
	ev := fe.events[id-1]
	if fail {
		ev.err = errEventFailed
	}
	close(ev.done)
	return nil
}

// Pending returns the ids of the recorded events not yet completed, ascending.
func (fe *FakeEvents) Pending() []int {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	ids := []int{}
	for _, ev := range fe.events {
		if !ev.Query() {
			ids = append(ids, ev.id)
		}
	}
	return ids
}
