package ref

import "fmt"

// The hicache.layer_done_script op (docs/spec/radix-acks.md §5.3): steps against one
// LayerDoneCounter, returning each step's answer and the state after it, so
// the counter gets fixtures and an HTTP endpoint. Blocking waits are not
// script steps (a single-threaded script would block forever); Ready is
// what a wait waits for, and the goroutine tests cover WaitUntil.

// Counter script step kinds.
const (
	// CounterUpdateProducer is UpdateProducer().
	CounterUpdateProducer = "update_producer"
	// CounterComplete is Complete(slot, layer).
	CounterComplete = "complete"
	// CounterSetConsumer is SetConsumer(slot).
	CounterSetConsumer = "set_consumer"
	// CounterReady is Ready(layer).
	CounterReady = "ready"
	// CounterReset is Reset().
	CounterReset = "reset"
)

// CounterStep is one step of a counter script.
type CounterStep struct {
	// Op is update_producer, complete, set_consumer, ready or reset.
	Op string `json:"op"`
	// Slot is the slot (complete, set_consumer).
	Slot int `json:"slot,omitzero"`
	// Layer is the layer (complete, ready).
	Layer int `json:"layer,omitzero"`
}

// HiCacheLayerDoneScriptInput is the input of hicache.layer_done_script.
type HiCacheLayerDoneScriptInput struct {
	// Layers is L, in [1, MaxCounterLayers].
	Layers int `json:"layers"`
	// Steps run in order.
	Steps []CounterStep `json:"steps"`
}

// CounterStepResult is one step's answer: the slot of an update, the
// answer of a ready, or the refusal; and the state after the step.
type CounterStepResult struct {
	// Op echoes the step.
	Op string `json:"op"`
	// Slot is update_producer's slot.
	Slot *int `json:"slot,omitempty"`
	// Ready is ready's answer.
	Ready *bool `json:"ready,omitempty"`
	// Error is the refusal (the counter did not change).
	Error *ErrorObject `json:"error,omitempty"`
	// State is the counter after the step.
	State CounterState `json:"state"`
}

// HiCacheLayerDoneScriptOutput is the output of hicache.layer_done_script.
type HiCacheLayerDoneScriptOutput struct {
	// Trace has one result per step.
	Trace []CounterStepResult `json:"trace"`
}

// validateLayerDoneScript rejects a script that cannot run: layers outside
// [1, MaxCounterLayers] or an unknown step (ErrBadEnum).
func validateLayerDoneScript(in HiCacheLayerDoneScriptInput) error {
	if err := CheckCounterLayers(in.Layers); err != nil {
		return err
	}
	for i, s := range in.Steps {
		switch s.Op {
		case CounterUpdateProducer, CounterComplete, CounterSetConsumer, CounterReady, CounterReset:
		default:
			return Reject(ErrBadEnum, Idx("steps", i)+".op", s.Op, "one of update_producer, complete, set_consumer, ready, reset")
		}
	}
	return nil
}

// RunHiCacheLayerDoneScript runs a validated script on a counter built by
// newCounter; both twins call it with their own counter.
func RunHiCacheLayerDoneScript(in HiCacheLayerDoneScriptInput, newCounter NewLayerDoneCounterFunc) (HiCacheLayerDoneScriptOutput, error) {
	if err := validateLayerDoneScript(in); err != nil {
		return HiCacheLayerDoneScriptOutput{}, err
	}
	c, err := newCounter(in.Layers)
	if err != nil {
		return HiCacheLayerDoneScriptOutput{}, err
	}
	out := HiCacheLayerDoneScriptOutput{Trace: make([]CounterStepResult, 0, len(in.Steps))}
	for i, s := range in.Steps {
		r := CounterStepResult{Op: s.Op}
		if err := counterStep(c, s, &r); err != nil {
			r.Error = new(ErrorObjectOf(prefixField(err, fmt.Sprintf("steps[%d].", i))))
		}
		r.State = c.State()
		out.Trace = append(out.Trace, r)
	}
	return out, nil
}

func counterStep(c LayerDoneCounter, s CounterStep, r *CounterStepResult) error {
	switch s.Op {
	case CounterUpdateProducer:
		p, err := c.UpdateProducer()
		if err == nil {
			r.Slot = &p
		}
		return err
	case CounterComplete:
		return c.Complete(s.Slot, s.Layer)
	case CounterSetConsumer:
		return c.SetConsumer(s.Slot)
	case CounterReady:
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
func HiCacheLayerDoneScript(_ Limits, in HiCacheLayerDoneScriptInput) (HiCacheLayerDoneScriptOutput, error) {
	return RunHiCacheLayerDoneScript(in, NewLayerDoneCounter)
}
