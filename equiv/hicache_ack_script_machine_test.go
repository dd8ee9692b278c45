package equiv

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// ackMachine drives a reference group (the generator's own) and a fast
// group with one step sequence (docs/spec/radix-acks.md §3.3).
type ackMachine struct {
	gen  *ackGen
	fast []spec.AckQueue
}

func newFastGroup(t *rapid.T, create spec.AckStep) []spec.AckQueue {
	g := make([]spec.AckQueue, create.Ranks)
	for r := range g {
		q, err := fast.NewAckQueue(spec.AckConfig{NumLayers: create.Layers, HostCapacity: create.HostCapacity})
		if err != nil {
			t.Fatal(err)
		}
		g[r] = q
	}
	return g
}

func groupStates(g []spec.AckQueue) []spec.AckState {
	s := make([]spec.AckState, len(g))
	for r, q := range g {
		s[r] = q.State()
	}
	return s
}

// step draws the next step(s), runs them on both groups and compares
// results; it checks W10 (a refusal is pure), that every other rejected
// step left both groups unchanged, and W4's monotone max.
func (m *ackMachine) step(t *rapid.T) {
	if m.gen.halted {
		return
	}
	from := len(m.gen.steps)
	refBefore, fastBefore := groupStates(m.gen.group), groupStates(m.fast)
	m.gen.step()
	for i := from; i < len(m.gen.steps); i++ {
		s, rr := m.gen.steps[i], m.gen.results[i]
		if s.Op == spec.AckCreate {
			m.fast = newFastGroup(t, s)
		}
		fastPrev := groupStates(m.fast)
		fr := ref.RunAckGroupStep(m.fast, s, i)
		rb, _ := json.Marshal(rr)
		fb, _ := json.Marshal(fr)
		if diff := cmp.Diff(string(rb), string(fb)); diff != "" {
			t.Fatalf("step %d %+v: results differ (-ref +fast):\n%s", i, s, diff)
		}
		if s.Op == spec.AckCreate {
			continue
		}
		fastAfter := groupStates(m.fast)
		for r := range fastAfter {
			if err := ref.CheckAckMonotone(fastPrev[r], fastAfter[r], s.Op == spec.AckReset); err != nil {
				t.Fatalf("rank %d after step %d: %v", r, i, err)
			}
		}
	}
	if last := len(m.gen.steps) - 1; last == from {
		m.checkPure(t, m.gen.steps[last], m.gen.results[last], refBefore, fastBefore)
	}
}

// checkPure is W10 and the atomicity rule: a refused or rejected step
// (other than a terminal drain and write_backup's injected, rolled-back
// failure) leaves both groups deep-equal to before.
func (m *ackMachine) checkPure(t *rapid.T, s spec.AckStep, rr spec.AckStepResult, refBefore, fastBefore []spec.AckState) {
	if s.Op == spec.AckCreate {
		return
	}
	pure := rr.Refused != "" || rr.Error != nil && !rr.Terminal && rr.Error.Code != spec.ErrWriteBackupFailed.Code()
	if !pure {
		return
	}
	if diff := cmp.Diff(refBefore, groupStates(m.gen.group)); diff != "" {
		t.Fatalf("W10: step %+v was refused (%s %+v) but changed ref:\n%s", s, rr.Refused, rr.Error, diff)
	}
	if diff := cmp.Diff(fastBefore, groupStates(m.fast)); diff != "" {
		t.Fatalf("W10: step %+v was refused (%s %+v) but changed fast:\n%s", s, rr.Refused, rr.Error, diff)
	}
}

// check compares the whole observable state of every rank and checks every
// invariant: W1–W4 and W6–W9 per rank, W11 across ranks, and W5 — fast's
// NodeHasUndrainedWriteAck equals the pure scan, and ref's, for every id in
// [0, nextID+2). After a terminal error the state is unspecified.
func (m *ackMachine) check(t *rapid.T) {
	if m.gen.halted {
		return
	}
	rs, fs := groupStates(m.gen.group), groupStates(m.fast)
	if diff := cmp.Diff(rs, fs); diff != "" {
		t.Fatalf("after step %d the states differ (-ref +fast):\n%s", len(m.gen.steps)-1, diff)
	}
	for r, s := range fs {
		if err := ref.CheckAckState(s); err != nil {
			t.Fatalf("rank %d after step %d: %v", r, len(m.gen.steps)-1, err)
		}
		for id := spec.NodeID(0); id < s.NextID+2; id++ {
			scan := ref.ScanHasUndrained(s, id)
			if got := m.fast[r].NodeHasUndrainedWriteAck(id); got != scan {
				t.Fatalf("W5: rank %d: fast Has(%d) = %t, the scan says %t (max_appended %d)", r, id, got, scan, s.MaxAppended)
			}
			if got := m.gen.group[r].NodeHasUndrainedWriteAck(id); got != scan {
				t.Fatalf("W5: rank %d: ref Has(%d) = %t, the scan says %t", r, id, got, scan)
			}
		}
	}
	if err := ref.CheckAckRanks(fs); err != nil {
		t.Fatalf("after step %d: %v", len(m.gen.steps)-1, err)
	}
}

// TestAckQueueTwinsAgreeAfterEveryStep is the write-ack state machine
// (docs/spec/radix-acks.md §3.3): groups of 1–4 ranks with 1–3 layers run random
// reservations (zero-owned ranks included), layer steps, write_backup
// fallbacks failing mid-layers or after the ack, non-CP writes, per-rank
// event completion, MIN-agreed and explicit drains between any two
// operations, rollbacks, refusals, bad steps and injected duplicate or
// unknown acks; after every step ref and fast return the same result and
// the same observable state, and every invariant W1–W11 holds.
func TestAckQueueTwinsAgreeAfterEveryStep(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := newAckGen(t)
		m := &ackMachine{gen: g, fast: newFastGroup(t, g.steps[0])}
		t.Repeat(map[string]func(*rapid.T){
			"step": m.step,
			"":     m.check,
		})
	})
}
