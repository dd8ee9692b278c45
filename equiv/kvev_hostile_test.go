package equiv_test

import (
	"fmt"
	"testing"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/internal/hostile"
)

// TestKVEvHostileVariantsOfTheTables runs the hostile-input harness
// (TestHostileInputsAreRejectedOrServedWithinBounds) from the kvev ops'
// boundary and regression cases, not only from two golden inputs: every
// variant of §5's payloads and §5.4's cursor scripts must be answered
// alike by both twins, within the ops' Cost, without a panic.
func TestKVEvHostileVariantsOfTheTables(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("bounds are measured without -race; long")
	}
	sc, lim := scaleOf(), hostile.Limits()
	for _, name := range []string{"kvev.decode", "kvev.apply"} {
		s, _ := equiv.Lookup(name)
		e := s.Entry()
		t.Run(name, func(t *testing.T) {
			impls := selectedImpls(t, e)
			var seeds [][]byte
			for _, c := range s.Fixtures(0, 0) {
				if len(c.In) <= 8<<10 {
					seeds = append(seeds, []byte(c.In))
				}
			}
			n := 0
			for si, seed := range seeds {
				if si%kvevHostileStride != 0 {
					continue
				}
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

// kvevHostileStride takes every n-th table case as a seed.
const kvevHostileStride = 2
