package fast

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// LayerDoneCounter is the fast spec.LayerDoneCounter (docs/spec/radix-acks.md §5.3). Its whole
// state — three 16-bit done counts, the consumer and the producer — is one
// atomic word, so Ready is a single load of a consistent snapshot and a
// waiter whose layer has landed never takes the lock. Writers are
// serialized by mu and broadcast to waiters only when there are any.
type LayerDoneCounter struct {
	layers int
	word   atomic.Uint64
	mu     sync.Mutex
	cond   *sync.Cond
	// waiters counts goroutines parked in WaitUntil (under mu).
	waiters int
	faults  fault.Load
}

// The packed word: done[i] in bits 16i..16i+15, then the consumer and the
// producer as 2-bit fields holding slot+1 (0 is -1, none).
const (
	consumerShift = 48
	producerShift = 50
	fieldMask     = 1<<16 - 1
)

type packed uint64

func (w packed) done(i int) int { return int(uint64(w) >> (16 * i) & fieldMask) }
func (w packed) consumer() int  { return int(uint64(w)>>consumerShift&3) - 1 }
func (w packed) producer() int  { return int(uint64(w)>>producerShift&3) - 1 }

func (w packed) withDone(i, d int) packed {
	return packed(uint64(w)&^(fieldMask<<(16*i)) | uint64(d)<<(16*i))
}

func (w packed) withConsumer(s int) packed {
	return packed(uint64(w)&^(3<<consumerShift) | uint64(s+1)<<consumerShift)
}

func (w packed) withProducer(s int) packed {
	return packed(uint64(w)&^(3<<producerShift) | uint64(s+1)<<producerShift)
}

// NewLayerDoneCounter returns a fast counter for layers layers, all slots
// idle (done = L) and no producer or consumer.
func NewLayerDoneCounter(layers int) (spec.LayerDoneCounter, error) {
	return newLayerDoneCounterWithFaults(layers, fault.Load{})
}

// newLayerDoneCounterWithFaults is NewLayerDoneCounter with the historic bugs
// f selects put back (only AllLayerWait is read here), for the bug zoo only:
// fault.Hooks hands it to equiv/mutants (hooks.go). Called with the zero value
// it is NewLayerDoneCounter.
func newLayerDoneCounterWithFaults(layers int, f fault.Load) (spec.LayerDoneCounter, error) {
	c, err := newCounter(layers, f)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func newCounter(layers int, f fault.Load) (*LayerDoneCounter, error) {
	if err := ref.CheckCounterLayers(layers); err != nil {
		return nil, err
	}
	c := &LayerDoneCounter{layers: layers, faults: f}
	var w packed
	for i := range spec.CounterSlots {
		w = w.withDone(i, layers)
	}
	c.word.Store(uint64(w.withConsumer(-1).withProducer(-1)))
	c.cond = sync.NewCond(&c.mu)
	return c, nil
}

// publish stores w and wakes the waiters; the caller holds mu.
func (c *LayerDoneCounter) publish(w packed) {
	c.word.Store(uint64(w))
	if c.waiters > 0 {
		c.cond.Broadcast()
	}
}

func (c *LayerDoneCounter) load() packed { return packed(c.word.Load()) }

// UpdateProducer moves the producer to the next slot, refusing a slot that
// is still loading (ErrSlotBusy).
func (c *LayerDoneCounter) UpdateProducer() (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.load()
	p := (w.producer() + 1) % spec.CounterSlots
	if d := w.done(p); d < c.layers {
		return 0, ref.SlotBusyError(p, d, c.layers)
	}
	c.publish(w.withDone(p, 0).withProducer(p))
	return p, nil
}

// Complete records layer l of slot, which must be the slot's done count.
func (c *LayerDoneCounter) Complete(slot, l int) error {
	if err := ref.CheckSlot(slot, false); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.load()
	if d := w.done(slot); l != d || l >= c.layers {
		return ref.CompleteOrderError(l, d, c.layers)
	}
	c.publish(w.withDone(slot, l+1))
	return nil
}

// SetConsumer records the slot the computed batch reads (-1: none).
func (c *LayerDoneCounter) SetConsumer(slot int) error {
	if err := ref.CheckSlot(slot, true); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.publish(c.load().withConsumer(slot))
	return nil
}

// ready is §5.3's Ready(l) on one snapshot.
func (c *LayerDoneCounter) ready(w packed, l int) bool {
	s := w.consumer()
	if s < 0 {
		return true
	}
	if c.faults.AllLayerWait {
		return w.done(s) == c.layers
	}
	return w.done(s) > l
}

// Ready reports whether layer l of the consumer's op has landed: one
// atomic load, no lock.
func (c *LayerDoneCounter) Ready(l int) (bool, error) {
	if err := ref.CheckReadyLayer(l, c.layers); err != nil {
		return false, err
	}
	return c.ready(c.load(), l), nil
}

// WaitUntil returns at once when layer l is ready; otherwise it parks on
// the condition variable until a change makes it ready or ctx ends.
func (c *LayerDoneCounter) WaitUntil(ctx context.Context, l int) error {
	if err := ref.CheckReadyLayer(l, c.layers); err != nil {
		return err
	}
	if c.ready(c.load(), l) {
		return nil
	}
	stop := context.AfterFunc(ctx, func() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waiters++
	defer func() { c.waiters-- }()
	for !c.ready(c.load(), l) {
		if err := ctx.Err(); err != nil {
			return err
		}
		c.cond.Wait()
	}
	return nil
}

// Reset forgets producer and consumer; the slots keep their counts.
func (c *LayerDoneCounter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.publish(c.load().withConsumer(-1).withProducer(-1))
}

// State returns the observable state (one consistent snapshot).
func (c *LayerDoneCounter) State() spec.CounterState {
	w := c.load()
	s := spec.CounterState{Layers: c.layers, Producer: w.producer(), Consumer: w.consumer()}
	for i := range s.Done {
		s.Done[i] = w.done(i)
	}
	return s
}
