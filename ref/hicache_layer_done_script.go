package ref

import (
	"fmt"

	"github.com/kvtwin/kvtwin/spec"
)

// The hicache.layer_done_script op (docs/spec/radix-acks.md §5.3): steps against one
// LayerDoneCounter, returning each step's answer and the state after it, so
// the counter gets fixtures and an HTTP endpoint. Blocking waits are not
// script steps (a single-threaded script would block forever); Ready is
// what a wait waits for, and the goroutine tests cover WaitUntil.

// validateLayerDoneScript rejects a script that cannot run: layers outside
// [1, MaxCounterLayers] or an unknown step (ErrBadEnum).
func validateLayerDoneScript(in spec.HiCacheLayerDoneScriptInput) error {
	if err := CheckCounterLayers(in.Layers); err != nil {
		return err
	}
	for i, s := range in.Steps {
		switch s.Op {
		case spec.CounterUpdateProducer, spec.CounterComplete, spec.CounterSetConsumer, spec.CounterReady, spec.CounterReset:
		default:
			return spec.Reject(spec.ErrBadEnum, spec.Idx("steps", i)+".op", s.Op, "one of update_producer, complete, set_consumer, ready, reset")
		}
	}
	return nil
}

// RunHiCacheLayerDoneScript runs a validated script on a counter built by
// newCounter; both twins call it with their own counter.
func RunHiCacheLayerDoneScript(in spec.HiCacheLayerDoneScriptInput, newCounter spec.NewLayerDoneCounterFunc) (spec.HiCacheLayerDoneScriptOutput, error) {
	if err := validateLayerDoneScript(in); err != nil {
		return spec.HiCacheLayerDoneScriptOutput{}, err
	}
	c, err := newCounter(in.Layers)
	if err != nil {
		return spec.HiCacheLayerDoneScriptOutput{}, err
	}
	out := spec.HiCacheLayerDoneScriptOutput{Trace: make([]spec.CounterStepResult, 0, len(in.Steps))}
	for i, s := range in.Steps {
		r := spec.CounterStepResult{Op: s.Op}
		if err := counterStep(c, s, &r); err != nil {
			r.Error = new(spec.ErrorObjectOf(prefixField(err, fmt.Sprintf("steps[%d].", i))))
		}
		r.State = c.State()
		out.Trace = append(out.Trace, r)
	}
	return out, nil
}

func counterStep(c spec.LayerDoneCounter, s spec.CounterStep, r *spec.CounterStepResult) error {
	switch s.Op {
	case spec.CounterUpdateProducer:
		p, err := c.UpdateProducer()
		if err == nil {
			r.Slot = &p
		}
		return err
	case spec.CounterComplete:
		return c.Complete(s.Slot, s.Layer)
	case spec.CounterSetConsumer:
		return c.SetConsumer(s.Slot)
	case spec.CounterReady:
		ok, err := c.Ready(s.Layer)
		if err == nil {
			r.Ready = &ok
		}
		return err
	}
	c.Reset()
	return nil
}

// HiCacheLayerDoneScript is the reference twin of hicache.layer_done_script
// (docs/spec/radix-acks.md §5.3).
func HiCacheLayerDoneScript(_ spec.Limits, in spec.HiCacheLayerDoneScriptInput) (spec.HiCacheLayerDoneScriptOutput, error) {
	return RunHiCacheLayerDoneScript(in, NewLayerDoneCounter)
}
