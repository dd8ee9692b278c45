package spec

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
