//go:build cuda

package cuda_test

import (
	"math/rand/v2"
	"testing"

	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// randomPool is a pool of size+ps slots of fresh random 656-byte rows.
func randomPool(r *rand.Rand, ps, size int64) spec.FP8Pool {
	rows := ref.NewRows(spec.FP8RowBytes, int(size+ps))
	for i := range rows.B {
		rows.B[i] = byte(r.Uint32())
	}
	return spec.FP8Pool{PageSize: ps, Size: size, Rows: rows}
}

// randomRows656 is n fresh random 656-byte rows.
func randomRows656(r *rand.Rand, n int) spec.Rows {
	x := ref.NewRows(spec.FP8RowBytes, n)
	for i := range x.B {
		x.B[i] = byte(r.Uint32())
	}
	return x
}

// TestFP8StorePagesFromOneRowToPayload compares the CUDA twin with ref on
// pools of random rows and stores of distinct random slots, from one row
// to payload scale (64K slots = 41 MiB pool, 16K rows stored).
func TestFP8StorePagesFromOneRowToPayload(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(len(t.Name())), 74))
	cases := []struct{ ps, size, n int64 }{{1, 0, 1}, {1, 3, 4}, {64, 64, 2}, {16, 4096, 1000}}
	if !testing.Short() {
		cases = append(cases, struct{ ps, size, n int64 }{64, 64 << 10, 16 << 10})
	}
	for _, c := range cases {
		pool := randomPool(r, c.ps, c.size)
		locs := r.Perm(int(c.size + c.ps))[:c.n]
		in := spec.FP8StorePagesInput{Pool: pool, Locs: make([]int64, c.n), Rows: randomRows656(r, int(c.n))}
		for i, l := range locs {
			in.Locs[i] = int64(l)
		}
		want, werr := ref.FP8StorePages(spec.DefaultLimits(), in)
		got, gerr := cuda.FP8StorePages(spec.DefaultLimits(), in)
		sameResultAsRef(t, "store_pages", want, werr, got, gerr)
	}
}

// TestFP8StorePagesRejectsAsRef: a duplicate slot and an out-of-range slot
// are ref's errors, and no store leaves the input pool changed.
func TestFP8StorePagesRejectsAsRef(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pool := randomPool(r, 4, 8)
	before := string(pool.Rows.B)
	for _, locs := range [][]int64{{3, 5, 3}, {0, 12}, {}} {
		in := spec.FP8StorePagesInput{Pool: pool, Locs: locs, Rows: randomRows656(r, len(locs))}
		want, werr := ref.FP8StorePages(spec.DefaultLimits(), in)
		got, gerr := cuda.FP8StorePages(spec.DefaultLimits(), in)
		sameResultAsRef(t, "store_pages", want, werr, got, gerr)
	}
	if string(pool.Rows.B) != before {
		t.Fatal("the input pool was modified")
	}
}
