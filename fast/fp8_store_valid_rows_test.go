package fast_test

import (
	"bytes"
	"testing"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestFP8StoreValidRowsFastPath: the fast twin quantizes straight into the
// pool copy — besides validation's bookkeeping, only the pool is
// allocated, never a selected-rows or quantized-rows buffer — and agrees
// with ref.
func TestFP8StoreValidRowsFastPath(t *testing.T) {
	lim := spec.DefaultLimits()
	lens := []int{64, 64}
	lay, err := spec.BuildLayoutUnpadded(2, lens)
	if err != nil {
		t.Fatal(err)
	}
	x := ref.NewRows(spec.MLABF16RowBytes, lay.R(0))
	for i := range x.B {
		x.B[i] = byte(i*7) & 0x3F
	}
	r2t := [][]int64{{}, {}}
	at := int64(4)
	for i, l := range lens {
		for range l {
			r2t[i] = append(r2t[i], at)
			at++
		}
	}
	in := spec.FP8StoreValidRowsInput{Pool: fp8PoolOf(4, 1020), Layout: spec.LayoutSpec{CP: 2, Lens: lens}, Rank: 0, X: x, ReqToToken: r2t, PrefixLens: []int{0, 0}}
	got, err := fast.FP8StoreValidRows(lim, in)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.FP8StoreValidRows(lim, in)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Pool.Rows.B, want.Pool.Rows.B) {
		t.Fatal("fast store_valid_rows differs from ref")
	}
	if &got.Pool.Rows.B[0] == &in.Pool.Rows.B[0] {
		t.Fatal("fast store_valid_rows aliases its input pool")
	}
	// The race detector adds a few allocations of its own, hence the slack;
	// ref's selected, quantized and locs buffers cost far more.
	base := testing.AllocsPerRun(5, func() { _, _ = ref.ValidateFP8StoreValidRows(lim, in) })
	n := testing.AllocsPerRun(5, func() { _, _ = fast.FP8StoreValidRows(lim, in) })
	r := testing.AllocsPerRun(5, func() { _, _ = ref.FP8StoreValidRows(lim, in) })
	if n > base+8 || n >= r {
		t.Errorf("fast: %v allocations (validation %v, ref %v), want validation's + the pool", n, base, r)
	}
}
