package fast_test

import (
	"sync"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// readyEvent is an event that has always completed; readyEvents returns it
// from every Record without allocating: a GPU that is never behind, so the
// benchmarks measure the manager, not event bookkeeping.
type readyEvent struct{}

func (readyEvent) ID() int                  { return 0 }
func (readyEvent) Wait(time.Duration) error { return nil }
func (readyEvent) Query() bool              { return true }

type readyEvents struct{}

func (readyEvents) Record() spec.Event { return readyEvent{} }

// countEngine counts submits and moves no bytes: the manager's own cost.
type countEngine struct {
	mu           sync.Mutex
	async, syncs int
	next         uint64
}

func (e *countEngine) SyncTransfer(string, []spec.Block) int {
	e.mu.Lock()
	e.syncs++
	e.mu.Unlock()
	return 0
}
func (e *countEngine) SubmitAsync(string, []spec.Block) uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.async++
	e.next++
	return e.next
}
func (e *countEngine) WaitBatches([]uint64) int { return 0 }

// glm5Plan is one request's chunk on GLM-5's 79 entries (78 hooked + MTP):
// 4 page runs per layer.
func glm5Plan(room int) *spec.LayerPlan {
	geo := ref.PerLayerGeometry{Layers: 79, ItemLen: 1 << 10, SrcPages: 64, DstPages: 64}
	owned, dst := make([]int64, 16), make([]int64, 16)
	for i := range owned {
		owned[i], dst[i] = int64(i*3), int64(63-i*3)
	}
	return geo.Plan(ref.Session(uint64(room), 0, 0), owned, dst)
}

// BenchmarkPerLayerForwardGLM5 is one forward of the seed's GLM-5 shape
// (docs/spec/transfer.md §4.5): bs=10 requests registered, 78 hooks, every work item
// and every finish, on a deterministic manager over a counting engine.
// submits/forward is the async submits per forward: 10 groups × 10
// requests at K=8 (the notes' per-layer K=1: 78 × 10 = 780, plus the MTP
// layer's sync fallback each, 790 calls).
func BenchmarkPerLayerForwardGLM5(b *testing.B) {
	plans := make([]*spec.LayerPlan, 10)
	for r := range plans {
		plans[r] = glm5Plan(r)
	}
	for _, k := range []int{8, 1} {
		b.Run(map[int]string{8: "K=8", 1: "K=1"}[k], func(b *testing.B) {
			e := &countEngine{}
			m, err := fast.NewPerLayerManagerWithOptions(fast.PerLayerOptions{Config: spec.PerLayerConfig{Hooked: 78, Group: k}, Engine: e, Events: readyEvents{}})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			b.ReportAllocs()
			for b.Loop() {
				for r, p := range plans {
					m.Register(uint64(r), 0, 1, func() *spec.LayerPlan { return p })
				}
				m.ForwardBegin()
				for l := range 78 {
					m.OnLayerEnd(l)
				}
				m.ForwardEnd()
				for {
					if w, _ := m.WorkerStep(); w.Idle {
						break
					}
				}
				for r := range plans {
					m.Finish(uint64(r), 0)
				}
			}
			b.ReportMetric(float64(e.async)/float64(b.N), "submits/forward")
			b.ReportMetric(float64(e.async+e.syncs)/float64(b.N), "calls/forward")
		})
	}
}

// activeManager is a manager with bs=10 GLM-5 contexts registered, inside
// a forward whose every hook already fired once (so boundaries dedup).
func activeManager(b *testing.B) *fast.PerLayerManager {
	m, err := fast.NewPerLayerManagerWithOptions(fast.PerLayerOptions{Config: spec.PerLayerConfig{Hooked: 78, Group: 8}, Engine: &countEngine{}, Events: readyEvents{}})
	if err != nil {
		b.Fatal(err)
	}
	for r := range 10 {
		p := glm5Plan(r)
		m.Register(uint64(r), 0, 1, func() *spec.LayerPlan { return p })
	}
	m.ForwardBegin()
	for l := range 78 {
		m.OnLayerEnd(l)
	}
	return m
}

// BenchmarkOnLayerEndNonBoundary is the notifier at a layer that closes
// no group, with 10 active contexts: no lock, no allocation (target ≤ 200 ns).
func BenchmarkOnLayerEndNonBoundary(b *testing.B) {
	m := activeManager(b)
	defer m.Close()
	b.ReportAllocs()
	for b.Loop() {
		m.OnLayerEnd(3)
	}
}

// BenchmarkOnLayerEndBoundary is the notifier at a group boundary with 10
// active contexts that already enqueued the group (a later forward, B2's
// situation): one event, ten deduplicating notes, no work item.
func BenchmarkOnLayerEndBoundary(b *testing.B) {
	m := activeManager(b)
	defer m.Close()
	b.ReportAllocs()
	for b.Loop() {
		m.OnLayerEnd(7)
	}
}

// moveShape is the bandwidth shape: 64 layers × 64 pages × 64 KiB = 256 MiB
// of KV per side (1 GiB per side is too much for the shared 2-core box),
// pages in 8 runs of 8 per layer.
func moveShape() (ref.PerLayerGeometry, []int64, []int64) {
	geo := ref.PerLayerGeometry{Layers: 64, ItemLen: 64 << 10, SrcPages: 64, DstPages: 64}
	owned, dst := make([]int64, 64), make([]int64, 64)
	for i := range owned {
		owned[i], dst[i] = int64(i), int64((i/8+3)%8*8+i%8)
	}
	return geo, owned, dst
}

// BenchmarkMoveCopy256MiB is the yardstick the issue names: one plain copy
// of the same 256 MiB, arena to arena, measured in the same run.
func BenchmarkMoveCopy256MiB(b *testing.B) {
	geo, _, _ := moveShape()
	src, d := geo.Arenas()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		copy(d, src)
	}
}

// BenchmarkMoveMonolithic256MiB is the reference: one sync batch of every
// layer's blocks (docs/spec/transfer.md §3.3) on the in-memory engine.
func BenchmarkMoveMonolithic256MiB(b *testing.B) {
	geo, owned, dst := moveShape()
	src, d := geo.Arenas()
	e := ref.NewMemEngine(src, d, false)
	plan := geo.Plan("mono", owned, dst)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if ref.MonolithicSend(e, "mono", plan.Blocks) != 0 {
			b.Fatal("monolithic send failed")
		}
	}
}

// BenchmarkMovePerLayer256MiB moves the same bytes through the manager:
// grouped async submits (K=8) run by 4 worker goroutines, then Finish's
// wait; the in-memory engine copies at completion.
func BenchmarkMovePerLayer256MiB(b *testing.B) {
	geo, owned, dst := moveShape()
	src, d := geo.Arenas()
	e := ref.NewMemEngine(src, d, false)
	plan := geo.Plan("pl", owned, dst)
	m, err := fast.NewPerLayerManagerWithOptions(fast.PerLayerOptions{Config: spec.PerLayerConfig{Hooked: 64, Group: 8}, Engine: e,
		Events: readyEvents{}, Workers: 4})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		m.Register(1, 0, 1, func() *spec.LayerPlan { return plan })
		m.ForwardBegin()
		for l := range 64 {
			m.OnLayerEnd(l)
		}
		m.ForwardEnd()
		if f, _ := m.Finish(1, 0); f.Status != 0 {
			b.Fatal(f.Reason)
		}
	}
}
