package fast

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kvtwin/kvtwin/ref"
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

// TestSortKeyMatchesRef compares the branch-light key with the
// reference's on every special value and a million random bit patterns
// (the sign, exponent and NaN edges are in the list).
func TestSortKeyMatchesRef(t *testing.T) {
	special := []uint32{0, 0x80000000, 1, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x80800000,
		0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7F800001, 0xFF800001, 0x7FC00000, 0xFFC00000, 0x7FFFFFFF, 0xFFFFFFFF}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 1<<20; i++ {
		special = append(special, rng.Uint32())
	}
	for _, u := range special {
		x := math.Float32frombits(u)
		if got, want := sortKey(x), ref.MQATopKKey(x); got != want {
			t.Fatalf("bits %#08x: sortKey %#08x, ref %#08x", u, got, want)
		}
	}
}
