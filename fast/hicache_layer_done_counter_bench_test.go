package fast_test

import (
	"context"
	"testing"

	"github.com/kvtwin/kvtwin/spec"
)

// landedCounter is a counter of L layers whose consumer op has every layer
// landed, so readiness questions never block.
func landedCounter(b *testing.B, newCounter spec.NewLayerDoneCounterFunc, layers int) spec.LayerDoneCounter {
	c, err := newCounter(layers)
	if err != nil {
		b.Fatal(err)
	}
	slot, _ := c.UpdateProducer()
	_ = c.SetConsumer(slot)
	for l := range layers {
		_ = c.Complete(slot, l)
	}
	return c
}

// BenchmarkCounterWaitLanded is the attention read's per-layer wait on a
// landed layer (§5.3), the hot path: the fast counter answers from one
// atomic load, the reference takes its mutex.
func BenchmarkCounterWaitLanded(b *testing.B) {
	for _, tw := range stressTwins {
		b.Run(tw.name, func(b *testing.B) {
			c := landedCounter(b, tw.newCounter, 61)
			ctx := context.Background()
			l := 0
			for b.Loop() {
				if err := c.WaitUntil(ctx, l); err != nil {
					b.Fatal(err)
				}
				if l++; l == 61 {
					l = 0
				}
			}
		})
	}
}

// BenchmarkCounterLoadOp is one load op's counter traffic: the producer
// update, then per layer a Complete and the reader's Ready.
func BenchmarkCounterLoadOp(b *testing.B) {
	for _, tw := range stressTwins {
		b.Run(tw.name, func(b *testing.B) {
			c := landedCounter(b, tw.newCounter, 61)
			for b.Loop() {
				slot, err := c.UpdateProducer()
				if err != nil {
					b.Fatal(err)
				}
				_ = c.SetConsumer(slot)
				for l := range 61 {
					_ = c.Complete(slot, l)
					if ok, _ := c.Ready(l); !ok {
						b.Fatal("not ready")
					}
				}
			}
		})
	}
}
