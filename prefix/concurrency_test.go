package prefix_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/kvtwin/kvtwin/prefix"
	"github.com/kvtwin/kvtwin/spec"
)

// TestRegistryIsSafeUnderConcurrentUse hammers a registry from many
// goroutines with every operation, pools being deleted and re-created
// underneath, and requires -race to stay quiet, no goroutine to fail with
// anything but an input error, and every surviving pool to agree with
// itself afterwards.
func TestRegistryIsSafeUnderConcurrentUse(t *testing.T) {
	r := newRegistry(t, prefix.Limits{MaxPools: 4, MaxPoolCapacity: 256, MaxRequestTokens: 64, MaxBytes: 1 << 30})
	names := []string{"p0", "p1", "p2", "p3"}
	for _, n := range names {
		if _, err := r.Create(n, prefix.Config{PageSize: 2, CapacityTokens: 64}); err != nil {
			t.Fatal(err)
		}
	}
	const workers, steps = 12, 300
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range steps {
				if err := hammerOnce(r, names, rng); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, n := range r.List() {
		s := n.Pool.Stats()
		if s.UsedTokens+s.FreeTokens != s.CapacityTokens || s.EvictableTokens+s.ProtectedTokens != s.UsedTokens {
			t.Errorf("pool %s: inconsistent stats %+v", n.Name, s)
		}
	}
}

// hammerOnce runs one random operation; only non-input errors are failures
// (unknown pools, full pools and stale nodes are expected under churn).
func hammerOnce(r *prefix.Registry, names []string, rng *rand.Rand) error {
	name := names[rng.IntN(len(names))]
	tokens := make([]int64, rng.IntN(40))
	for i := range tokens {
		tokens[i] = rng.Int64N(4)
	}
	var err error
	op := rng.IntN(9)
	switch op {
	case 0:
		_, err = r.Score(tokens, noExtra, nil, false)
	case 1:
		_, err = r.Create(name, prefix.Config{PageSize: 2, CapacityTokens: 64})
	case 2:
		if rng.IntN(4) == 0 {
			err = r.Delete(name)
		}
	default:
		var p *prefix.Pool
		if p, err = r.Get(name); err == nil {
			err = poolOp(p, op, tokens, rng)
		}
	}
	if _, ok := spec.AsInputError(err); err != nil && !ok {
		return fmt.Errorf("op %d on %s: %w", op, name, err)
	}
	return nil
}

func poolOp(p *prefix.Pool, op int, tokens []int64, rng *rand.Rand) error {
	switch op {
	case 3:
		_, err := p.Insert(tokens, noExtra, 0)
		return err
	case 4:
		m, err := p.Match(tokens, noExtra, rng.IntN(2) == 0)
		if err == nil && m.Locked && rng.IntN(2) == 0 {
			_, err = p.Unlock(m.LastNode)
		}
		return err
	case 5:
		_, err := p.PrefixLen(tokens, noExtra)
		return err
	case 6:
		_, err := p.Evict(rng.IntN(16))
		return err
	case 7:
		_, err := p.Lock(spec.NodeID(rng.IntN(8)))
		return err
	}
	p.Stats()
	_, err := p.Unlock(spec.NodeID(rng.IntN(8)))
	return err
}
