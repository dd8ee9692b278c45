package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TransferPerLayerScript registers transfer.per_layer_script (docs/spec/transfer.md §4): the
// §4.8 operations run on the per-layer transfer manager in deterministic
// mode over the in-memory engine, the trace, the final manager state, the
// engine's call log and the destination arena's digest.
func TransferPerLayerScript() *Op[spec.TransferPerLayerScriptInput, spec.TransferPerLayerScriptOutput] {
	return &Op[spec.TransferPerLayerScriptInput, spec.TransferPerLayerScriptOutput]{
		OpName:  "transfer.per_layer_script",
		SpecRef: "transfer.md §4",
		Summary: "per-layer prefill→decode transfer manager: register/forward/layer_end/complete_event/worker_step/engine_complete/inject/finish/drop steps, trace, state, engine calls, dst digest",
		Ref:     ref.TransferPerLayerScript,
		Fast:    fast.TransferPerLayerScript,
		Sample: spec.TransferPerLayerScriptInput{Steps: []spec.PerLayerStep{
			{Op: spec.PerLayerCreate, Layers: 3, Hooked: 2, Group: 2, ItemLen: 4, SrcPages: 4, DstPages: 4},
			{Op: spec.PerLayerRegister, Room: 7, Chunk: 0, Infos: 1, Owned: []int64{1, 2}, Dst: []int64{0, 3}},
			{Op: spec.PerLayerForwardBegin},
			{Op: spec.PerLayerLayerEnd, Layer: 0},
			{Op: spec.PerLayerLayerEnd, Layer: 1},
			{Op: spec.PerLayerForwardEnd},
			{Op: spec.PerLayerCompleteEvent, Event: 1},
			{Op: spec.PerLayerWorkerStep},
			{Op: spec.PerLayerFinish, Room: 7, Chunk: 0},
		}},
		Shapes: []Shape[spec.TransferPerLayerScriptInput]{
			// The seed's GLM-5 shape at bs=10 (docs/spec/transfer.md §4.5): the
			// per-call figures are the Go benchmarks BenchmarkPerLayer*
			// (fast/transfer_per_layer_manager_bench_test.go).
			{Name: "glm5-79-layers-bs10", Make: func() spec.TransferPerLayerScriptInput { return perLayerForwardScript(79, 78, 8, 10) }},
		},
	}
}

// perLayerForwardScript is one forward of bs requests, one chunk each, on
// n entries with h hooked layers and groups of k: register, every hook,
// every event, every worker step, every finish.
func perLayerForwardScript(n, h, k, bs int) spec.TransferPerLayerScriptInput {
	steps := []spec.PerLayerStep{{Op: spec.PerLayerCreate, Layers: n, Hooked: h, Group: k, ItemLen: 64, SrcPages: 4 * bs, DstPages: 4 * bs}}
	for r := range bs {
		p := int64(4 * r)
		steps = append(steps, spec.PerLayerStep{Op: spec.PerLayerRegister, Room: uint64(r + 1), Infos: 1,
			Owned: []int64{p, p + 1, p + 3}, Dst: []int64{p + 2, p + 3, p}})
	}
	steps = append(steps, spec.PerLayerStep{Op: spec.PerLayerForwardBegin})
	events := 0
	for l := range h {
		steps = append(steps, spec.PerLayerStep{Op: spec.PerLayerLayerEnd, Layer: l})
		if (l+1)%k == 0 || l+1 == h {
			events++
		}
	}
	steps = append(steps, spec.PerLayerStep{Op: spec.PerLayerForwardEnd})
	for e := 1; e <= events; e++ {
		steps = append(steps, spec.PerLayerStep{Op: spec.PerLayerCompleteEvent, Event: e})
	}
	for range events * bs {
		steps = append(steps, spec.PerLayerStep{Op: spec.PerLayerWorkerStep})
	}
	for r := range bs {
		steps = append(steps, spec.PerLayerStep{Op: spec.PerLayerFinish, Room: uint64(r + 1)})
	}
	return spec.TransferPerLayerScriptInput{Steps: steps}
}
