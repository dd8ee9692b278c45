package fast_test

import (
	"testing"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestComposeFastPathAllocations: with global valid rows the fast twin
// quantizes straight into its output, allocating only that buffer.
func TestComposeFastPathAllocations(t *testing.T) {
	pool := fp8PoolOf(4, 252)
	pre := [][]int64{{4, 5, 6, 7, 8, 9, 10, 11}, {12, 13, 14, 15}}
	cur := ref.NewRows(spec.MLABF16RowBytes, 6)
	for i := range cur.B {
		cur.B[i] = byte(i) & 0x3F
	}
	in := spec.FP8ComposeCurrentInput{Pool: pool, PrefixSlots: pre, CurrentSlots: [][]int64{{20, 21, 22}, {23, 24, 25}}, Lens: []int{3, 3}, Contract: spec.ContractGlobalValid, Current: cur}
	lim := spec.DefaultLimits()
	got, err := fast.FP8ComposeCurrent(lim, in)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ref.FP8ComposeCurrent(lim, in)
	if string(got.Rows.B) != string(want.Rows.B) {
		t.Fatal("fast compose differs from ref")
	}
	if n := testing.AllocsPerRun(10, func() { _, _ = fast.FP8ComposeCurrent(lim, in) }); n > 1 {
		t.Errorf("%v allocations, want 1", n)
	}
}
