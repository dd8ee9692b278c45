package equiv

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// eagerManager breaks §4.8.3: its worker step submits the front item's
// layers before their event completed.
type eagerManager struct {
	spec.PerLayerManager
	engine spec.Engine
	plans  map[string]*spec.LayerPlan
}

func (m *eagerManager) WorkerStep() (spec.WorkResult, error) {
	if q := m.State().Queue; len(q) > 0 {
		var blocks []spec.Block
		for _, l := range q[0].Layers {
			blocks = append(blocks, m.plans[q[0].Session].Blocks[l]...)
		}
		m.engine.SubmitAsync(q[0].Session, blocks)
	}
	return m.PerLayerManager.WorkerStep()
}

func (m *eagerManager) Register(room uint64, chunk int64, infos int, build spec.BuildFunc) (bool, error) {
	return m.PerLayerManager.Register(room, chunk, infos, func() *spec.LayerPlan {
		p := build()
		m.plans[p.Session] = p
		return p
	})
}

// chattyManager breaks §4.8.10: a successful finish logs at INFO.
type chattyManager struct {
	spec.PerLayerManager
	logger *slog.Logger
}

func (m *chattyManager) Finish(room uint64, chunk int64) (spec.FinishResult, error) {
	f, err := m.PerLayerManager.Finish(room, chunk)
	if f.Handled && f.Status == 0 {
		m.logger.Log(context.Background(), slog.LevelInfo, "per-layer finish done")
	}
	return f, err
}

// liarManager breaks §4.8.4: a failed finish reports 0.
type liarManager struct{ spec.PerLayerManager }

func (m *liarManager) Finish(room uint64, chunk int64) (spec.FinishResult, error) {
	f, err := m.PerLayerManager.Finish(room, chunk)
	f.Status, f.Reason = 0, ""
	return f, err
}

// stragglerManager breaks §4.8.5 and §4.8.7: after a finish or a drop of
// a context one more batch of it is in flight.
type stragglerManager struct {
	spec.PerLayerManager
	engine spec.Engine
}

func (m *stragglerManager) sessions(room uint64) []string {
	var out []string
	for _, r := range m.State().Rooms {
		for _, c := range r.Contexts {
			if r.Room == room {
				out = append(out, c.Session)
			}
		}
	}
	return out
}

func (m *stragglerManager) Finish(room uint64, chunk int64) (spec.FinishResult, error) {
	f, err := m.PerLayerManager.Finish(room, chunk)
	m.engine.SubmitAsync(f.Session, nil)
	return f, err
}

func (m *stragglerManager) Drop(room uint64) int {
	ss := m.sessions(room)
	n := m.PerLayerManager.Drop(room)
	for _, s := range ss {
		m.engine.SubmitAsync(s, nil)
	}
	return n
}

// flipManager breaks §4.8.9: a refinish answers differently.
type flipManager struct{ spec.PerLayerManager }

func (m *flipManager) Refinish() (spec.FinishResult, bool) {
	f, ok := m.PerLayerManager.Refinish()
	f.Status = 1 - f.Status
	return f, ok
}

// doubleManager breaks §4.8.2: every worker step's batch is submitted twice.
type doubleManager struct {
	spec.PerLayerManager
	engine *ref.MemEngine
}

func (m *doubleManager) WorkerStep() (spec.WorkResult, error) {
	w, err := m.PerLayerManager.WorkerStep()
	if calls := m.engine.Calls(); w.Batch != 0 {
		last := calls[len(calls)-1]
		m.engine.SubmitAsync(last.Session, last.Blocks)
	}
	return w, err
}

// TestPerLayerCheckerCatchesBrokenManagers: each of the ten §4.8 invariants
// the state machine checks fails on a manager broken the way it guards
// against — the zoo's faults where a historic bug breaks it (§4.8.1 B2,
// §4.8.6 B6, §4.8.8 B3), wrappers around the reference manager otherwise.
func TestPerLayerCheckerCatchesBrokenManagers(t *testing.T) {
	withFaults := perLayerManagerWithFaults
	eager := func(cfg spec.PerLayerConfig, e spec.Engine, ev spec.EventFactory, l *slog.Logger) (spec.PerLayerManager, error) {
		m, err := ref.NewPerLayerManager(cfg, e, ev, l)
		return &eagerManager{PerLayerManager: m, engine: e, plans: map[string]*spec.LayerPlan{}}, err
	}
	chatty := func(cfg spec.PerLayerConfig, e spec.Engine, ev spec.EventFactory, l *slog.Logger) (spec.PerLayerManager, error) {
		m, err := ref.NewPerLayerManager(cfg, e, ev, l)
		return &chattyManager{PerLayerManager: m, logger: l}, err
	}
	liar := func(cfg spec.PerLayerConfig, e spec.Engine, ev spec.EventFactory, l *slog.Logger) (spec.PerLayerManager, error) {
		m, err := ref.NewPerLayerManager(cfg, e, ev, l)
		return &liarManager{m}, err
	}
	straggler := func(cfg spec.PerLayerConfig, e spec.Engine, ev spec.EventFactory, l *slog.Logger) (spec.PerLayerManager, error) {
		m, err := ref.NewPerLayerManager(cfg, e, ev, l)
		return &stragglerManager{m, e}, err
	}
	flip := func(cfg spec.PerLayerConfig, e spec.Engine, ev spec.EventFactory, l *slog.Logger) (spec.PerLayerManager, error) {
		m, err := ref.NewPerLayerManager(cfg, e, ev, l)
		return &flipManager{m}, err
	}
	double := func(cfg spec.PerLayerConfig, e spec.Engine, ev spec.EventFactory, l *slog.Logger) (spec.PerLayerManager, error) {
		m, err := ref.NewPerLayerManager(cfg, e, ev, l)
		return &doubleManager{m, e.(*ref.MemEngine)}, err
	}
	fin := spec.PerLayerStep{Op: spec.PerLayerFinish, Room: 7}
	syncFault := spec.PerLayerStep{Op: spec.PerLayerInject, Fault: spec.FaultSync}
	for _, tc := range []struct {
		invariant string
		newM      spec.NewPerLayerManagerFunc
		steps     []spec.PerLayerStep
	}{
		{"§4.8.1", withFaults(fault.Transfer{NoEnqueueDedup: true}), perLayerScript(one(perLayerCreate(2, 2, 1), perLayerReg(7, 0)), perLayerForward(2, 0, 0), perLayerForward(2, 0, 0)).Steps},
		{"§4.8.3", eager, perLayerScript(one(perLayerCreate(2, 2, 1), perLayerReg(7, 0)), perLayerForward(2, 0, 1)).Steps},
		{"§4.8.2", double, perLayerScript(one(perLayerCreate(2, 2, 1), perLayerReg(7, 0)), perLayerForward(2, 2, 1)).Steps},
		{"§4.8.4", liar, perLayerScript(one(perLayerCreate(2, 2, 1), perLayerReg(7, 0), syncFault, fin)).Steps},
		{"§4.8.5", straggler, perLayerScript(one(perLayerCreate(2, 2, 1), perLayerReg(7, 0), fin)).Steps},
		{"§4.8.7", straggler, perLayerScript(one(perLayerCreate(2, 2, 1), perLayerReg(7, 0), spec.PerLayerStep{Op: spec.PerLayerDrop, Room: 7})).Steps},
		{"§4.8.8", withFaults(fault.Transfer{RegisterOverwrites: true}), perLayerScript(one(perLayerCreate(2, 2, 1), perLayerReg(7, 0)), perLayerForward(2, 2, 2), one(perLayerReg(7, 0))).Steps},
		{"§4.8.9", flip, perLayerScript(one(perLayerCreate(2, 0, 1), perLayerReg(7, 0), fin, spec.PerLayerStep{Op: spec.PerLayerRefinish})).Steps},
		{"§4.8.6", withFaults(fault.Transfer{OneContextPerRoom: true}), perLayerScript(one(perLayerCreate(2, 2, 1), perLayerReg(7, 0), perLayerReg(7, 4), fin)).Steps},
		{"§4.8.10", chatty, perLayerScript(one(perLayerCreate(2, 2, 1), perLayerReg(7, 0), fin)).Steps},
	} {
		t.Run(tc.invariant, func(t *testing.T) {
			log := &logRecorder{}
			run, err := ref.NewPerLayerRun(tc.steps[0], tc.newM, slog.New(log))
			if err != nil {
				t.Fatal(err)
			}
			chk := newPerLayerChecker(run, log, tc.steps[0])
			for _, s := range tc.steps[1:] {
				if _, err = chk.step(s); err != nil {
					break
				}
			}
			if err == nil || !strings.Contains(err.Error(), tc.invariant) {
				t.Fatalf("the checker missed the broken %s: %v", tc.invariant, err)
			}
		})
	}
}
