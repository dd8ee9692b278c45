package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
)

// HiCacheAckScript registers hicache.ack_script (docs/spec/radix-acks.md §3): a step script
// run by a group of ranks on the HiCache write-ack queue, the trace of
// results and refusals, and every rank's final write state.
func HiCacheAckScript() *Op[ref.HiCacheAckScriptInput, ref.HiCacheAckScriptOutput] {
	return &Op[ref.HiCacheAckScriptInput, ref.HiCacheAckScriptOutput]{
		OpName:  "hicache.ack_script",
		SpecRef: "radix-acks.md §3",
		Summary: "HiCache write-ack queue on R ranks: reserve/layer_step/write_backup/write_noncp/events_complete/writing_check/rollback steps, trace and final per-rank state",
		Ref:     ref.HiCacheAckScript,
		Fast:    fast.HiCacheAckScript,
		Sample: ref.HiCacheAckScriptInput{Steps: []ref.AckStep{
			{Op: ref.AckCreate, Ranks: 2, Layers: 2, HostCapacity: 8},
			{Op: ref.AckNode, ValueLen: 2},
			{Op: ref.AckNode, ValueLen: 2},
			{Op: ref.AckReserve, Node: 1, Owned: []int{1, 1}},
			{Op: ref.AckReserve, Node: 2, Owned: []int{2, 0}},
			{Op: ref.AckLayerStep, Layer: 0},
			{Op: ref.AckLayerStep, Layer: 1},
			{Op: ref.AckHas, Node: 2},
			{Op: ref.AckEventsComplete, Rank: new(0), K: 1},
			{Op: ref.AckWritingCheck},
			{Op: ref.AckEventsComplete, Rank: new(1), K: 1},
			{Op: ref.AckWritingCheck},
		}},
		Shapes: []Shape[ref.HiCacheAckScriptInput]{
			// The prepare path: fresh ids reserved while n acks are queued.
			// The reference scans the queue for every reservation; the fast
			// twin leaves on one compare. The per-call figures are the Go
			// benchmarks BenchmarkHasUndrained (fast/hicache_ack_queue_bench_test.go).
			{Name: "fresh-reserves-over-256-queued", Make: func() ref.HiCacheAckScriptInput { return AckPreparePathScript(256) }},
			{Name: "fresh-reserves-over-1024-queued", Make: func() ref.HiCacheAckScriptInput { return AckPreparePathScript(1024) }},
		},
	}
}

// AckPreparePathScript is the §3.7 shape as a script on 2 ranks with 4
// layers: n non-CP writes leave n acks queued, then n freshly minted nodes
// are reserved (each reservation asks whether the fresh id has an
// undrained ack), one forward writes them, and everything drains.
func AckPreparePathScript(n int) ref.HiCacheAckScriptInput {
	steps := []ref.AckStep{{Op: ref.AckCreate, Ranks: 2, Layers: 4, HostCapacity: 2 * n}}
	for i := 1; i <= n; i++ {
		steps = append(steps, ref.AckStep{Op: ref.AckNode, ValueLen: 1}, ref.AckStep{Op: ref.AckWriteNonCP, Node: ref.NodeID(i)})
	}
	for i := n + 1; i <= 2*n; i++ {
		steps = append(steps, ref.AckStep{Op: ref.AckNode, ValueLen: 1}, ref.AckStep{Op: ref.AckReserve, Node: ref.NodeID(i), Owned: []int{1, 0}})
	}
	for l := range 4 {
		steps = append(steps, ref.AckStep{Op: ref.AckLayerStep, Layer: l})
	}
	steps = append(steps, ref.AckStep{Op: ref.AckEventsComplete, K: n + 1}, ref.AckStep{Op: ref.AckWritingCheck})
	return ref.HiCacheAckScriptInput{Steps: steps}
}
