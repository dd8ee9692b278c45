package fast_test

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// perLayerRig is one real-mode run: arenas, engine, events and a manager with
// W worker goroutines.
type perLayerRig struct {
	geo    ref.PerLayerGeometry
	src    []byte
	engine *ref.MemEngine
	events *ref.FakeEvents
	m      *fast.PerLayerManager
}

func newRig(t *testing.T, n, h, k, pages, workers int, timeout time.Duration) *perLayerRig {
	t.Helper()
	geo := ref.PerLayerGeometry{Layers: n, ItemLen: 16, SrcPages: pages, DstPages: pages}
	src, dst := geo.Arenas()
	r := &perLayerRig{geo: geo, src: src, engine: ref.NewMemEngine(src, dst, true), events: &ref.FakeEvents{}}
	m, err := fast.NewPerLayerManagerWithOptions(fast.PerLayerOptions{Config: spec.PerLayerConfig{Hooked: h, Group: k}, Engine: r.engine,
		Events: r.events, Workers: workers, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	r.m = m
	return r
}

// chunkPages gives room r chunk c its own pages on both sides, so every
// context's destination bytes can be checked on their own.
func chunkPages(r, c int) (owned, dst []int64) {
	base := int64((r*2 + c) * 3)
	return []int64{base, base + 1, base + 2}, []int64{base + 2, base, base + 1}
}

// checkChunk: a finish that returned 0 left the chunk's destination bytes
// as the monolithic send writes them; whatever the status, every batch of
// the session was waited, and nothing followed a failed call.
func (r *perLayerRig) checkChunk(t *testing.T, session string, st int, owned, dst []int64) {
	t.Helper()
	calls := r.engine.Calls()
	mine := map[uint64]bool{}
	failedAt := -1
	for i, c := range calls {
		if c.Session != session {
			continue
		}
		if failedAt >= 0 {
			t.Fatalf("%s: call %d (%s) after its failed call %d", session, i, c.Kind, failedAt)
		}
		if c.Status != 0 {
			failedAt = i
		}
		if c.Kind == spec.CallAsync && c.Batch != 0 {
			mine[c.Batch] = true
		}
	}
	for _, id := range r.engine.Unwaited() {
		if mine[id] {
			t.Fatalf("%s: finish returned (status %d) with batch %d never waited", session, st, id)
		}
	}
	if st != 0 {
		return
	}
	d := r.engine.Dst()
	for _, bl := range r.geo.Plan(session, owned, dst).Blocks {
		for _, b := range bl {
			if !bytes.Equal(d[b.Dst:b.Dst+b.Len], r.src[b.Src:b.Src+b.Len]) {
				t.Fatalf("%s finished 0 but dst[%d:+%d] differs from the monolithic send", session, b.Dst, b.Len)
			}
		}
	}
}

// TestRealWorkersRandomFaults runs the manager with 4 worker goroutines
// against random fault schedules: failed submits, waits and sync
// transfers, slow and reordered waits, events completed late, in random
// order or with an error. The forward goroutine registers 4 rooms (two
// chunks each, the second registered after the first forward) and fires
// the hooks; the transfer worker finishes every chunk. Run under -race;
// no goroutine outlives its manager.
func TestRealWorkersRandomFaults(t *testing.T) {
	defer goleak.VerifyNone(t)
	for seed := range uint64(24) {
		rng := rand.New(rand.NewPCG(seed, 7))
		k := []int{1, 3, 8}[seed%3]
		r := newRig(t, 9, 8, k, 24, 4, 2*time.Second)
		var rmu sync.Mutex
		p := []float64{0, 0.05, 0.3}[seed%3]
		r.engine.Faulter = func(spec.EngineFault) bool { rmu.Lock(); defer rmu.Unlock(); return rng.Float64() < p }
		r.engine.WaitDelay = time.Duration(seed%4) * 50 * time.Microsecond
		r.engine.Reverse = seed%2 == 1
		evFail := seed%5 == 4
		forward := func(chunk int) {
			for room := range 4 {
				owned, dst := chunkPages(room, chunk)
				ok, err := r.m.Register(uint64(room), int64(chunk*8), 1, func() *spec.LayerPlan {
					return r.geo.Plan(ref.Session(uint64(room), int64(chunk*8), 0), owned, dst)
				})
				if !ok || err != nil {
					t.Fatalf("register: %t %v", ok, err)
				}
			}
			if err := r.m.ForwardBegin(); err != nil {
				t.Fatal(err)
			}
			for l := range 8 {
				if _, err := r.m.OnLayerEnd(l); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.m.ForwardEnd(); err != nil {
				t.Fatal(err)
			}
		}
		var gpu sync.WaitGroup
		gpu.Go(func() { // the compute stream: events complete late, in random order
			for done := 0; done < 2*((8+k-1)/k); {
				pend := r.events.Pending()
				if len(pend) == 0 {
					time.Sleep(20 * time.Microsecond)
					continue
				}
				rmu.Lock()
				e, fail := pend[rng.IntN(len(pend))], evFail && rng.IntN(4) == 0
				rmu.Unlock()
				if r.events.Complete(e, fail) == nil {
					done++
				}
			}
		})
		forward(0)
		forward(1)
		gpu.Wait()
		for chunk := range 2 {
			for room := range 4 {
				f, err := r.m.Finish(uint64(room), int64(chunk*8))
				if err != nil || !f.Handled {
					t.Fatalf("seed %d finish room %d chunk %d: %+v %v", seed, room, chunk, f, err)
				}
				owned, dst := chunkPages(room, chunk)
				r.checkChunk(t, f.Session, f.Status, owned, dst)
				if p == 0 && !evFail && f.Status != 0 {
					t.Fatalf("seed %d: no fault injected but finish failed: %s", seed, f.Reason)
				}
			}
		}
		r.m.Close()
	}
}

// TestRealTimeoutFailsAndWaits: an event that never completes makes the
// finish fail within the timeout (the event wait or the finish deadline
// expires), and the batches already submitted are still waited.
func TestRealTimeoutFailsAndWaits(t *testing.T) {
	defer goleak.VerifyNone(t)
	r := newRig(t, 4, 4, 2, 8, 2, 30*time.Millisecond)
	owned, dst := chunkPages(0, 0)
	r.m.Register(1, 0, 1, func() *spec.LayerPlan { return r.geo.Plan("s", owned, dst) })
	r.m.ForwardBegin()
	for l := range 4 {
		r.m.OnLayerEnd(l)
	}
	r.m.ForwardEnd()
	r.events.Complete(1, false) // event 2 never completes
	f, _ := r.m.Finish(1, 0)
	if f.Status != -1 || !(strings.HasPrefix(f.Reason, "finish TIMEOUT processed=") || strings.HasPrefix(f.Reason, "event wait:")) {
		t.Fatalf("want a timeout failure, got %+v", f)
	}
	r.checkChunk(t, "s", f.Status, owned, dst)
	r.m.Close()
}

// TestRealDropDrainsWhileWorkersRun drops rooms while workers are
// submitting: every batch ever submitted ends up waited and no context
// submits after its drain.
func TestRealDropDrainsWhileWorkersRun(t *testing.T) {
	defer goleak.VerifyNone(t)
	r := newRig(t, 9, 8, 1, 24, 4, time.Second)
	r.events.Auto = true
	r.engine.WaitDelay = 100 * time.Microsecond
	for room := range 4 {
		owned, dst := chunkPages(room, 0)
		r.m.Register(uint64(room), 0, 1, func() *spec.LayerPlan { return r.geo.Plan(ref.Session(uint64(room), 0, 0), owned, dst) })
	}
	r.m.ForwardBegin()
	for l := range 8 {
		r.m.OnLayerEnd(l)
		if l == 3 {
			r.m.Drop(0)
			r.m.Drop(2)
		}
	}
	r.m.ForwardEnd()
	r.m.Drop(1)
	r.m.Drop(3)
	r.m.Close()
	if u := r.engine.Unwaited(); len(u) != 0 {
		t.Fatalf("batches %v were never waited", u)
	}
	if r.m.HasRoom(0) || len(r.m.State().Rooms) != 0 {
		t.Fatal("dropped rooms remain")
	}
}

// TestNotifierNeverBlocks: with every event stuck and one worker parked
// on the first, the forward still fires all 78 hooks of 10 rooms; the
// queue absorbs the work.
func TestNotifierNeverBlocks(t *testing.T) {
	defer goleak.VerifyNone(t)
	r := newRig(t, 79, 78, 8, 40, 1, 50*time.Millisecond)
	for room := range 10 {
		r.m.Register(uint64(room), 0, 1, func() *spec.LayerPlan { return r.geo.Plan("s", []int64{int64(room)}, []int64{int64(room)}) })
	}
	r.m.ForwardBegin()
	for l := range 78 {
		if _, err := r.m.OnLayerEnd(l); err != nil {
			t.Fatal(err)
		}
	}
	r.m.ForwardEnd()
	if st := r.m.State(); st.Events != 10 || len(st.Queue) < 99 {
		t.Fatalf("want 10 events and ≥ 99 queued items, got %d and %d", st.Events, len(st.Queue))
	}
	for room := range 10 {
		r.m.Drop(uint64(room))
	}
	r.m.Close()
}

// TestWorkerStepNeedsDeterministicMode: a real-mode manager refuses WorkerStep.
func TestWorkerStepNeedsDeterministicMode(t *testing.T) {
	defer goleak.VerifyNone(t)
	r := newRig(t, 1, 1, 1, 1, 1, time.Second)
	defer r.m.Close()
	if _, err := r.m.WorkerStep(); err == nil || !strings.Contains(err.Error(), "not_stepping") && !strings.Contains(err.Error(), "deterministic") {
		t.Fatalf("want ErrNotStepping, got %v", err)
	}
}

// TestNotifierDoesNotAllocate: the fast path is taken — a non-boundary
// hook, and a boundary whose layers every context already enqueued,
// allocate nothing.
func TestNotifierDoesNotAllocate(t *testing.T) {
	m, err := fast.NewPerLayerManagerWithOptions(fast.PerLayerOptions{Config: spec.PerLayerConfig{Hooked: 16, Group: 8},
		Engine: ref.NewMemEngine(nil, nil, false), Events: readyEvents{}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for room := range 10 {
		m.Register(uint64(room), 0, 1, func() *spec.LayerPlan { return &spec.LayerPlan{Session: "s", Blocks: make([][]spec.Block, 17)} })
	}
	m.ForwardBegin()
	for l := range 16 {
		m.OnLayerEnd(l)
	}
	if n := testing.AllocsPerRun(100, func() { m.OnLayerEnd(3) }); n != 0 {
		t.Errorf("non-boundary hook: %v allocations", n)
	}
	if n := testing.AllocsPerRun(100, func() { m.OnLayerEnd(7) }); n != 0 {
		t.Errorf("deduplicated boundary: %v allocations", n)
	}
}
