package fast_test

import (
	"reflect"
	"testing"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// cpLayout is a bs=10, cp=8 page-granular layout whose requests hold
// about perReq rows each, every one with tail padding.
func cpLayout(perReq int) spec.LayoutSpec {
	lens := make([]int, 10)
	for i := range lens {
		lens[i] = perReq - 37*(i+1)
	}
	return spec.LayoutSpec{CP: 8, Lens: lens, Granule: 64}
}

func rows(w, n int) spec.Rows {
	x := ref.NewRows(w, n)
	// A 251-byte period (prime, so rows of any width differ), doubled by copy:
	// a byte loop over tens of MiB is slow under -race.
	for i := range x.B[:min(len(x.B), 251)] {
		x.B[i] = byte(i*31 + 7)
	}
	for k := 251; k < len(x.B); k *= 2 {
		copy(x.B[k:], x.B[:k])
	}
	return x
}

func mustBuild(t testing.TB, sp spec.LayoutSpec) spec.Layout {
	t.Helper()
	lay, err := sp.Build()
	if err != nil {
		t.Fatal(err)
	}
	return lay
}

// cpInputs returns one input of each CP row op on sp with rows of w bytes.
func cpInputs(t testing.TB, sp spec.LayoutSpec, w int) (spec.CPSplitInput, spec.CPValidRowsInput, spec.CPRerangeInput, spec.CPCompactValidInput, spec.CPRestorePaddedInput) {
	lay := mustBuild(t, sp)
	m := lay.R(0)
	return spec.CPSplitInput{Layout: sp, X: rows(w, lay.TotalValid()), Pad: make([]byte, w), Prefix: make([]int64, lay.B())},
		spec.CPValidRowsInput{Layout: sp, Rank: 3, X: rows(w, lay.R(3))},
		spec.CPRerangeInput{Layout: sp, G: rows(w, lay.CP*m), M: m},
		spec.CPCompactValidInput{Layout: sp, Rank: 3, X: rows(w, lay.R(3))},
		spec.CPRestorePaddedInput{Layout: sp, Rank: 3, Y: rows(w, lay.Rv(3))}
}

// same requires equal results of the twins (deep equality, which on
// byte slices is bytes.Equal: canonical JSON of tens of MiB in base64 is
// slow under -race).
func same[In, Out any](t *testing.T, name string, in In, r, f func(spec.Limits, In) (Out, error)) {
	t.Helper()
	ro, rerr := r(spec.DefaultLimits(), in)
	fo, ferr := f(spec.DefaultLimits(), in)
	if rerr != nil || ferr != nil || !reflect.DeepEqual(ro, fo) {
		t.Errorf("%s: fast differs from ref (errors %v, %v)", name, rerr, ferr)
	}
}

// TestCPRowOpsParallelPathMatchesRef runs every CP row op above the
// parallel threshold (1K rows per request × 4 KiB: over 4 MiB even for one rank),
// so the goroutine-chunked moves run, under -race, against ref.
func TestCPRowOpsParallelPathMatchesRef(t *testing.T) {
	if testing.Short() {
		t.Skip("large buffers")
	}
	s, v, r, c, y := cpInputs(t, cpLayout(1<<10), 4096)
	same(t, "cp.split", s, ref.CPSplit, fast.CPSplit)
	same(t, "cp.valid_rows", v, ref.CPValidRows, fast.CPValidRows)
	same(t, "cp.rerange", r, ref.CPRerange, fast.CPRerange)
	same(t, "cp.compact_valid", c, ref.CPCompactValid, fast.CPCompactValid)
	same(t, "cp.restore_padded", y, ref.CPRestorePadded, fast.CPRestorePadded)
}

// TestCPRowOpsDoNotAllocatePerRow: the fast twins' allocation counts are
// the same for a batch 16× as long (every request 16× the rows): the
// moves are planned per lane slot and executed with copy, never per row.
func TestCPRowOpsDoNotAllocatePerRow(t *testing.T) {
	allocs := func(perReq int) [5]float64 {
		s, v, r, c, y := cpInputs(t, cpLayout(perReq), 16)
		lim := spec.DefaultLimits()
		return [5]float64{
			testing.AllocsPerRun(5, func() { _, _ = fast.CPSplit(lim, s) }),
			testing.AllocsPerRun(5, func() { _, _ = fast.CPValidRows(lim, v) }),
			testing.AllocsPerRun(5, func() { _, _ = fast.CPRerange(lim, r) }),
			testing.AllocsPerRun(5, func() { _, _ = fast.CPCompactValid(lim, c) }),
			testing.AllocsPerRun(5, func() { _, _ = fast.CPRestorePadded(lim, y) }),
		}
	}
	small, large := allocs(1<<10), allocs(16<<10)
	if small != large {
		t.Errorf("allocations grow with rows: %v at 1K rows per request, %v at 16K", small, large)
	}
}
