package ref

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/spec"
)

// TestLayerDoneCounterWorkedExample is §5.3's example (L = 3).
func TestLayerDoneCounterWorkedExample(t *testing.T) {
	c, err := NewLayerDoneCounter(3)
	if err != nil {
		t.Fatal(err)
	}
	ready := func(l int, want bool) {
		t.Helper()
		if got, err := c.Ready(l); err != nil || got != want {
			t.Fatalf("Ready(%d) = %v, %v; want %v", l, got, err, want)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	ready(0, true) // C3: no consumer yet
	if p, err := c.UpdateProducer(); p != 0 || err != nil {
		t.Fatalf("UpdateProducer = %d, %v", p, err)
	}
	must(c.SetConsumer(0))
	ready(0, false)
	must(c.Complete(0, 0))
	ready(0, true)
	ready(1, false)
	must(c.Complete(0, 1))
	must(c.Complete(0, 2))
	ready(2, true)
	for _, want := range []int{1, 2, 0} {
		if p, err := c.UpdateProducer(); p != want || err != nil {
			t.Fatalf("UpdateProducer = %d, %v; want %d", p, err, want)
		}
		if want == 1 {
			must(c.Complete(1, 0)) // slot 1's op stops at done = 1
		}
	}
	before := c.State()
	if _, err := c.UpdateProducer(); !errors.Is(err, spec.ErrSlotBusy) {
		t.Fatalf("wrap onto a loading slot: %v, want ErrSlotBusy", err)
	}
	if c.State() != before {
		t.Fatal("a refused update changed the counter")
	}
}

func TestLayerDoneCounterRejects(t *testing.T) {
	c, _ := NewLayerDoneCounter(2)
	_, _ = c.UpdateProducer()
	before := c.State()
	for name, err := range map[string]error{
		"complete out of order": c.Complete(0, 1),
		"complete bad slot":     c.Complete(3, 0),
		"consumer bad slot":     c.SetConsumer(-2),
		"wait past L":           c.WaitUntil(context.Background(), 2),
	} {
		if _, ok := spec.AsInputError(err); !ok {
			t.Errorf("%s: got %v, want an input error", name, err)
		}
	}
	if _, err := c.Ready(-1); !errors.Is(err, spec.ErrLayerOutOfOrder) {
		t.Errorf("Ready(-1): %v", err)
	}
	if c.State() != before {
		t.Fatal("refused calls changed the counter")
	}
	for _, l := range []int{0, spec.MaxCounterLayers + 1} {
		if _, err := NewLayerDoneCounter(l); !errors.Is(err, spec.ErrBadLoadPools) {
			t.Errorf("NewLayerDoneCounter(%d): %v", l, err)
		}
	}
}

// TestWaitUntilWakesPerLayer: a waiter for layer 0 returns once layer 0
// lands while layer 1 is still loading; a cancelled wait returns the
// context's error.
func TestWaitUntilWakesPerLayer(t *testing.T) {
	c, _ := NewLayerDoneCounter(2)
	p, _ := c.UpdateProducer()
	_ = c.SetConsumer(p)
	done := make(chan error)
	go func() { done <- c.WaitUntil(context.Background(), 0) }()
	if err := c.Complete(p, 0); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := c.WaitUntil(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait for an unloaded layer: %v", err)
	}
}
