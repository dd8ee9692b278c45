//go:build cuda

package cuda_test

import (
	"math/rand/v2"
	"testing"

	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestFP8MaterializePagesFromOneRowToPayload compares the CUDA twin with
// ref: random slots (repeats allowed, runs of whole pages among them),
// one row to payload scale (64K-slot pool, 32K rows gathered = 21 MiB).
func TestFP8MaterializePagesFromOneRowToPayload(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(len(t.Name())), 75))
	cases := []struct{ ps, size, n int64 }{{1, 0, 1}, {1, 3, 9}, {64, 64, 64}, {16, 4096, 1000}}
	if !testing.Short() {
		cases = append(cases, struct{ ps, size, n int64 }{64, 64 << 10, 32 << 10})
	}
	for _, c := range cases {
		in := spec.FP8MaterializePagesInput{Pool: randomPool(r, c.ps, c.size), Slots: make([]int64, 0, c.n)}
		slots := c.size + c.ps
		for int64(len(in.Slots)) < c.n {
			if r.IntN(2) == 0 { // a whole page
				p := r.Int64N(slots / c.ps)
				for s := p * c.ps; s < (p+1)*c.ps && int64(len(in.Slots)) < c.n; s++ {
					in.Slots = append(in.Slots, s)
				}
				continue
			}
			in.Slots = append(in.Slots, r.Int64N(slots))
		}
		want, werr := ref.FP8MaterializePages(spec.DefaultLimits(), in)
		got, gerr := cuda.FP8MaterializePages(spec.DefaultLimits(), in)
		sameResultAsRef(t, "materialize_pages", want, werr, got, gerr)
	}
	// no slots, and a slot out of range: ref's result and error
	for _, slots := range [][]int64{{}, {1, 2, 99}} {
		in := spec.FP8MaterializePagesInput{Pool: randomPool(r, 2, 4), Slots: slots}
		want, werr := ref.FP8MaterializePages(spec.DefaultLimits(), in)
		got, gerr := cuda.FP8MaterializePages(spec.DefaultLimits(), in)
		sameResultAsRef(t, "materialize_pages", want, werr, got, gerr)
	}
}
