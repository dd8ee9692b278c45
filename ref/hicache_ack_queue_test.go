package ref

import (
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kvtwin/kvtwin/spec"
)

func newAcks(t *testing.T, layers, capacity int, valueLens ...int) spec.AckQueue {
	t.Helper()
	q, err := NewAckQueue(spec.AckConfig{NumLayers: layers, HostCapacity: capacity})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range valueLens {
		if _, err := q.DeclareNode(0, n); err != nil {
			t.Fatal(err)
		}
	}
	return q
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func checked(t *testing.T, q spec.AckQueue) spec.AckState {
	t.Helper()
	s := q.State()
	if err := CheckAckState(s); err != nil {
		t.Fatalf("%v\nstate: %+v", err, s)
	}
	return s
}

// §3.4 "Fast path versus scan": a merged ack [3,5], Has on both sides of
// the max, and the max kept after the drain.
func TestAckHasUndrainedWorkedExample(t *testing.T) {
	q := newAcks(t, 1, 16, 1, 1, 1, 1, 1)
	if q.NodeHasUndrainedWriteAck(3) || q.State().MaxAppended != -1 {
		t.Fatal("fresh state: Has(3) must be false with max -1")
	}
	must(t, q.ReserveWriteCP(3, 1))
	must(t, q.ReserveWriteCP(5, 0))
	acked, err := q.LayerStep(0)
	must(t, err)
	if !slices.Equal(acked, []spec.NodeID{3, 5}) || q.State().MaxAppended != 5 {
		t.Fatalf("merged ack %v, max %d; want [3 5], 5", acked, q.State().MaxAppended)
	}
	if q.NodeHasUndrainedWriteAck(4) || !q.NodeHasUndrainedWriteAck(5) || q.NodeHasUndrainedWriteAck(6) {
		t.Fatal("Has(4), Has(5), Has(6) must be false, true, false")
	}
	must(t, q.EventsComplete(1))
	d, err := q.WritingCheck(1)
	must(t, err)
	if !slices.Equal(d.Completed, []spec.NodeID{3, 5}) || q.NodeHasUndrainedWriteAck(5) || q.State().MaxAppended != 5 {
		t.Fatalf("after the drain: %+v, Has(5) %t, max %d", d, q.NodeHasUndrainedWriteAck(5), q.State().MaxAppended)
	}
	checked(t, q)
}

// §3.4 "Duplicate consumer", example 1: both copies ready in one drain.
func TestAckDuplicateConsumerOneDrain(t *testing.T) {
	q := newAcks(t, 1, 8)
	_, err := q.DeclareNode(7, 2)
	must(t, err)
	must(t, q.WriteNonCP(7))
	must(t, q.InjectDuplicateAck(7))
	must(t, q.EventsComplete(2))
	d, err := q.WritingCheck(2)
	must(t, err)
	s := checked(t, q)
	if !slices.Equal(d.Completed, []spec.NodeID{7}) || d.Duplicates != 1 || s.DuplicateAcks != 1 ||
		len(s.Completed) != 0 || len(s.Ongoing) != 0 || s.Nodes[0].LockRef != 0 {
		t.Fatalf("drain %+v, state %+v", d, s)
	}
}

// §3.4 "Duplicate consumer", example 2: the duplicate drains later, so
// the completed id is remembered until then.
func TestAckDuplicateConsumerSplitDrains(t *testing.T) {
	q := newAcks(t, 1, 8)
	_, err := q.DeclareNode(7, 2)
	must(t, err)
	must(t, q.WriteNonCP(7))
	must(t, q.InjectDuplicateAck(7))
	must(t, q.EventsComplete(1))
	_, err = q.WritingCheck(1)
	must(t, err)
	if s := checked(t, q); !slices.Equal(s.Completed, []spec.NodeID{7}) {
		t.Fatalf("completed %v after the first drain, want [7]", s.Completed)
	}
	must(t, q.EventsComplete(1))
	d, err := q.WritingCheck(1)
	must(t, err)
	if s := checked(t, q); d.Duplicates != 1 || len(s.Completed) != 0 || s.DuplicateAcks != 1 {
		t.Fatalf("second drain %+v, completed %v", d, s.Completed)
	}
}

// §3.4 "Unknown ack" and §3.5 B3.d: fail fast, never a blind pop.
func TestAckUnknownAckFailsFast(t *testing.T) {
	q := newAcks(t, 1, 8)
	must(t, q.AppendWriteAck([]spec.NodeID{9}))
	must(t, q.EventsComplete(1))
	_, err := q.WritingCheck(1)
	if !errors.Is(err, spec.ErrUnknownWriteAck) {
		t.Fatalf("got %v, want ErrUnknownWriteAck", err)
	}
	if ie, _ := spec.AsInputError(err); ie.Value != spec.NodeID(9) {
		t.Fatalf("the error names %v, want id 9", ie.Value)
	}
}

// §3.5 B3.a, fixed: the non-CP append goes through the funnel.
func TestAckNonCPAppendRaisesMax(t *testing.T) {
	q := newAcks(t, 1, 8)
	_, err := q.DeclareNode(5, 1)
	must(t, err)
	must(t, q.WriteNonCP(5))
	if s := checked(t, q); s.MaxAppended != 5 || !q.NodeHasUndrainedWriteAck(5) {
		t.Fatalf("max %d, Has(5) %t; want 5, true", s.MaxAppended, q.NodeHasUndrainedWriteAck(5))
	}
}

// §3.5 B3.b after-ack variant, fixed: the rollback scrubs the ack, the
// re-registration owns the only queued ack and completes through it.
func TestAckRollbackAfterAckScrubs(t *testing.T) {
	q := newAcks(t, 2, 8)
	_, err := q.DeclareNode(4, 2)
	must(t, err)
	if err := q.WriteBackupCP(4, 2, spec.FailAfterAck); !errors.Is(err, spec.ErrWriteBackupFailed) {
		t.Fatalf("got %v, want the injected failure", err)
	}
	if s := checked(t, q); len(s.Queue) != 0 || len(s.Ongoing) != 0 || s.HostFree != 8 || s.MaxAppended != 4 {
		t.Fatalf("after the rollback: %+v", s)
	}
	must(t, q.WriteBackupCP(4, 2, spec.FailNone))
	must(t, q.EventsComplete(1))
	d, err := q.WritingCheck(1)
	must(t, err)
	if s := checked(t, q); !slices.Equal(d.Completed, []spec.NodeID{4}) || d.Duplicates != 0 || !s.Nodes[0].BackedUp {
		t.Fatalf("drain %+v, state %+v", d, s)
	}
}

// §3.5 B3.b mid-layer variant, fixed: the rollback cancels the layer
// state, so the next forward writes only node 6 into the reused slots.
func TestAckRollbackMidLayersCancelsLayerState(t *testing.T) {
	q := newAcks(t, 2, 2)
	_, err := q.DeclareNode(4, 2)
	must(t, err)
	_, err = q.DeclareNode(6, 2)
	must(t, err)
	if err := q.WriteBackupCP(4, 2, spec.FailMidLayers); !errors.Is(err, spec.ErrWriteBackupFailed) {
		t.Fatalf("got %v", err)
	}
	must(t, q.ReserveWriteCP(6, 2))
	if s := checked(t, q); !slices.Equal(s.Ongoing[0].HostSlots, []spec.SlotIdx{0, 1}) {
		t.Fatalf("node 6 did not reuse the freed slots: %+v", s.Ongoing)
	}
	for l := range 2 {
		acked, err := q.LayerStep(l)
		must(t, err)
		if want := []spec.NodeID{6}; l == 1 && !slices.Equal(acked, want) {
			t.Fatalf("layer 1 acked %v, want %v", acked, want)
		}
	}
	if s := checked(t, q); s.ForeignWrites != 0 || s.CopiedPages != 2+4 {
		t.Fatalf("foreign writes %d, copied pages %d", s.ForeignWrites, s.CopiedPages)
	}
}

// The zero-owned rank registers and acks at the last layer step, like
// its peers: its copies are no-ops.
func TestAckZeroOwnedRankRegistersAndAcksAtLastLayer(t *testing.T) {
	q := newAcks(t, 2, 4, 2)
	must(t, q.ReserveWriteCP(1, 0))
	a0, _ := q.LayerStep(0)
	a1, _ := q.LayerStep(1)
	if len(a0) != 0 || !slices.Equal(a1, []spec.NodeID{1}) {
		t.Fatalf("acks %v then %v, want none then [1]", a0, a1)
	}
	if s := checked(t, q); s.CopiedPages != 0 || s.Nodes[0].LockRef != 1 {
		t.Fatalf("%+v", s)
	}
}

// Every refusal reason, in its order, changes nothing (§3.3 W10).
func TestAckRefusalsArePure(t *testing.T) {
	q := newAcks(t, 1, 5, 2, 2, 2, 2, 1)
	must(t, q.EvictDevice(1))
	must(t, q.ReserveWriteCP(2, 1))
	must(t, q.WriteNonCP(3))
	must(t, q.WriteNonCP(5))
	must(t, q.InjectDuplicateAck(5))
	must(t, q.EventsComplete(1))
	_, err := q.WritingCheck(1) // completes 3
	must(t, err)
	must(t, q.EventsComplete(1))
	_, err = q.WritingCheck(1) // completes 5; the duplicate of 5 stays queued
	must(t, err)
	cases := []struct {
		id     spec.NodeID
		reason spec.WriteFailureReason
	}{{1, spec.ReasonEvicted}, {2, spec.ReasonPending}, {5, spec.ReasonUndrainedAck}, {4, spec.ReasonHostFull}}
	for _, c := range cases {
		before := q.State()
		err := q.ReserveWriteCP(c.id, 1)
		if f, ok := asWriteFailure(err); !ok || f.Reason != c.reason || !errors.Is(err, spec.ErrHiCacheWriteFailure) {
			t.Fatalf("node %d: got %v, want reason %s", c.id, err, c.reason)
		}
		if diff := cmp.Diff(before, q.State()); diff != "" {
			t.Fatalf("node %d: refusal changed the state:\n%s", c.id, diff)
		}
	}
	checked(t, q)
}

// A node whose host copy is complete cannot be reserved again: a caller
// error, not a refusal, and it changes nothing.
func TestAckBackedUpNodeIsNotReservedAgain(t *testing.T) {
	q := newAcks(t, 1, 8, 1)
	must(t, q.WriteNonCP(1))
	must(t, q.EventsComplete(1))
	_, err := q.WritingCheck(1)
	must(t, err)
	before := q.State()
	if err := q.ReserveWriteCP(1, 1); !errors.Is(err, errAlreadyBackedUp) {
		t.Fatalf("got %v", err)
	}
	if diff := cmp.Diff(before, q.State()); diff != "" {
		t.Fatal(diff)
	}
}

// evict_host frees unlocked, device-evicted, backed-up host copies in
// ascending id, and only when that makes enough room.
func TestAckEvictHostRetry(t *testing.T) {
	q := newAcks(t, 1, 4, 2, 2, 3)
	must(t, q.WriteNonCP(1))
	must(t, q.WriteNonCP(2))
	must(t, q.EventsComplete(2))
	_, err := q.WritingCheck(2)
	must(t, err)
	must(t, q.EvictDevice(1))
	before := q.State()
	if f, ok := asWriteFailure(q.WriteNonCP(3)); !ok || f.Reason != spec.ReasonHostFull {
		t.Fatal("3 slots cannot be made from node 1's 2 alone")
	}
	if diff := cmp.Diff(before, q.State()); diff != "" {
		t.Fatalf("a host-full refusal evicted anyway:\n%s", diff)
	}
	must(t, q.EvictDevice(2))
	must(t, q.WriteNonCP(3))
	s := checked(t, q)
	if len(s.Nodes[0].HostValue) != 0 || len(s.Nodes[1].HostValue) != 0 || s.HostFree != 1 {
		t.Fatalf("%+v", s)
	}
}

// §3.6 and the common bad-input rules: each rejection names its field and
// bound and leaves the state unchanged; a double rollback is errNotRegistered.
func TestAckBadInputChangesNothing(t *testing.T) {
	q := newAcks(t, 2, 8, 2)
	must(t, q.ReserveWriteCP(1, 1))
	cases := []struct {
		name  string
		call  func() error
		want  *spec.Sentinel
		field string
	}{
		{"empty ack", func() error { return q.AppendWriteAck(nil) }, errEmptyAck, "ids"},
		{"negative ack id", func() error { return q.AppendWriteAck([]spec.NodeID{1, -2}) }, spec.ErrNegative, "ids[1]"},
		{"drain beyond ready", func() error { _, err := q.WritingCheck(1); return err }, errDrainBeyondReady, "agreed"},
		{"negative drain", func() error { _, err := q.WritingCheck(-1); return err }, spec.ErrNegative, "agreed"},
		{"rollback unregistered", func() error { return q.RollbackPendingBackup(2) }, errNotRegistered, "node"},
		{"prepared rollback unknown", func() error { return q.RollbackPreparedCPBackup(-1) }, errNotRegistered, "node"},
		{"layer below range", func() error { _, err := q.LayerStep(-1); return err }, spec.ErrLayerOutOfOrder, "layer"},
		{"layer above range", func() error { _, err := q.LayerStep(2); return err }, spec.ErrLayerOutOfOrder, "layer"},
		{"unknown node", func() error { return q.ReserveWriteCP(9, 0) }, spec.ErrForeignNode, "node"},
		{"negative owned", func() error { return q.ReserveWriteCP(1, -1) }, spec.ErrNegative, "owned"},
		{"owned above bound", func() error { return q.WriteBackupCP(1, spec.MaxOwnedPages+1, spec.FailNone) }, errOwnedPages, "owned"},
		{"bad fail_at", func() error { return q.WriteBackupCP(1, 0, "later") }, spec.ErrBadEnum, "fail_at"},
		{"negative value len", func() error { _, err := q.DeclareNode(0, -1); return err }, spec.ErrNegative, "value_len"},
		{"reused node id", func() error { _, err := q.DeclareNode(1, 1); return err }, errNodeIDTaken, "node"},
		{"huge node id", func() error { _, err := q.DeclareNode(spec.MaxAckNodeID+1, 1); return err }, spec.ErrOverflow, "node"},
		{"negative events", func() error { return q.EventsComplete(-1) }, spec.ErrNegative, "k"},
		{"events beyond queue", func() error { return q.EventsComplete(1) }, errEventsBeyondQueue, "k"},
		{"evict locked", func() error { return q.EvictDevice(1) }, errNodeLocked, "node"},
		{"unlock without lock", func() error { return q.Unlock(1) }, spec.ErrLockUnderflow, "node"},
		{"duplicate of nothing", func() error { return q.InjectDuplicateAck(1) }, spec.ErrUnknownWriteAck, "node"},
	}
	for _, c := range cases {
		before := q.State()
		err := c.call()
		ie, ok := spec.AsInputError(err)
		if !errors.Is(err, c.want) || !ok || ie.Field != c.field || ie.Bound == "" {
			t.Errorf("%s: got %v, want %s on field %s", c.name, err, c.want.Code(), c.field)
		}
		if diff := cmp.Diff(before, q.State()); diff != "" {
			t.Errorf("%s: the failed call changed the state:\n%s", c.name, diff)
		}
	}
	must(t, q.RollbackPendingBackup(1))
	if err := q.RollbackPendingBackup(1); !errors.Is(err, errNotRegistered) {
		t.Fatalf("double rollback: %v", err)
	}
	if _, err := NewAckQueue(spec.AckConfig{NumLayers: 0}); !errors.Is(err, spec.ErrBadNumLayers) {
		t.Fatal(err)
	}
	if _, err := NewAckQueue(spec.AckConfig{NumLayers: 1, HostCapacity: -1}); !errors.Is(err, spec.ErrNegative) {
		t.Fatal(err)
	}
}

// A final ack for a registration still writing layers is terminal.
func TestAckForPendingBackupIsTerminal(t *testing.T) {
	q := newAcks(t, 2, 8, 2)
	must(t, q.ReserveWriteCP(1, 1))
	must(t, q.AppendWriteAck([]spec.NodeID{1}))
	must(t, q.EventsComplete(1))
	if _, err := q.WritingCheck(1); !errors.Is(err, spec.ErrAckForPendingBackup) {
		t.Fatalf("got %v", err)
	}
}

// Reset clears everything and restarts ids and the max.
func TestAckReset(t *testing.T) {
	q := newAcks(t, 1, 8, 1)
	must(t, q.WriteNonCP(1))
	q.Reset()
	s := checked(t, q)
	if s.MaxAppended != -1 || s.NextID != 1 || len(s.Queue)+len(s.Nodes)+len(s.Ongoing) != 0 || s.HostFree != 8 {
		t.Fatalf("%+v", s)
	}
}
