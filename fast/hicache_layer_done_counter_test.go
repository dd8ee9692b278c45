package fast_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// stressPools are small arenas with an index buffer on two of six layers.
func stressPools() spec.LoadPools {
	return spec.LoadPools{Layers: 6, HostSlots: 64, DevSlots: 64, KVBytes: 4, IndexBytes: 2, IndexLayers: []int{0, 3}}
}

// stressPages are op r's page lists (page size 2): 8 device pages in two
// runs, from host pages that move with r.
func stressPages(r int) (host, dev []spec.SlotIdx) {
	for k := range 8 {
		hp, dp := int64((r*5+k*3)%32), int64((r*8+k)%32)
		if k >= 4 {
			dp = int64((r*8 + 20 + k) % 32)
		}
		host, dev = append(host, 2*hp, 2*hp+1), append(dev, 2*dp, 2*dp+1)
	}
	return host, dev
}

// endWhenLanded is §5.3's integration rule: the descriptor of the op
// loading into slot may be ended only once the slot's done count is L.
func endWhenLanded(c spec.LayerDoneCounter, slot int, d spec.LoadDescriptor) error {
	st := c.State()
	if st.Done[slot] != st.Layers {
		return fmt.Errorf("EndLoad with slot %d at %d of %d layers", slot, st.Done[slot], st.Layers)
	}
	return d.EndLoad()
}

// loadRound is one load op with concurrent per-layer readers: the producer
// submits layer l and completes it on the counter; readers wait for layer
// l alone, then compare every device page of the op with its host page.
// After completing layer 0 the producer holds layer 1 back until a reader
// has read layer 0, which only per-layer readiness allows (overlap waits
// at most patience). It returns the first violation.
func loadRound(ld spec.Loader, c spec.LayerDoneCounter, r, readers int, patience time.Duration) error {
	p := ld.Arena().Pools
	slot, err := c.UpdateProducer()
	if err != nil {
		return err
	}
	if err := c.SetConsumer(slot); err != nil {
		return err
	}
	host, dev := stressPages(r)
	d, err := ld.BeginLoad(uint64(r), host, dev, 2, spec.LoadBackend{})
	if err != nil {
		return err
	}
	landed := make([]atomic.Bool, p.Layers)
	readZero := make(chan struct{}, readers)
	errs := make(chan error, readers+1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() { errs <- readLayers(ctx, ld.Arena(), c, host, dev, landed, readZero) })
	}
	errs <- produce(d, c, slot, r, landed, readZero, patience)
	if err := endWhenLanded(c, slot, d); err != nil {
		errs <- err
	}
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// produce submits and completes every layer in order, holding layer 1
// back until a reader has read layer 0 (or patience runs out).
func produce(d spec.LoadDescriptor, c spec.LayerDoneCounter, slot, r int, landed []atomic.Bool, readZero <-chan struct{}, patience time.Duration) error {
	for l := range landed {
		if err := d.SubmitLayer(uint64(r), l); err != nil {
			return err
		}
		landed[l].Store(true)
		if err := c.Complete(slot, l); err != nil {
			return err
		}
		if l == 0 && len(landed) > 1 {
			select {
			case <-readZero:
			case <-time.After(patience):
				// Finish the op so the readers end, then report.
				for l := 1; l < len(landed); l++ {
					_ = d.SubmitLayer(uint64(r), l)
					landed[l].Store(true)
					_ = c.Complete(slot, l)
				}
				return errors.New("no reader got layer 0 while layer 1 was loading: readiness is not per layer")
			}
		}
	}
	return nil
}

// readLayers waits for each layer in turn and checks it landed before the
// wait returned and holds the op's host bytes.
func readLayers(ctx context.Context, a *spec.LoadArena, c spec.LayerDoneCounter, host, dev []spec.SlotIdx, landed []atomic.Bool, readZero chan<- struct{}) error {
	p := a.Pools
	for l := range landed {
		if err := c.WaitUntil(ctx, l); err != nil {
			return err
		}
		if !landed[l].Load() {
			return fmt.Errorf("layer %d read before its load", l)
		}
		for i := 0; i < len(host); i += 2 {
			h, d := host[i]*p.KVBytes, dev[i]*p.KVBytes
			if !bytes.Equal(a.DevKV[l][d:d+2*p.KVBytes], a.HostKV[l][h:h+2*p.KVBytes]) {
				return fmt.Errorf("layer %d: device slot %d does not hold host slot %d", l, dev[i], host[i])
			}
		}
		if l == 0 {
			readZero <- struct{}{}
		}
	}
	return nil
}

var stressTwins = []struct {
	name       string
	newLoader  spec.NewLoaderFunc
	newCounter spec.NewLayerDoneCounterFunc
}{{"ref", ref.NewLoader, ref.NewLayerDoneCounter}, {"fast", fast.NewLoader, fast.NewLayerDoneCounter}}

// TestLayerDoneCounterStressPerLayerReads is C1 in any interleaving (run
// under -race): a producer completes layers while readers wait per layer;
// no read precedes its load, every read sees the op's bytes, readers of
// layer 0 go while layer 1 is still loading, descriptors end only once
// their slot is complete, and every goroutine ends with its round.
func TestLayerDoneCounterStressPerLayerReads(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, tw := range stressTwins {
		t.Run(tw.name, func(t *testing.T) {
			ld, err := tw.newLoader(spec.DefaultLimits(), stressPools())
			if err != nil {
				t.Fatal(err)
			}
			c, err := tw.newCounter(stressPools().Layers)
			if err != nil {
				t.Fatal(err)
			}
			for r := range 40 {
				if err := loadRound(ld, c, r, 4, 5*time.Second); err != nil {
					t.Fatalf("round %d: %v", r, err)
				}
			}
		})
	}
}

// TestAllLayerWaitLosesTheOverlap runs the stress round on the §5.4 B5.c
// mutant: its readers of layer 0 wait for the whole op, so the producer
// holding layer 1 back sees no read of layer 0.
func TestAllLayerWaitLosesTheOverlap(t *testing.T) {
	defer goleak.VerifyNone(t)
	ld, _ := fast.NewLoader(spec.DefaultLimits(), stressPools())
	c, _ := fault.Installed().NewLayerDoneCounter(stressPools().Layers, fault.Load{AllLayerWait: true})
	if err := loadRound(ld, c, 0, 2, 50*time.Millisecond); err == nil {
		t.Fatal("the all-layer wait kept the per-layer overlap")
	}
}

// TestCounterReadyIsLockFree: Ready and a wait on a landed layer take no
// lock and allocate nothing.
func TestCounterReadyIsLockFree(t *testing.T) {
	c, _ := fast.NewLayerDoneCounter(61)
	slot, _ := c.UpdateProducer()
	_ = c.SetConsumer(slot)
	_ = c.Complete(slot, 0)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		if ok, _ := c.Ready(0); !ok {
			t.Fatal("layer 0 not ready")
		}
		if err := c.WaitUntil(ctx, 0); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Ready + WaitUntil on a landed layer allocate %v times", allocs)
	}
}
