package fast

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestKthLargestMatchesSort checks the quickselect against a full sort on
// random, ascending, descending and organ-pipe inputs (the organ pipe
// repeats values, which the Hoare partition handles as well).
func TestKthLargestMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 1; n <= 70; n++ {
		shapes := map[string][]uint64{"random": make([]uint64, n), "asc": make([]uint64, n), "desc": make([]uint64, n), "pipe": make([]uint64, n)}
		perm := rng.Perm(n)
		for i := range n {
			shapes["random"][i] = uint64(perm[i])*7 + 1
			shapes["asc"][i] = uint64(i)
			shapes["desc"][i] = uint64(n - i)
			shapes["pipe"][i] = uint64(min(i, n-1-i))<<1 | uint64(i&1)
		}
		for name, a := range shapes {
			sorted := slices.Clone(a)
			slices.Sort(sorted)
			slices.Reverse(sorted)
			for k := 1; k <= n; k++ {
				if got := kthLargest(slices.Clone(a), k); got != sorted[k-1] {
					t.Fatalf("%s n=%d k=%d: %d, want %d", name, n, k, got, sorted[k-1])
				}
			}
		}
	}
}
