package equiv

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestAdmissionScenarios runs the narrated prefill-admission scenarios
// (testdata/admission_*.txt, one per §A1.15 bug): each `round` runs the
// reference and the fast adder on the scenario's queue, requires identical
// results and every round property, and prints the batch, the stop reason,
// the budgets and the pool, so a file reads as the fixed behaviour along
// the bug's input. Regenerate with `go test ./equiv -run
// TestAdmissionScenarios -rewrite`.
//
// Commands:
//
//	config page=P max_prefill=M [chunk=C] [align=A] [max_running=R] [hicache] [cp] [cp_max_requests=N] [cp_max_extend=E] [cp_max_cached=K]
//	pool available=A [evictable=E]
//	req rid=X extend=E [l1=L] [l1_evictable=V] [host=H] [max_new=N]
//	round                     (runs the queue, then empties it; the chunk carries over)
func TestAdmissionScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if !strings.HasPrefix(filepath.Base(path), "admission_") {
			return
		}
		sc := &admissionScenario{}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			out, err := sc.step(t, td, fast.AdmissionRound)
			if err != "" {
				td.Fatalf(t, "%s", err)
			}
			return out
		})
	})
}

// admissionScenarioBugs maps each scenario file to the fault it narrates.
var admissionScenarioBugs = []struct {
	id     string
	faults fault.Admission
}{
	{"cached-gate-before-load-back", fault.Admission{CachedBeforeLoadBack: true}},
	{"cp-gates-on-empty-batch", fault.Admission{GatesOnEmptyBatch: true}},
	{"cp-no-legacy-lift", fault.Admission{NoLift: true}},
	{"cp-user-limit-uncapped", fault.Admission{UserLimitUncapped: true}},
	{"cp-limit-not-defaulted", fault.Admission{NoDefaultLimit: true}},
	{"lock-recheck-skipped", fault.Admission{SkipLockRecheck: true}},
}

// TestAdmissionScenariosReplayTheirBug replays each scenario on the fast
// adder with its bug put back: some round must differ from ref's, so each
// file narrates an input that actually tells the bug apart.
func TestAdmissionScenariosReplayTheirBug(t *testing.T) {
	for _, bug := range admissionScenarioBugs {
		t.Run(bug.id, func(t *testing.T) {
			sc, differs := &admissionScenario{}, ""
			buggy := func(lim spec.Limits, in spec.AdmissionRoundInput) (spec.AdmissionRoundOutput, error) {
				return fault.Installed().AdmissionRound(lim, in, bug.faults)
			}
			datadriven.RunTest(t, filepath.Join("testdata", "admission_"+bug.id+".txt"), func(t *testing.T, td *datadriven.TestData) string {
				if _, err := sc.step(t, td, buggy); err != "" && differs == "" {
					differs = td.Pos + ": " + err
				}
				return td.Expected
			})
			if differs == "" {
				t.Fatalf("the scenario never tells the bug from the fixed adder")
			}
			t.Logf("the bug shows first at %s", differs)
		})
	}
}

// admissionScenario is the round input a scenario file builds.
type admissionScenario struct {
	in spec.AdmissionRoundInput
}

// step runs one command; for `round` it compares impl with ref and
// returns the narration, or a non-empty mismatch.
func (sc *admissionScenario) step(t *testing.T, td *datadriven.TestData, impl spec.RoundFunc) (string, string) {
	arg := func(key string, dst *int64) bool {
		if !td.HasArg(key) {
			return false
		}
		var v int
		td.ScanArgs(t, key, &v)
		*dst = int64(v)
		return true
	}
	switch td.Cmd {
	case "config":
		c := spec.AdderConfig{NewTokenRatio: 0.7, MaxRunningRequests: 1000, HierarchicalCache: td.HasArg("hicache")}
		arg("page", &c.PageSize)
		arg("max_prefill", &c.MaxPrefillTokens)
		arg("max_running", &c.MaxRunningRequests)
		var v int64
		if arg("chunk", &v) {
			c.ChunkedPrefillSize = p64(v)
		}
		if arg("align", &v) {
			c.TruncationAlignSize = p64(v)
		}
		if td.HasArg("cp") {
			c.CP = &spec.CPAdmission{}
			for _, k := range []struct {
				key string
				dst **int64
			}{{"cp_max_requests", &c.CP.MaxRequests}, {"cp_max_extend", &c.CP.MaxTotalExtendTokens}, {"cp_max_cached", &c.CP.MaxTotalCachedTokens}} {
				if arg(k.key, &v) {
					*k.dst = p64(v)
				}
			}
		}
		sc.in = spec.AdmissionRoundInput{Config: c}
		return "ok", ""
	case "pool":
		arg("available", &sc.in.Pool.Available)
		arg("evictable", &sc.in.Pool.Evictable)
		return "ok", ""
	case "req":
		var r spec.Request
		td.ScanArgs(t, "rid", &r.RID)
		var extend int64
		arg("extend", &extend)
		arg("l1", &r.L1Prefix)
		arg("l1_evictable", &r.L1PrefixEvictable)
		arg("host", &r.HostHit)
		arg("max_new", &r.MaxNewTokens)
		r.InputLen = r.L1Prefix + r.HostHit + extend
		sc.in.Queue = append(sc.in.Queue, r)
		return "ok", ""
	case "round":
		in := sc.in
		want, werr := ref.AdmissionRound(spec.DefaultLimits(), in)
		got, gerr := impl(spec.DefaultLimits(), in)
		if werr != nil || gerr != nil {
			if fmt.Sprint(werr) != fmt.Sprint(gerr) {
				return "", fmt.Sprintf("ref error %v, impl error %v", werr, gerr)
			}
			return "error: " + werr.Error(), ""
		}
		if d := cmp.Diff(want, got); d != "" {
			return "", "results differ (-ref +impl):\n" + d
		}
		for _, p := range AdmissionProps() {
			if err := p.Holds(spec.DefaultLimits(), in, got); err != nil {
				return "", fmt.Sprintf("property %s: %v", p.Name, err)
			}
		}
		sc.in.Chunked, sc.in.Queue = ref.NextChunked(in, got), nil
		return admissionNarrate(got), ""
	}
	td.Fatalf(t, "unknown command %q", td.Cmd)
	return "", ""
}

// admissionNarrate prints a round result one fact per line.
func admissionNarrate(o spec.AdmissionRoundOutput) string {
	var b strings.Builder
	for _, a := range o.Admitted {
		fmt.Fprintf(&b, "admit %s prefix=%d loaded=%d run=%d charged=%d chunked=%t\n", a.RID, a.PrefixLen, a.LoadedFromL2, a.RunExtend, a.ChargedExtend, a.Chunked)
	}
	fmt.Fprintf(&b, "stop %s/%s rid=%q admitted=%t batch_is_full=%t\n", o.Stop.Result, o.Stop.Detail, o.Stop.RID, o.Stop.Admitted, o.BatchIsFull)
	opt := func(p *int64) string {
		if p == nil {
			return "none"
		}
		return fmt.Sprint(*p)
	}
	fmt.Fprintf(&b, "rem_total=%v cur_rem=%d rem_input=%d rem_chunk=%s cp_limit=%s cum_extend=%d cum_cached=%d\n",
		o.RemTotalTokens, o.CurRemTokens, o.RemInputTokens, opt(o.RemChunkTokens), opt(o.EffectiveCPExtendLimit), o.CumExtend, o.CumCached)
	fmt.Fprintf(&b, "pool available=%d evictable=%d l2_loaded=%d", o.Pool.Available, o.Pool.Evictable, o.L2Loaded)
	if o.NextChunkedRID != "" {
		fmt.Fprintf(&b, "\nnext_chunked %s", o.NextChunkedRID)
	}
	for _, w := range o.Warnings {
		fmt.Fprintf(&b, "\nwarning %s", w)
	}
	return b.String()
}
