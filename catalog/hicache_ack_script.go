package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// HiCacheAckScript registers hicache.ack_script (docs/spec/radix-acks.md §3): a step script
// run by a group of ranks on the HiCache write-ack queue, the trace of
// results and refusals, and every rank's final write state.
func HiCacheAckScript() *Op[spec.HiCacheAckScriptInput, spec.HiCacheAckScriptOutput] {
	return &Op[spec.HiCacheAckScriptInput, spec.HiCacheAckScriptOutput]{
		OpName:  "hicache.ack_script",
		SpecRef: "radix-acks.md §3",
		Summary: "HiCache write-ack queue on R ranks: reserve/layer_step/write_backup/write_noncp/events_complete/writing_check/rollback steps, trace and final per-rank state",
		Ref:     ref.HiCacheAckScript,
		Fast:    fast.HiCacheAckScript,
		Sample: spec.HiCacheAckScriptInput{Steps: []spec.AckStep{
			{Op: spec.AckCreate, Ranks: 2, Layers: 2, HostCapacity: 8},
			{Op: spec.AckNode, ValueLen: 2},
			{Op: spec.AckNode, ValueLen: 2},
			{Op: spec.AckReserve, Node: 1, Owned: []int{1, 1}},
			{Op: spec.AckReserve, Node: 2, Owned: []int{2, 0}},
			{Op: spec.AckLayerStep, Layer: 0},
			{Op: spec.AckLayerStep, Layer: 1},
			{Op: spec.AckHas, Node: 2},
			{Op: spec.AckEventsComplete, Rank: new(0), K: 1},
			{Op: spec.AckWritingCheck},
			{Op: spec.AckEventsComplete, Rank: new(1), K: 1},
			{Op: spec.AckWritingCheck},
		}},
		Shapes: []Shape[spec.HiCacheAckScriptInput]{
			// The prepare path: fresh ids reserved while n acks are queued.
			// The reference scans the queue for every reservation; the fast
			// twin leaves on one compare. The per-call figures are the Go
			// benchmarks BenchmarkHasUndrained (fast/hicache_ack_queue_bench_test.go).
			{Name: "fresh-reserves-over-256-queued", Make: func() spec.HiCacheAckScriptInput { return ackPreparePathScript(256) }},
			{Name: "fresh-reserves-over-1024-queued", Make: func() spec.HiCacheAckScriptInput { return ackPreparePathScript(1024) }},
		},
	}
}

// ackPreparePathScript is the §3.7 shape as a script on 2 ranks with 4
// layers: n non-CP writes leave n acks queued, then n freshly minted nodes
// are reserved (each reservation asks whether the fresh id has an
// undrained ack), one forward writes them, and everything drains.
func ackPreparePathScript(n int) spec.HiCacheAckScriptInput {
	steps := []spec.AckStep{{Op: spec.AckCreate, Ranks: 2, Layers: 4, HostCapacity: 2 * n}}
	for i := 1; i <= n; i++ {
		steps = append(steps, spec.AckStep{Op: spec.AckNode, ValueLen: 1}, spec.AckStep{Op: spec.AckWriteNonCP, Node: spec.NodeID(i)})
	}
	for i := n + 1; i <= 2*n; i++ {
		steps = append(steps, spec.AckStep{Op: spec.AckNode, ValueLen: 1}, spec.AckStep{Op: spec.AckReserve, Node: spec.NodeID(i), Owned: []int{1, 0}})
	}
	for l := range 4 {
		steps = append(steps, spec.AckStep{Op: spec.AckLayerStep, Layer: l})
	}
	steps = append(steps, spec.AckStep{Op: spec.AckEventsComplete, K: n + 1}, spec.AckStep{Op: spec.AckWritingCheck})
	return spec.HiCacheAckScriptInput{Steps: steps}
}
