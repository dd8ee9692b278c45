package fast

import (
	"testing"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/spec"
)

// TestHasUndrainedTakesTheMaxShortcut shows the fast path is taken: an id
// above the max appended is answered without looking at the queue — here a
// queue that (by a push past the funnel) does name it — and with no
// allocation; an id at or below the max is scanned.
func TestHasUndrainedTakesTheMaxShortcut(t *testing.T) {
	q, err := newAckQueue(spec.AckConfig{NumLayers: 1, HostCapacity: 4}, fault.Ack{})
	if err != nil {
		t.Fatal(err)
	}
	q.appendWriteAck([]spec.NodeID{3, 5})
	q.push([]spec.NodeID{9}) // past the funnel: the max stays 5
	if q.NodeHasUndrainedWriteAck(9) {
		t.Fatal("Has(9) scanned the queue: 9 > max_appended (5) must exit on the compare")
	}
	if !q.NodeHasUndrainedWriteAck(5) || q.NodeHasUndrainedWriteAck(4) {
		t.Fatal("ids at or below the max must be scanned")
	}
	if n := testing.AllocsPerRun(100, func() { q.NodeHasUndrainedWriteAck(1 << 20) }); n != 0 {
		t.Fatalf("the fresh-id path allocates %v times", n)
	}
}

// TestDrainedHeadIsCompacted: draining moves the live queue to the front
// instead of growing the backing array forever.
func TestDrainedHeadIsCompacted(t *testing.T) {
	q, _ := newAckQueue(spec.AckConfig{NumLayers: 1, HostCapacity: 64}, fault.Ack{})
	for i := range 64 {
		id, _ := q.DeclareNode(0, 1)
		if err := q.WriteNonCP(id); err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			if err := q.EventsComplete(1); err != nil {
				t.Fatal(err)
			}
			if _, err := q.WritingCheck(1); err != nil {
				t.Fatal(err)
			}
		}
	}
	if live := len(q.queue) - q.head; live != 32 || q.head > live {
		t.Fatalf("head %d of %d: the drained prefix was not compacted", q.head, len(q.queue))
	}
}
