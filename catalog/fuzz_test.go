package catalog_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fixtures"
	"github.com/kvtwin/kvtwin/internal/hostile"
	"github.com/kvtwin/kvtwin/spec"
)

// fuzzHang is how long one run may take before it counts as a hang: far
// above the harness's 2 s, since fuzz workers share the machine's cores,
// and far below "for ever", which is what a size formed from an unchecked
// number takes.
const fuzzHang = 10 * time.Second

// FuzzRunNeverPanicsAndTwinsAgree feeds arbitrary bytes to every op on both
// twins: neither may panic or hang, either may reject only with an input
// error, what each allocates stays within the op's Cost, and both produce
// the same canonical bytes (errors included). leaf > 0 first rewrites
// numeric leaf (leaf−1) mod n of the input to hostile.Extremes[extreme],
// driving the search towards the numbers that size allocations and loops
// (0, −1, 2^31±1, 2^53+1, 2^63−1, 1e308, …), which byte mutations reach
// only by luck. The seed corpus is the golden set, unmutated, plus every
// op's example with each extreme on its first leaf, so `go test` runs all
// of them through this check; `go test -fuzz` explores from there.
func FuzzRunNeverPanicsAndTwinsAgree(f *testing.F) {
	entries := catalog.All()
	for i, e := range entries {
		cases, err := fixtures.ReadFile(filepath.Join("..", "fixtures", "testdata", equiv.GoldenFileName(e.Name())))
		if err != nil {
			f.Fatal(err)
		}
		for _, c := range cases {
			f.Add(uint8(i), []byte(c.In), uint8(0), uint8(0))
		}
		for x := range hostile.Extremes {
			f.Add(uint8(i), []byte(e.Example()), uint8(1), uint8(x))
		}
	}
	lim := hostile.Limits()
	f.Fuzz(func(t *testing.T, op uint8, in []byte, leaf, extreme uint8) {
		e := entries[int(op)%len(entries)]
		if n := hostile.NumberLeaves(in); leaf > 0 && n > 0 {
			in, _ = hostile.ReplaceNumber(in, (int(leaf)-1)%n, hostile.Extremes[int(extreme)%len(hostile.Extremes)])
		}
		bound := e.Cost().AllocBound(len(in), lim)
		want := fuzzRun(t, e, catalog.Ref, lim, in, bound)
		got := fuzzRun(t, e, catalog.Fast, lim, in, bound)
		if !hostile.SameVerdict(e, in, want, got) {
			t.Fatalf("%s: ref %.500s (%v)\nfast %.500s (%v)\ninput %.1000s", e.Name(), want.Out, want.Err, got.Out, got.Err, in)
		}
	})
}

// fuzzRun runs impl on in and fails t when it panics, outlives fuzzHang,
// rejects with an error the server answers 5xx, or allocates more than
// bound.
func fuzzRun(t *testing.T, e catalog.Entry, impl catalog.Impl, lim spec.Limits, in []byte, bound int64) hostile.Run {
	t.Helper()
	r, ok := hostile.Measure(e, impl, lim, in, fuzzHang)
	switch {
	case !ok:
		t.Fatalf("%s on %s: still running after %v; input %.1000s", e.Name(), impl, fuzzHang, in)
	case r.Panic != nil:
		t.Fatalf("%s on %s: panic: %v; input %.1000s", e.Name(), impl, r.Panic, in)
	case hostile.ServerError(r.Err):
		t.Fatalf("%s on %s: an error the server answers 5xx: %v; input %.1000s", e.Name(), impl, r.Err, in)
	case r.Alloc > uint64(bound):
		t.Fatalf("%s on %s: allocated %d bytes, over the op's Cost bound %d for %d input bytes; input %.1000s", e.Name(), impl, r.Alloc, bound, len(in), in)
	}
	return r
}
