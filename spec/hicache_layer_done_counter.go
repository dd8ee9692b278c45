package spec

import (
	"context"
)

// CounterSlots is the size of the counter's ring (docs/spec/radix-acks.md §5.3).
const CounterSlots = 3

// CounterState is the observable state of a LayerDoneCounter.
type CounterState struct {
	// Layers is L.
	Layers int `json:"layers"`
	// Producer is the slot of the op being loaded, -1 before the first.
	Producer int `json:"producer"`
	// Consumer is the slot the computed batch reads, -1 for none.
	Consumer int `json:"consumer"`
	// Done are the slots' completed layer counts (L: idle = complete).
	Done [CounterSlots]int `json:"done"`
}

// LayerDoneCounter is the per-layer readiness counter (docs/spec/radix-acks.md §5.3).
// It is safe for concurrent use: one producer completing layers, any number
// of waiters. A refused call changes nothing.
type LayerDoneCounter interface {
	// UpdateProducer moves the producer to the next slot of the ring and
	// starts it at done = 0; ErrSlotBusy while that slot is still loading.
	UpdateProducer() (int, error)
	// Complete records layer l of slot as landed; l must be the slot's done
	// count (ErrLayerOutOfOrder) — the load stream is in order.
	Complete(slot, l int) error
	// SetConsumer records the slot the batch being computed loaded into,
	// -1 when it loaded nothing.
	SetConsumer(slot int) error
	// Ready reports whether layer l of the consumer's op has landed (always
	// with no consumer); l outside [0, L) is ErrLayerOutOfOrder.
	Ready(l int) (bool, error)
	// WaitUntil blocks until Ready(l) or ctx ends; it wakes for layer l,
	// not for the whole op.
	WaitUntil(ctx context.Context, l int) error
	// Reset forgets producer and consumer (the slots keep their counts).
	Reset()
	// State returns the observable state.
	State() CounterState
}

// NewLayerDoneCounterFunc builds a counter for L layers;
// ref.NewLayerDoneCounter and fast.NewLayerDoneCounter have this type.
type NewLayerDoneCounterFunc func(layers int) (LayerDoneCounter, error)
