package ref

import (
	"slices"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/spec"
)

// ackCheckStates builds a state with a pending CP registration (node 1) and
// a queued non-CP ack (node 2), and a fault-injected one whose completed
// memory holds node 3 (its duplicate is still queued).
func ackCheckStates(t *testing.T) (plain, injected spec.AckState) {
	q := newAcks(t, 2, 8, 2, 1, 1)
	must(t, q.ReserveWriteCP(1, 1))
	must(t, q.WriteNonCP(2))
	plain = checked(t, q)
	must(t, q.WriteNonCP(3))
	_, err := q.LayerStep(0)
	must(t, err)
	must(t, q.InjectDuplicateAck(3))
	must(t, q.EventsComplete(2))
	_, err = q.WritingCheck(2)
	must(t, err)
	injected = checked(t, q)
	if !slices.Equal(injected.Completed, []spec.NodeID{3}) {
		t.Fatalf("completed %v, want [3]", injected.Completed)
	}
	return plain, injected
}

func cloneAckState(s spec.AckState) spec.AckState {
	c := s
	c.Queue = nil
	for _, a := range s.Queue {
		c.Queue = append(c.Queue, spec.Ack{NodeIDs: slices.Clone(a.NodeIDs), Ready: a.Ready})
	}
	c.Nodes = slices.Clone(s.Nodes)
	for i := range c.Nodes {
		c.Nodes[i].HostValue = slices.Clone(s.Nodes[i].HostValue)
	}
	c.Ongoing = slices.Clone(s.Ongoing)
	c.Pending = slices.Clone(s.Pending)
	c.Completed = slices.Clone(s.Completed)
	return c
}

// TestAckCheckersCatchBrokenStates: each §3.3 invariant holds on real states
// and fails, naming itself, on a state broken the way it guards against.
func TestAckCheckersCatchBrokenStates(t *testing.T) {
	plain, injected := ackCheckStates(t)
	cases := []struct {
		want   string
		base   spec.AckState
		mutate func(*spec.AckState)
	}{
		{"W1", plain, func(s *spec.AckState) { s.Queue = append(s.Queue, spec.Ack{NodeIDs: []spec.NodeID{2}}) }},
		{"W1", plain, func(s *spec.AckState) { s.Queue[0].NodeIDs = []spec.NodeID{2, 2} }},
		{"W2", plain, func(s *spec.AckState) { s.Queue[0].NodeIDs = []spec.NodeID{2, 1} }},
		{"W3", plain, func(s *spec.AckState) { s.Queue = []spec.Ack{} }},
		{"W4", plain, func(s *spec.AckState) { s.MaxAppended = 1 }},
		{"W6", plain, func(s *spec.AckState) { s.Nodes[0].LockRef = 2 }},
		{"W7", plain, func(s *spec.AckState) { s.HostFree-- }},
		{"W7", plain, func(s *spec.AckState) {
			s.Nodes[1].HostValue = []spec.SlotIdx{0}
			s.Ongoing[1].HostSlots = []spec.SlotIdx{0}
		}},
		{"W7", injected, func(s *spec.AckState) { s.Nodes[2].BackedUp = false }},
		{"W8", plain, func(s *spec.AckState) { s.ForeignWrites = 1 }},
		{"W9", injected, func(s *spec.AckState) { s.Completed = []spec.NodeID{2} }},
		{"W9", injected, func(s *spec.AckState) { s.Queue = []spec.Ack{} }},
	}
	for _, c := range cases {
		s := cloneAckState(c.base)
		c.mutate(&s)
		err := CheckAckState(s)
		if err == nil || !strings.HasPrefix(err.Error(), c.want+":") {
			t.Errorf("%s: the checker said %v", c.want, err)
		}
	}
	if err := CheckAckState(injected); err != nil {
		t.Fatalf("W1–W3 are suspended under fault injection, yet: %v", err)
	}
	other := cloneAckState(plain)
	other.Queue = other.Queue[:0]
	if err := CheckAckRanks([]spec.AckState{plain, plain}); err != nil {
		t.Fatal(err)
	}
	if err := CheckAckRanks([]spec.AckState{plain, other}); err == nil || !strings.HasPrefix(err.Error(), "W11:") {
		t.Errorf("W11: the checker said %v", err)
	}
	if err := CheckAckMonotone(injected, plain, false); err == nil || !strings.HasPrefix(err.Error(), "W4:") {
		t.Errorf("W4 monotone: the checker said %v", err)
	}
	if err := CheckAckMonotone(injected, plain, true); err == nil {
		t.Error("W4: a reset must leave max_appended at -1")
	}
}
