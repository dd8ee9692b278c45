package ref

import (
	"fmt"
	"slices"

	"github.com/kvtwin/kvtwin/spec"
)

// The invariants of docs/spec/radix-acks.md §3.3 as checkers on observable states.
// CheckAckState holds for every state of a fixed implementation outside a
// terminal error; CheckAckMonotone compares consecutive states; CheckAckRanks
// compares the ranks of one group. W5 (fast == scan) and W10 (a refusal is
// pure) need the objects, so the state machine checks them with
// ScanHasUndrained and a before/after comparison.

// ScanHasUndrained is the pure scan of §3.2 op 2: whether a queued ack of s
// names id.
func ScanHasUndrained(s spec.AckState, id spec.NodeID) bool {
	for _, a := range s.Queue {
		if slices.Contains(a.NodeIDs, id) {
			return true
		}
	}
	return false
}

// CheckAckState checks W1–W4 (W1–W3 suspended once fault injection pushed an
// ack), W6, W7, W8 and W9 on one rank's state, and the state's own shape.
func CheckAckState(s spec.AckState) error {
	for _, check := range []func(spec.AckState) error{ackW1W2W3, ackW4, ackW6, ackW7, ackW8, ackW9, ackShape} {
		if err := check(s); err != nil {
			return err
		}
	}
	return nil
}

func occurrences(s spec.AckState) map[spec.NodeID]int {
	occ := map[spec.NodeID]int{}
	for _, a := range s.Queue {
		for _, id := range a.NodeIDs {
			occ[id]++
		}
	}
	return occ
}

func ongoingIDs(s spec.AckState) map[spec.NodeID]spec.RegistrationState {
	m := map[spec.NodeID]spec.RegistrationState{}
	for _, r := range s.Ongoing {
		m[r.ID] = r
	}
	return m
}

func pendingIDs(s spec.AckState) map[spec.NodeID]bool {
	m := map[spec.NodeID]bool{}
	for _, p := range s.Pending {
		m[p.ID] = true
	}
	return m
}

func ackW1W2W3(s spec.AckState) error {
	if s.FaultInjected {
		return nil
	}
	ongoing, pending := ongoingIDs(s), pendingIDs(s)
	for i, a := range s.Queue {
		for j, id := range a.NodeIDs {
			if slices.Contains(a.NodeIDs[j+1:], id) {
				return fmt.Errorf("W1: ack %d lists id %d twice: %v", i, id, a.NodeIDs)
			}
			if _, ok := ongoing[id]; !ok || pending[id] {
				return fmt.Errorf("W2: queued id %d (ack %d) is not ongoing, or still pending (ongoing %t, pending %t)", id, i, ok, pending[id])
			}
		}
	}
	occ := occurrences(s)
	for id, n := range occ {
		if n > 1 {
			return fmt.Errorf("W1: id %d is named by %d queued acks", id, n)
		}
	}
	for _, r := range s.Ongoing {
		if pending[r.ID] == (occ[r.ID] == 1) {
			return fmt.Errorf("W3: ongoing id %d: pending %t, queued acks %d (want exactly one phase)", r.ID, pending[r.ID], occ[r.ID])
		}
	}
	return nil
}

func ackW4(s spec.AckState) error {
	for id := range occurrences(s) {
		if id > s.MaxAppended {
			return fmt.Errorf("W4: queued id %d > max_appended %d", id, s.MaxAppended)
		}
	}
	return nil
}

func ackW6(s spec.AckState) error {
	ongoing := ongoingIDs(s)
	for _, n := range s.Nodes {
		want := n.RequestLocks
		if _, ok := ongoing[n.ID]; ok {
			want++
		}
		if n.LockRef != want || n.RequestLocks < 0 {
			return fmt.Errorf("W6: node %d lock_ref %d, want request locks %d + ongoing registration = %d", n.ID, n.LockRef, n.RequestLocks, want)
		}
	}
	return nil
}

// ackW7: the allocated host slots are exactly the disjoint union of the
// host values of registered and backed-up nodes, and free + allocated ==
// capacity; a registration's slots are its node's host value.
func ackW7(s spec.AckState) error {
	ongoing := ongoingIDs(s)
	seen := map[spec.SlotIdx]spec.NodeID{}
	allocated := 0
	for _, n := range s.Nodes {
		reg, isReg := ongoing[n.ID]
		if len(n.HostValue) > 0 && !isReg && !n.BackedUp {
			return fmt.Errorf("W7: node %d holds host slots %v but is neither registered nor backed up", n.ID, n.HostValue)
		}
		if isReg && !slices.Equal(reg.HostSlots, n.HostValue) {
			return fmt.Errorf("W7: node %d registration slots %v, host value %v", n.ID, reg.HostSlots, n.HostValue)
		}
		if isReg && n.BackedUp {
			return fmt.Errorf("W7: node %d is both registered and backed up", n.ID)
		}
		for _, sl := range n.HostValue {
			if sl < 0 || sl >= spec.SlotIdx(s.Config.HostCapacity) {
				return fmt.Errorf("W7: node %d host slot %d outside [0, %d)", n.ID, sl, s.Config.HostCapacity)
			}
			if o, dup := seen[sl]; dup {
				return fmt.Errorf("W7: host slot %d held by nodes %d and %d", sl, o, n.ID)
			}
			seen[sl] = n.ID
			allocated++
		}
	}
	if s.HostFree+allocated != s.Config.HostCapacity {
		return fmt.Errorf("W7: free %d + allocated %d != capacity %d", s.HostFree, allocated, s.Config.HostCapacity)
	}
	return nil
}

func ackW8(s spec.AckState) error {
	if s.ForeignWrites != 0 {
		return fmt.Errorf("W8: %d layer copies wrote host slots not owned by their registration", s.ForeignWrites)
	}
	return nil
}

func ackW9(s spec.AckState) error {
	occ, ongoing := occurrences(s), ongoingIDs(s)
	for _, id := range s.Completed {
		if occ[id] == 0 {
			return fmt.Errorf("W9: completed id %d is named by no queued ack", id)
		}
		if _, ok := ongoing[id]; ok {
			return fmt.Errorf("W9: completed id %d is ongoing again", id)
		}
	}
	return nil
}

// ackShape: pending registrations are ongoing CP registrations with one
// flag per layer, ids are below next_id, readiness is a prefix, lists are
// sorted.
func ackShape(s spec.AckState) error {
	ongoing := ongoingIDs(s)
	for _, p := range s.Pending {
		if r, ok := ongoing[p.ID]; !ok || r.NonCP || len(p.Written) != s.Config.NumLayers {
			return fmt.Errorf("pending id %d: ongoing %t, non-CP %t, %d layer flags for %d layers", p.ID, ok, r.NonCP, len(p.Written), s.Config.NumLayers)
		}
	}
	for i := 1; i < len(s.Queue); i++ {
		if s.Queue[i].Ready && !s.Queue[i-1].Ready {
			return fmt.Errorf("ack %d is ready after an unready ack: readiness is not a prefix", i)
		}
	}
	if !slices.IsSorted(s.Completed) || !slices.IsSortedFunc(s.Ongoing, func(a, b spec.RegistrationState) int { return int(a.ID - b.ID) }) {
		return fmt.Errorf("completed or ongoing not in ascending id order")
	}
	for _, n := range s.Nodes {
		if n.ID < 1 || n.ID >= s.NextID {
			return fmt.Errorf("node %d outside [1, next_id=%d)", n.ID, s.NextID)
		}
	}
	return nil
}

// CheckAckMonotone checks W4's second half between consecutive states of one
// rank: max_appended never decreases, except at a reset.
func CheckAckMonotone(prev, cur spec.AckState, reset bool) error {
	if !reset && cur.MaxAppended < prev.MaxAppended {
		return fmt.Errorf("W4: max_appended fell from %d to %d without a reset", prev.MaxAppended, cur.MaxAppended)
	}
	if reset && cur.MaxAppended != -1 {
		return fmt.Errorf("W4: max_appended %d after a reset, want -1", cur.MaxAppended)
	}
	return nil
}

// CheckAckRanks is W11: the ranks of one group, driven by one operation
// sequence with independent readiness and MIN-agreed drains, hold identical
// Ongoing key sets, Queue id sequences, lock refs and completed memory.
func CheckAckRanks(states []spec.AckState) error {
	for r := 1; r < len(states); r++ {
		a, b := states[0], states[r]
		if !slices.Equal(regIDs(a), regIDs(b)) {
			return fmt.Errorf("W11: ongoing ids differ: rank 0 %v, rank %d %v", regIDs(a), r, regIDs(b))
		}
		if !slices.EqualFunc(a.Queue, b.Queue, func(x, y spec.Ack) bool { return slices.Equal(x.NodeIDs, y.NodeIDs) }) {
			return fmt.Errorf("W11: queue id sequences differ: rank 0 %v, rank %d %v", queueIDs(a), r, queueIDs(b))
		}
		if !slices.Equal(lockRefs(a), lockRefs(b)) {
			return fmt.Errorf("W11: lock refs differ: rank 0 %v, rank %d %v", lockRefs(a), r, lockRefs(b))
		}
		if !slices.Equal(a.Completed, b.Completed) {
			return fmt.Errorf("W11: completed memory differs: rank 0 %v, rank %d %v", a.Completed, r, b.Completed)
		}
	}
	return nil
}

func regIDs(s spec.AckState) []spec.NodeID {
	ids := []spec.NodeID{}
	for _, r := range s.Ongoing {
		ids = append(ids, r.ID)
	}
	return ids
}

func queueIDs(s spec.AckState) [][]spec.NodeID {
	ids := [][]spec.NodeID{}
	for _, a := range s.Queue {
		ids = append(ids, a.NodeIDs)
	}
	return ids
}

func lockRefs(s spec.AckState) [][2]int64 {
	refs := [][2]int64{}
	for _, n := range s.Nodes {
		refs = append(refs, [2]int64{n.ID, int64(n.LockRef)})
	}
	return refs
}
