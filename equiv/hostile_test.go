package equiv_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fixtures"
	"github.com/kvtwin/kvtwin/internal/hostile"
	"github.com/kvtwin/kvtwin/spec"
)

// hostileScale is how far the harness goes: `make test` runs the bounded
// form; KVTWIN_HOSTILE=long (`make hostile`) seeds from more golden cases,
// grows arrays to 1 MiB and allows slower runs.
type hostileScale struct {
	seeds     int           // golden cases used as seeds besides the example
	arrBytes  int           // MaxArrayBytes of the grown arrays
	depth     int           // nesting depth of the nested variants
	timeBound time.Duration // wall time one run may take
}

func scaleOf() hostileScale {
	if os.Getenv("KVTWIN_HOSTILE") == "long" {
		return hostileScale{seeds: 12, arrBytes: 1 << 20, depth: 512, timeBound: 5 * time.Second}
	}
	return hostileScale{seeds: 2, arrBytes: 32 << 10, depth: 128, timeBound: 2 * time.Second}
}

// hostileSeeds are e's example and up to n golden inputs ref accepts,
// spread over the golden file.
func hostileSeeds(t *testing.T, e catalog.Entry, lim spec.Limits, n int) [][]byte {
	t.Helper()
	seeds := [][]byte{e.Example()}
	cases, err := fixtures.ReadFile(filepath.Join("..", "fixtures", "testdata", equiv.GoldenFileName(e.Name())))
	if err != nil {
		t.Fatal(err)
	}
	var valid [][]byte
	for _, c := range cases {
		if len(c.In) > 16<<10 {
			continue
		}
		if _, err := e.Run(catalog.Ref, lim, []byte(c.In)); err == nil {
			valid = append(valid, []byte(c.In))
		}
	}
	for i := range min(n, len(valid)) {
		seeds = append(seeds, valid[i*len(valid)/n])
	}
	return seeds
}

// TestHostileInputsAreRejectedOrServedWithinBounds is the hostile-input
// harness over the whole catalog: from every op's example and golden inputs
// it replaces each numeric leaf by an extreme, each array by an empty and a
// long one, each object member by a missing, duplicated or unknown one, and
// nests values deep (internal/hostile). On every variant every twin must
// answer within the time bound and the op's stated Cost, never panic, reject
// only with an input error (never what the server answers 5xx), and agree
// with ref on the verdict and the canonical bytes.
func TestHostileInputsAreRejectedOrServedWithinBounds(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation and time bounds are measured without -race (make hostile-short, part of make test)")
	}
	sc, lim := scaleOf(), hostile.Limits()
	for _, e := range catalog.All() {
		t.Run(e.Name(), func(t *testing.T) {
			impls := selectedImpls(t, e)
			if len(impls) == 0 {
				return // KVTWIN_IMPL names an implementation e lacks
			}
			n := 0
			for si, seed := range hostileSeeds(t, e, lim, sc.seeds) {
				vs, err := hostile.Variants(seed, hostile.Options{MaxArrayBytes: sc.arrBytes, Depth: sc.depth})
				if err != nil {
					t.Fatalf("seed %d: %v", si, err)
				}
				for v := range vs {
					n++
					if !checkHostile(t, e, impls, lim, sc, fmt.Sprintf("seed %d %s", si, v.Name), v.Body) {
						return
					}
				}
			}
			t.Logf("%d variants × %v", n, impls)
		})
	}
}

// checkHostile runs ref and impls on one variant; false stops the op (a run
// outlived its bound and still holds a goroutine).
func checkHostile(t *testing.T, e catalog.Entry, impls []catalog.Impl, lim spec.Limits, sc hostileScale, name string, body []byte) bool {
	t.Helper()
	bound := e.Cost().AllocBound(len(body), lim)
	var want hostile.Run
	for _, impl := range append([]catalog.Impl{catalog.Ref}, impls...) {
		r, ok := hostile.Measure(e, impl, lim, body, sc.timeBound)
		if !ok {
			t.Errorf("%s on %s: still running after %v; body %.300s", name, impl, sc.timeBound, body)
			return false
		}
		if impl == catalog.Ref {
			want = r
		}
		switch {
		case r.Panic != nil:
			t.Errorf("%s on %s: panic: %v; body %.300s", name, impl, r.Panic, body)
			continue
		case hostile.ServerError(r.Err):
			t.Errorf("%s on %s: error the server would answer 5xx: %v", name, impl, r.Err)
		case r.Alloc > uint64(bound):
			t.Errorf("%s on %s: allocated %d bytes, over the op's Cost bound %d for %d input bytes (took %v)", name, impl, r.Alloc, bound, len(body), r.Took)
		}
		if impl == catalog.Ref {
			continue
		}
		if want.Panic == nil && !hostile.SameVerdict(e, body, want, r) {
			t.Errorf("%s: ref and %s disagree:\nref  %.300s (%v)\n%-4s %.300s (%v)\nbody %.300s", name, impl, want.Out, want.Err, impl, r.Out, r.Err, body)
		}
	}
	return true
}
