//go:build cuda

package cuda_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestTransferFilterCPRankLargePageLists compares the CUDA twin with ref on page
// lists from one page to payload scale (8M ids = 64 MiB), with fresh random
// ids, under both policies; the equiv suite covers the small generated cases.
func TestTransferFilterCPRankLargePageLists(t *testing.T) {
	rng := rand.New(rand.NewPCG(uint64(len(t.Name())), 7))
	sizes := []int{1, 2, 255, 256, 257, 4097, 1 << 20}
	if !testing.Short() {
		sizes = append(sizes, 8<<20)
	}
	for _, n := range sizes {
		kv := make([]int64, n)
		base := rng.Int64N(1 << 40)
		for i := range kv {
			kv[i] = base + int64(i)
		}
		if n > 4 {
			// a shuffled window, so value_range's first/last are not trivial
			w := kv[n/4 : n/2]
			rng.Shuffle(len(w), func(i, j int) { w[i], w[j] = w[j], w[i] })
		}
		total := int64(n) + 3
		for _, in := range []spec.TransferFilterCPRankInput{
			{KV: kv, ChunkPageStart: 1, CPRank: 3 % 8, CPSize: 8},
			{KV: kv, ChunkPageStart: 2, TotalPages: &total, CPRank: 5, CPSize: 7, Policy: spec.PositionRange},
			{KV: kv, CPRank: 0, CPSize: 1},
		} {
			want, werr := ref.TransferFilterCPRank(spec.DefaultLimits(), in)
			got, gerr := cuda.TransferFilterCPRank(spec.DefaultLimits(), in)
			if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
				t.Fatalf("n=%d %s: errors differ: ref %v, cuda %v", n, in.Policy, werr, gerr)
			}
			if !slices.Equal(want.Owned, got.Owned) || !slices.Equal(want.Positions, got.Positions) {
				t.Fatalf("n=%d policy=%q rank=%d/%d: results differ (%d vs %d owned)\n%s", n, in.Policy, in.CPRank, in.CPSize,
					len(want.Owned), len(got.Owned), cmp.Diff(want.Owned[:min(8, len(want.Owned))], got.Owned[:min(8, len(got.Owned))]))
			}
		}
	}
}

// TestTransferFilterCPRankNegativeIDIsRefsError checks the negative-id rejection
// found on the device is reported exactly as ref reports it.
func TestTransferFilterCPRankNegativeIDIsRefsError(t *testing.T) {
	kv := []int64{4, 5, -1, 7}
	in := spec.TransferFilterCPRankInput{KV: kv, CPRank: 1, CPSize: 2}
	_, werr := ref.TransferFilterCPRank(spec.DefaultLimits(), in)
	_, gerr := cuda.TransferFilterCPRank(spec.DefaultLimits(), in)
	if werr == nil || gerr == nil || werr.Error() != gerr.Error() {
		t.Fatalf("ref %v, cuda %v", werr, gerr)
	}
}
