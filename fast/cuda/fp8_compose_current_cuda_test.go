//go:build cuda

package cuda_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// composeInput is a global_valid compose of requests with the given
// prefix pages and current lengths over a fresh random pool (page size
// ps) and fresh random current rows; the current slots follow each prefix.
func composeInput(r *rand.Rand, ps int64, pages, lens []int) spec.FP8ComposeCurrentInput {
	var need int64
	for b := range lens {
		need += int64(pages[b])*ps + int64(lens[b])
	}
	pool := randomPool(r, ps, (need+ps-1)/ps*ps)
	in := spec.FP8ComposeCurrentInput{Pool: pool, Lens: lens, Contract: spec.ContractGlobalValid}
	perm := r.Perm(int(pool.Size/ps + 1)) // pages in random order
	next, cur := 0, 0
	for b := range lens {
		var pre, curs []int64
		for range pages[b] {
			p := int64(perm[next])
			next++
			for s := p * ps; s < (p+1)*ps; s++ {
				pre = append(pre, s)
			}
		}
		for range lens[b] {
			curs = append(curs, int64(r.IntN(int(pool.Size+ps))))
		}
		in.PrefixSlots = append(in.PrefixSlots, pre)
		in.CurrentSlots = append(in.CurrentSlots, curs)
		cur += lens[b]
	}
	in.Current = randomBF16Rows(r, spec.MLABF16RowBytes, cur, spec.FP8TileDim)
	return in
}

// TestFP8ComposeCurrentFromOneRowToPayload compares the CUDA twin with ref
// on batches from one row to payload scale (8 requests, 1K prefix pages
// of 64 and 4K current rows each: 36K output rows = 23 MiB), including
// requests without a prefix and without current rows.
func TestFP8ComposeCurrentFromOneRowToPayload(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(len(t.Name())), 76))
	type batch struct {
		ps          int64
		pages, lens []int
	}
	cases := []batch{{1, []int{0}, []int{1}}, {1, []int{1}, []int{0}}, {4, []int{2, 0, 1}, []int{3, 5, 0}}, {16, []int{20, 7}, []int{300, 1}}}
	if !testing.Short() {
		cases = append(cases, batch{64, []int{128, 0, 128, 128, 128, 128, 128, 128}, []int{512, 512, 512, 512, 512, 512, 512, 512}})
	}
	for _, c := range cases {
		in := composeInput(r, c.ps, c.pages, c.lens)
		want, werr := ref.FP8ComposeCurrent(spec.DefaultLimits(), in)
		got, gerr := cuda.FP8ComposeCurrent(spec.DefaultLimits(), in)
		if werr == nil && gerr == nil && !bytes.Equal(want.Rows.B, got.Rows.B) {
			i := firstDiff(want.Rows.B, got.Rows.B)
			t.Fatalf("lens %v: row %d byte %d differs", c.lens, i/spec.FP8RowBytes, i%spec.FP8RowBytes)
		}
		sameResultAsRef(t, "compose_current", want, werr, got, gerr)
	}
}
