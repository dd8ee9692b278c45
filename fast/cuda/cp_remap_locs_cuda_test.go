//go:build cuda

package cuda_test

import (
	"math/rand/v2"
	"testing"

	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// sharedWindows is bs rows of perRow pages each, the first shared of them
// common to every row (a radix-cache prefix hit), ids drawn shuffled from
// one pool.
func sharedWindows(rng *rand.Rand, bs, perRow, shared int) [][]int64 {
	pool := make([]int64, shared+bs*(perRow-shared))
	for i := range pool {
		pool[i] = int64(i)*3 + 1
	}
	rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	rows, next := make([][]int64, bs), shared
	for b := range rows {
		rows[b] = append(append([]int64{}, pool[:shared]...), pool[next:next+perRow-shared]...)
		next += perRow - shared
	}
	return rows
}

// remapInput draws n locations (one in eight padding, −1) over random rows
// of pages, every location on a page of its row.
func remapInput(rng *rand.Rand, pages [][]int64, ps int64, n int) spec.CPRemapLocsInput {
	in := spec.CPRemapLocsInput{PageSize: ps, Pages: pages, Locs: make([]int64, n), RowIDs: make([]int32, n)}
	for e := range n {
		b := rng.IntN(len(pages))
		in.RowIDs[e] = int32(b)
		if rng.IntN(8) == 0 || len(pages[b]) == 0 {
			in.Locs[e] = -1
			continue
		}
		in.Locs[e] = pages[b][rng.IntN(len(pages[b]))]*ps + rng.Int64N(ps)
	}
	return in
}

// TestCPRemapLocsMatchesRef runs the CUDA twin against ref on random batches
// whose rows share pages, page sizes 1 to 64, from no location and one
// location to the payload shape (bs=10 rows of 100K tokens at ps=64, a 40K
// token shared prefix: 1M locations), and on the row-free path (no shared
// pages; and shared pages, which it refuses).
func TestCPRemapLocsMatchesRef(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 1))
	for _, n := range []int{0, 1, 2, 7, 300, 5000} {
		for _, ps := range []int64{1, 2, 3, 64} {
			bs := 1 + rng.IntN(6)
			perRow := 1 + rng.IntN(40)
			in := remapInput(rng, sharedWindows(rng, bs, perRow, rng.IntN(perRow+1)), ps, n)
			sameAsRef(t, "remap", ref.CPRemapLocs, cuda.CPRemapLocs, in)
			in.Global, in.RowIDs = true, nil // refused when rows share pages
			sameAsRef(t, "remap global", ref.CPRemapLocs, cuda.CPRemapLocs, in)
			in = remapInput(rng, sharedWindows(rng, bs, perRow, 0), ps, n)
			in.Global, in.RowIDs = true, nil
			sameAsRef(t, "remap global unique", ref.CPRemapLocs, cuda.CPRemapLocs, in)
		}
	}
	if testing.Short() {
		return
	}
	const bs, tokens, ps = 10, 100_000, 64
	pages := sharedWindows(rng, bs, (tokens+ps-1)/ps, 40_000/ps)
	in := spec.CPRemapLocsInput{PageSize: ps, Pages: pages}
	for b, row := range pages {
		for tok := range int64(tokens) {
			in.Locs = append(in.Locs, row[tok/ps]*ps+tok%ps)
			in.RowIDs = append(in.RowIDs, int32(b))
		}
	}
	sameAsRef(t, "remap payload", ref.CPRemapLocs, cuda.CPRemapLocs, in)
}

// TestCPRemapLocsBadEntryIsRefsFirst checks that with several bad entries the
// error is ref's for the lowest one, whatever its kind — the device folds
// the bad indices with atomicMin, the host names the error — and that the
// checks before the scan (page size, windows, counts) are ref's too.
func TestCPRemapLocsBadEntryIsRefsFirst(t *testing.T) {
	pages := [][]int64{{7, 3}, {3, 9}}
	good := func() spec.CPRemapLocsInput {
		return spec.CPRemapLocsInput{PageSize: 2, Pages: pages, Locs: []int64{14, 7, 6, 19, -1, 15, 18},
			RowIDs: []int32{0, 0, 1, 1, 1, 0, 1}}
	}
	cases := []struct {
		name   string
		mutate func(in *spec.CPRemapLocsInput)
	}{
		{"page not in row, then bad loc", func(in *spec.CPRemapLocsInput) { in.Locs[5], in.Locs[6] = 19, -2 }},
		{"bad loc, then bad row", func(in *spec.CPRemapLocsInput) { in.Locs[3], in.RowIDs[5] = -7, 2 }},
		{"bad row on padding", func(in *spec.CPRemapLocsInput) { in.RowIDs[4] = -1 }},
		{"bad loc first of three", func(in *spec.CPRemapLocsInput) { in.Locs[0], in.Locs[1], in.RowIDs[2] = -3, 1, 9 }},
		{"page size", func(in *spec.CPRemapLocsInput) { in.PageSize = 0 }},
		{"duplicate page", func(in *spec.CPRemapLocsInput) { in.Pages = [][]int64{{7, 7}, {3}} }},
		{"row ids length", func(in *spec.CPRemapLocsInput) { in.RowIDs = in.RowIDs[:3] }},
		{"global with row ids", func(in *spec.CPRemapLocsInput) { in.Global = true }},
		{"global page missing", func(in *spec.CPRemapLocsInput) {
			in.Global, in.RowIDs, in.Pages, in.Locs[2] = true, nil, [][]int64{{7, 3}, {9}}, 1
		}},
	}
	sameAsRef(t, "remap good", ref.CPRemapLocs, cuda.CPRemapLocs, good())
	for _, c := range cases {
		name, in := c.name, good()
		c.mutate(&in)
		if _, err := ref.CPRemapLocs(spec.DefaultLimits(), in); err == nil {
			t.Fatalf("%s: ref accepted the input; the case is wrong", name)
		}
		sameAsRef(t, "remap "+name, ref.CPRemapLocs, cuda.CPRemapLocs, in)
	}
}
