package fast_test

import (
	"runtime"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// remapShape is the catalog's bench input: bs=10 × 100K tokens, ps 64,
// the first 40K tokens on pages every row shares.
func remapShape(t testing.TB) spec.CPRemapLocsInput {
	for _, b := range catalog.CPRemapLocs().Shapes {
		if b.Name == "bs10-100K-tokens-ps64-shared-prefix" {
			return b.Make()
		}
	}
	t.Fatal("no bs10 shape")
	return spec.CPRemapLocsInput{}
}

// TestCPRemapLocsMemoryIsOPages checks the fast path keeps memory O(pages +
// locs) (P6.2): page ids near 2^50 — a dense [B × logical capacity]
// inverse would need petabytes — remap with the output, the descriptors
// and a constant number of other allocations.
func TestCPRemapLocsMemoryIsOPages(t *testing.T) {
	const far = int64(1) << 50
	in := spec.CPRemapLocsInput{PageSize: 64, Pages: [][]int64{{far + 9, far}, {far, far + 5}},
		Locs: []int64{far*64 + 1, (far+9)*64 + 63, far*64 + 2, -1}, RowIDs: []int32{0, 0, 1, 1}}
	out, err := fast.CPRemapLocs(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{1*64 + 1, 0*64 + 63, 2*64 + 2, -1}; !equalInt64(out.Locs, want) {
		t.Fatalf("got %v, want %v", out.Locs, want)
	}
	big := remapShape(t)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := fast.CPRemapLocs(spec.DefaultLimits(), big); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	pages := 0
	for _, row := range big.Pages {
		pages += len(row)
	}
	// Output 8 B per loc, descriptors 12 B per page plus scratch 16 B per
	// page of the longest row, and a few KiB of fixed overhead.
	bound := uint64(8*len(big.Locs) + 28*pages + 64<<10)
	if got := after.TotalAlloc - before.TotalAlloc; got > bound {
		t.Errorf("remap of %d locs over %d pages allocated %d B, want <= %d", len(big.Locs), pages, got, bound)
	}
}

// TestPageDescriptorsAllocateOnlyTheirArrays checks the no-per-row-allocation
// path: the three CSR arrays and one shared scratch buffer (AllocsPerRun
// runs on one core, so the rows are sorted by one goroutine; in parallel
// each further group adds its own scratch buffer and goroutine).
func TestPageDescriptorsAllocateOnlyTheirArrays(t *testing.T) {
	in := spec.CPPageDescriptorsInput{Pages: remapShape(t).Pages}
	if n := testing.AllocsPerRun(20, func() { _, _ = fast.CPPageDescriptors(spec.DefaultLimits(), in) }); n > 4 {
		t.Errorf("descriptors of %d rows allocated %v times, want <= 4", len(in.Pages), n)
	}
}

func equalInt64(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// BenchmarkRemapLocsBS10x100K is the target: ≤ 5 ms per call.
func BenchmarkRemapLocsBS10x100K(b *testing.B) {
	in := remapShape(b)
	for _, impl := range []struct {
		name string
		f    func(spec.Limits, spec.CPRemapLocsInput) (spec.CPRemapLocsOutput, error)
	}{{"fast", fast.CPRemapLocs}, {"ref", ref.CPRemapLocs}} {
		b.Run(impl.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := impl.f(spec.DefaultLimits(), in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPageDescriptorsBS10x100K times the descriptor build alone.
func BenchmarkPageDescriptorsBS10x100K(b *testing.B) {
	in := spec.CPPageDescriptorsInput{Pages: remapShape(b).Pages}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fast.CPPageDescriptors(spec.DefaultLimits(), in); err != nil {
			b.Fatal(err)
		}
	}
}
