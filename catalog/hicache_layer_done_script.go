package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// HiCacheLayerDoneScript registers hicache.layer_done_script (docs/spec/radix-acks.md
// §5.3): producer updates, layer completions, consumer changes and
// per-layer readiness questions against one LayerDoneCounter.
func HiCacheLayerDoneScript() *Op[spec.HiCacheLayerDoneScriptInput, spec.HiCacheLayerDoneScriptOutput] {
	return &Op[spec.HiCacheLayerDoneScriptInput, spec.HiCacheLayerDoneScriptOutput]{
		OpName:  "hicache.layer_done_script",
		SpecRef: "radix-acks.md §5.3",
		Summary: "per-layer load readiness: a 3-slot ring of done counts; update_producer/complete/set_consumer/ready/reset steps and the state after each",
		Ref:     ref.HiCacheLayerDoneScript,
		Fast:    fast.HiCacheLayerDoneScript,
		Sample:  LayerDoneWorkedExample(),
		// Every step answers with the counter's whole state, and a refused
		// one with its canonical error and message: up to 18 output bytes
		// per request byte, bounded by the step list, not by a number.
		// Measured with the harness's limits on 1 MiB of steps: both twins
		// 127 B per request byte on {"op":"complete"} (each refused), 79 on
		// update_producer, 42 on reset. 192 leaves half again of headroom.
		Work: Cost{PerInputByte: 192, PerOutputByte: 8, Fixed: 4 << 20},
		Shapes: []Shape[spec.HiCacheLayerDoneScriptInput]{
			{Name: "79-layers-3-ops-ready-per-layer", Make: func() spec.HiCacheLayerDoneScriptInput { return layerDoneBench(79, 3) }},
		},
	}
}

// LayerDoneWorkedExample is docs/spec/radix-acks.md §5.3's example (L = 3).
func LayerDoneWorkedExample() spec.HiCacheLayerDoneScriptInput {
	s := func(op string, slot, layer int) spec.CounterStep {
		return spec.CounterStep{Op: op, Slot: slot, Layer: layer}
	}
	return spec.HiCacheLayerDoneScriptInput{Layers: 3, Steps: []spec.CounterStep{
		s(spec.CounterUpdateProducer, 0, 0), s(spec.CounterSetConsumer, 0, 0), s(spec.CounterReady, 0, 0),
		s(spec.CounterComplete, 0, 0), s(spec.CounterReady, 0, 0), s(spec.CounterReady, 0, 1),
		s(spec.CounterComplete, 0, 1), s(spec.CounterComplete, 0, 2), s(spec.CounterReady, 0, 2),
		s(spec.CounterUpdateProducer, 0, 0), s(spec.CounterComplete, 1, 0),
		s(spec.CounterUpdateProducer, 0, 0), s(spec.CounterUpdateProducer, 0, 0), s(spec.CounterUpdateProducer, 0, 0),
	}}
}

// layerDoneBench is ops load ops of layers layers, the consumer asking
// Ready(l) before and after each layer lands.
func layerDoneBench(layers, ops int) spec.HiCacheLayerDoneScriptInput {
	in := spec.HiCacheLayerDoneScriptInput{Layers: layers}
	for o := range ops {
		slot := o % spec.CounterSlots
		in.Steps = append(in.Steps, spec.CounterStep{Op: spec.CounterUpdateProducer}, spec.CounterStep{Op: spec.CounterSetConsumer, Slot: slot})
		for l := range layers {
			in.Steps = append(in.Steps, spec.CounterStep{Op: spec.CounterReady, Layer: l},
				spec.CounterStep{Op: spec.CounterComplete, Slot: slot, Layer: l}, spec.CounterStep{Op: spec.CounterReady, Layer: l})
		}
	}
	return in
}
