package ref

import (
	"context"
	"sync"

	"github.com/kvtwin/kvtwin/spec"
)

// This file holds the LayerDoneCounter both twins implement (docs/spec/radix-acks.md
// §5.3): a ring of three slots of per-layer completion counts, so that in
// overlap mode the producer (the load stream) and the consumer (the batch
// being computed) can be up to two load ops apart, and a reader of layer l
// waits for layer l only — never for the whole op.

// refCounter is the reference counter: every field under one mutex, and
// waiters on a condition variable broadcast at every change.
type refCounter struct {
	mu    sync.Mutex
	cond  *sync.Cond
	state spec.CounterState
}

// NewLayerDoneCounter returns the reference counter for layers layers, all
// slots idle (done = L) and no producer or consumer.
func NewLayerDoneCounter(layers int) (spec.LayerDoneCounter, error) {
	if err := CheckCounterLayers(layers); err != nil {
		return nil, err
	}
	c := &refCounter{state: spec.CounterState{Layers: layers, Producer: -1, Consumer: -1}}
	for i := range c.state.Done {
		c.state.Done[i] = layers
	}
	c.cond = sync.NewCond(&c.mu)
	return c, nil
}

// UpdateProducer moves the producer to the next slot unless it is still loading.
func (c *refCounter) UpdateProducer() (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := (c.state.Producer + 1) % spec.CounterSlots
	if d := c.state.Done[p]; d < c.state.Layers {
		return 0, SlotBusyError(p, d, c.state.Layers)
	}
	c.state.Done[p], c.state.Producer = 0, p
	c.cond.Broadcast()
	return p, nil
}

// Complete records layer l of slot, which must be the slot's done count.
func (c *refCounter) Complete(slot, l int) error {
	if err := CheckSlot(slot, false); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.state.Done[slot]; l != d || l >= c.state.Layers {
		return CompleteOrderError(l, d, c.state.Layers)
	}
	c.state.Done[slot]++
	c.cond.Broadcast()
	return nil
}

// SetConsumer records the slot the computed batch reads (-1: none).
func (c *refCounter) SetConsumer(slot int) error {
	if err := CheckSlot(slot, true); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.state.Consumer = slot
	c.cond.Broadcast()
	return nil
}

// ready is §5.3's Ready(l) on the locked state.
func (c *refCounter) ready(l int) bool {
	return c.state.Consumer < 0 || c.state.Done[c.state.Consumer] > l
}

// Ready reports whether layer l of the consumer's op has landed.
func (c *refCounter) Ready(l int) (bool, error) {
	if err := CheckReadyLayer(l, c.layers()); err != nil {
		return false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ready(l), nil
}

func (c *refCounter) layers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state.Layers
}

// WaitUntil waits on the condition variable until layer l is ready; a
// context that ends wakes the waiters so this one can return.
func (c *refCounter) WaitUntil(ctx context.Context, l int) error {
	if err := CheckReadyLayer(l, c.layers()); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for !c.ready(l) {
		if err := ctx.Err(); err != nil {
			return err
		}
		c.cond.Wait()
	}
	return nil
}

// Reset forgets producer and consumer; the slots keep their counts.
func (c *refCounter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.state.Producer, c.state.Consumer = -1, -1
	c.cond.Broadcast()
}

// State returns the observable state.
func (c *refCounter) State() spec.CounterState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}
