package fast_test

import (
	"testing"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

func fp8PoolOf(ps, size int64) spec.FP8Pool {
	x := ref.NewRows(spec.FP8RowBytes, int(size+ps))
	for i := range x.B {
		x.B[i] = byte(i * 13)
	}
	return spec.FP8Pool{PageSize: ps, Size: size, Rows: x}
}

// TestFP8PoolFastPathAllocations: store allocates the bitset and the pool
// copy only (no map), materialize only its output buffer.
func TestFP8PoolFastPathAllocations(t *testing.T) {
	lim := spec.DefaultLimits()
	pool := fp8PoolOf(4, 1020)
	locs := make([]int64, 256)
	for i := range locs {
		locs[i] = int64(4 + 2*i)
	}
	st := spec.FP8StorePagesInput{Pool: pool, Locs: locs, Rows: ref.NewRows(spec.FP8RowBytes, len(locs))}
	if n := testing.AllocsPerRun(10, func() { _, _ = fast.FP8StorePages(lim, st) }); n > 2 {
		t.Errorf("store: %v allocations, want <= 2", n)
	}
	m := spec.FP8MaterializePagesInput{Pool: pool, Slots: locs}
	if n := testing.AllocsPerRun(10, func() { _, _ = fast.FP8MaterializePages(lim, m) }); n > 1 {
		t.Errorf("materialize: %v allocations, want 1", n)
	}
	got, _ := fast.FP8MaterializePages(lim, m)
	want, _ := ref.FP8MaterializePages(lim, m)
	if string(got.Rows.B) != string(want.Rows.B) {
		t.Error("fast materialize differs from ref")
	}
}
