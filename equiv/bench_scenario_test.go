package equiv

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// benchFunc is a twin (or mutant) of admission.bench.
type benchFunc = func(spec.Limits, spec.AdmissionBenchInput) (spec.AdmissionBenchOutput, error)

// TestBenchScenarios runs the narrated admission-bench scenarios
// (testdata/bench_*.txt, one per §A3.7 bug): `bench` runs its JSON input
// (A3.2) on ref and on the given implementation, requires identical
// outputs and every A3.5 property, and prints one line per round.
// Regenerate with `go test ./equiv -run TestBenchScenarios -rewrite`.
func TestBenchScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if !strings.HasPrefix(filepath.Base(path), "bench_") {
			return
		}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			out, err := benchStep(td, fast.AdmissionBench)
			if err != "" {
				td.Fatalf(t, "%s", err)
			}
			return out
		})
	})
}

// TestBenchScenariosReplayTheirBug replays each scenario on the fast bench
// with its bug put back: some step must differ from ref's.
func TestBenchScenariosReplayTheirBug(t *testing.T) {
	bugs := []struct {
		id  string
		run benchFunc
	}{{"bench-l2-hits-as-l1", l2HitsAsL1Bench}}
	for _, bug := range bugs {
		t.Run(bug.id, func(t *testing.T) {
			differs := ""
			datadriven.RunTest(t, filepath.Join("testdata", "bench_"+bug.id+".txt"), func(t *testing.T, td *datadriven.TestData) string {
				if _, err := benchStep(td, bug.run); err != "" && differs == "" {
					differs = td.Pos + ": " + err
				}
				return td.Expected
			})
			if differs == "" {
				t.Fatalf("the scenario never tells the bug from the fixed bench")
			}
			t.Logf("the bug shows first at %s", differs)
		})
	}
}

// l2HitsAsL1Bench is the bench of mutant bench-l2-hits-as-l1 (A3-B1), a
// wrapper like the mutant (equiv/mutants/admission_bench.go, which this
// package cannot import): fast's round and estimator with the host hit
// folded into the L1 prefix.
func l2HitsAsL1Bench(lim spec.Limits, in spec.AdmissionBenchInput) (spec.AdmissionBenchOutput, error) {
	return ref.RunAdmissionBench(lim, in, spec.BenchDriver{Round: fast.AdmissionRound, Estimate: fast.EstimateBuffers,
		Map: func(r spec.BenchRequest) spec.Request {
			q := ref.MapBenchRequest(r)
			q.L1Prefix, q.HostHit = r.L1CachedTokens+r.L2HostHitTokens, 0
			return q
		}})
}

// benchStep runs one `bench` command; a non-empty second result is a
// disagreement with ref or a broken property.
func benchStep(td *datadriven.TestData, impl benchFunc) (string, string) {
	if td.Cmd != "bench" {
		return "", "unknown command " + td.Cmd
	}
	in, err := catalog.DecodeStrict[spec.AdmissionBenchInput]([]byte(td.Input))
	if err != nil {
		return "", err.Error()
	}
	lim := spec.DefaultLimits()
	want, werr := ref.AdmissionBench(lim, in)
	got, gerr := impl(lim, in)
	if d := cmp.Diff(catalog.Canonical(want, werr), catalog.Canonical(got, gerr)); d != "" {
		return "", "differs from ref (-ref +impl):\n" + d
	}
	if werr != nil {
		return "error " + werr.Error() + "\n", ""
	}
	for _, p := range BenchProps() {
		if err := p.Holds(lim, in, want); err != nil {
			return "", p.Name + ": " + err.Error()
		}
	}
	var b strings.Builder
	for _, r := range want.Rounds {
		carry := "-"
		if r.Chunked != nil {
			carry = *r.Chunked
		}
		fmt.Fprintf(&b, "round %d admit=%v chunked=%s stop=%s/%s rid=%q admitted=%t extend=%d cached=%d l2_loaded=%d l2_left=%d buffer=%d\n",
			r.Round, r.Admitted, carry, r.Stop.Result, r.Stop.Detail, r.Stop.RID, r.Stop.Admitted, r.TotalExtendTokens,
			r.TotalCachedTokens, r.L2LoadedTokens, r.L2CapacityLeft, r.EstimatedBufferBytes)
	}
	fmt.Fprintf(&b, "termination %s\n", want.Termination)
	return b.String(), ""
}
