package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
)

// TransferPerLayerScript registers transfer.per_layer_script (docs/spec/transfer.md §4): the
// §4.8 operations run on the per-layer transfer manager in deterministic
// mode over the in-memory engine, the trace, the final manager state, the
// engine's call log and the destination arena's digest.
func TransferPerLayerScript() *Op[ref.TransferPerLayerScriptInput, ref.TransferPerLayerScriptOutput] {
	return &Op[ref.TransferPerLayerScriptInput, ref.TransferPerLayerScriptOutput]{
		OpName:  "transfer.per_layer_script",
		SpecRef: "transfer.md §4",
		Summary: "per-layer prefill→decode transfer manager: register/forward/layer_end/complete_event/worker_step/engine_complete/inject/finish/drop steps, trace, state, engine calls, dst digest",
		Ref:     ref.TransferPerLayerScript,
		Fast:    fast.TransferPerLayerScript,
		Sample: ref.TransferPerLayerScriptInput{Steps: []ref.PerLayerStep{
			{Op: ref.PerLayerCreate, Layers: 3, Hooked: 2, Group: 2, ItemLen: 4, SrcPages: 4, DstPages: 4},
			{Op: ref.PerLayerRegister, Room: 7, Chunk: 0, Infos: 1, Owned: []int64{1, 2}, Dst: []int64{0, 3}},
			{Op: ref.PerLayerForwardBegin},
			{Op: ref.PerLayerLayerEnd, Layer: 0},
			{Op: ref.PerLayerLayerEnd, Layer: 1},
			{Op: ref.PerLayerForwardEnd},
			{Op: ref.PerLayerCompleteEvent, Event: 1},
			{Op: ref.PerLayerWorkerStep},
			{Op: ref.PerLayerFinish, Room: 7, Chunk: 0},
		}},
		Shapes: []Shape[ref.TransferPerLayerScriptInput]{
			// The seed's GLM-5 shape at bs=10 (docs/spec/transfer.md §4.5): the
			// per-call figures are the Go benchmarks BenchmarkPerLayer*
			// (fast/transfer_per_layer_manager_bench_test.go).
			{Name: "glm5-79-layers-bs10", Make: func() ref.TransferPerLayerScriptInput { return PerLayerForwardScript(79, 78, 8, 10) }},
		},
	}
}

// PerLayerForwardScript is one forward of bs requests, one chunk each, on
// n entries with h hooked layers and groups of k: register, every hook,
// every event, every worker step, every finish.
func PerLayerForwardScript(n, h, k, bs int) ref.TransferPerLayerScriptInput {
	steps := []ref.PerLayerStep{{Op: ref.PerLayerCreate, Layers: n, Hooked: h, Group: k, ItemLen: 64, SrcPages: 4 * bs, DstPages: 4 * bs}}
	for r := range bs {
		p := int64(4 * r)
		steps = append(steps, ref.PerLayerStep{Op: ref.PerLayerRegister, Room: uint64(r + 1), Infos: 1,
			Owned: []int64{p, p + 1, p + 3}, Dst: []int64{p + 2, p + 3, p}})
	}
	steps = append(steps, ref.PerLayerStep{Op: ref.PerLayerForwardBegin})
	events := 0
	for l := range h {
		steps = append(steps, ref.PerLayerStep{Op: ref.PerLayerLayerEnd, Layer: l})
		if (l+1)%k == 0 || l+1 == h {
			events++
		}
	}
	steps = append(steps, ref.PerLayerStep{Op: ref.PerLayerForwardEnd})
	for e := 1; e <= events; e++ {
		steps = append(steps, ref.PerLayerStep{Op: ref.PerLayerCompleteEvent, Event: e})
	}
	for range events * bs {
		steps = append(steps, ref.PerLayerStep{Op: ref.PerLayerWorkerStep})
	}
	for r := range bs {
		steps = append(steps, ref.PerLayerStep{Op: ref.PerLayerFinish, Room: uint64(r + 1)})
	}
	return ref.TransferPerLayerScriptInput{Steps: steps}
}
