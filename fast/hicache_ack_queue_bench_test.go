package fast_test

import (
	"fmt"
	"testing"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// queuedAcks builds a write state with n non-CP acks queued (ids 1…n) and
// one more declared node, n+1, that was never appended: the prepare path's
// freshly minted id.
func queuedAcks(b *testing.B, newQueue spec.NewAckQueueFunc, n int) spec.AckQueue {
	q, err := newQueue(spec.AckConfig{NumLayers: 1, HostCapacity: n})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i <= n; i++ {
		if _, err := q.DeclareNode(0, 1); err != nil {
			b.Fatal(err)
		}
		if i < n {
			if err := q.WriteNonCP(spec.NodeID(i + 1)); err != nil {
				b.Fatal(err)
			}
		}
	}
	return q
}

var hasSink bool

// BenchmarkHasUndrained is docs/spec/radix-acks.md §3.7: NodeHasUndrainedWriteAck on a
// fresh id (the prepare path: fast leaves on one compare) and on an old id
// (the write_backup fallback: both twins scan; the id sits in the last ack,
// so the scan is whole), with 1, 64 and 1,024 queued acks. Target: fresh
// on fast ≤ 10 ns and ≥ 50× faster than ref's scan at 1,024.
func BenchmarkHasUndrained(b *testing.B) {
	impls := []struct {
		name string
		new  spec.NewAckQueueFunc
	}{{"ref", ref.NewAckQueue}, {"fast", fast.NewAckQueue}}
	for _, kind := range []string{"fresh", "old"} {
		for _, n := range []int{1, 64, 1024} {
			for _, impl := range impls {
				b.Run(fmt.Sprintf("%s/queue=%d/%s", kind, n, impl.name), func(b *testing.B) {
					q := queuedAcks(b, impl.new, n)
					id := spec.NodeID(n + 1)
					if kind == "old" {
						id = spec.NodeID(n)
					}
					want := kind == "old"
					b.ReportAllocs()
					for b.Loop() {
						hasSink = q.NodeHasUndrainedWriteAck(id)
					}
					if hasSink != want {
						b.Fatalf("Has(%d) = %t, want %t", id, hasSink, want)
					}
				})
			}
		}
	}
}
