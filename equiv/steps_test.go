package equiv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestStepDeletionMakesScriptsOneMinimal runs the deletion pass on toy
// scripts of letters under predicates standing for "still fails the same
// way": monotone ones (the script holds a pattern as a subsequence, so
// deleting other letters keeps it) and ones that are not (a count of a
// letter has a parity, or lies in a set). The result must still fail,
// deleting any single letter of it must not, and the pass must stay
// within n(n+1)/2 checks.
func TestStepDeletionMakesScriptsOneMinimal(t *testing.T) {
	toy := stepsOf(func(s *[]byte) *[]byte { return s })
	count := func(s []byte, c byte) int { return strings.Count(string(s), string(c)) }
	abSubsequence := func(s []byte) bool { return containsSubsequence(s, []byte("ab")) }
	abAndOddC := func(s []byte) bool { return abSubsequence(s) && count(s, 'c')%2 == 1 }
	for _, c := range []struct {
		name   string
		script string
		fails  func([]byte) bool
		want   string
	}{
		{"a then b", "xaybza", abSubsequence, "ab"},
		{"a then b, many candidates", "bbaab", abSubsequence, "ab"},
		// Deleting any one c makes the count even: 1-minimal, though "ab"
		// with one c fails too (1-minimal is not minimum).
		{"a then b, odd c", "cacbc", abAndOddC, "cacbc"},
		{"a then b, odd c, more to delete", "xcaxcbcx", abAndOddC, "cacbc"},
		// Last to first, the first pass cannot delete the b (three a's
		// and no b pass), then deletes an a; only a second pass deletes
		// the b. One pass would end at "aab", which is not 1-minimal.
		{"two a's, or three a's and one b", "aaab", func(s []byte) bool {
			a, b := count(s, 'a'), count(s, 'b')
			return a == 2 || a == 3 && b == 1
		}, "aa"},
	} {
		got, checks, capped := deleteSteps(toy, []byte(c.script), c.fails, MaxStepDeletionChecks)
		n := len(c.script)
		switch {
		case !c.fails([]byte(c.script)):
			t.Errorf("%s: the script %q does not fail", c.name, c.script)
		case capped:
			t.Errorf("%s: the pass hit its cap", c.name)
		case !c.fails(got):
			t.Errorf("%s: the pass ended at %q, which passes", c.name, got)
		case checks > n*(n+1)/2:
			t.Errorf("%s: %d checks, more than n(n+1)/2 = %d", c.name, checks, n*(n+1)/2)
		case string(got) != c.want:
			t.Errorf("%s: the pass ended at %q, want %q", c.name, got, c.want)
		}
		for i := range got {
			if smaller := toy.Without(got, i); c.fails(smaller) {
				t.Errorf("%s: the pass ended at %q, but %q (step %d deleted) still fails: not 1-minimal", c.name, got, smaller, i)
			}
		}
	}
}

// TestStepDeletionStopsAtItsCapAndSaysSo: a pass given fewer checks than
// it needs stops there and reports that it did.
func TestStepDeletionStopsAtItsCapAndSaysSo(t *testing.T) {
	toy := stepsOf(func(s *[]byte) *[]byte { return s })
	fails := func(s []byte) bool { return slices.Contains(s, 'a') }
	got, checks, capped := deleteSteps(toy, []byte("xxxxxaxxxxx"), fails, 3)
	if !capped || checks != 3 || string(got) != "xxxxxaxx" {
		t.Errorf("pass = %q after %d checks (capped %v), want xxxxxaxx after 3 checks, capped", got, checks, capped)
	}
	d := &StepDeletion{From: 11, To: 8, Checks: 3, Capped: true}
	if !strings.Contains(d.String(), "cap") {
		t.Errorf("a capped pass is described as %q, which does not name the cap", d)
	}
}

// TestFailureClassIgnoresDetailButNotTheCheck: the class a deletion must
// keep names the check that failed, not its detail.
func TestFailureClassIgnoresDetailButNotTheCheck(t *testing.T) {
	for _, c := range []struct {
		a, b Failure
		same bool
	}{
		{Failure{Reason: "canonical results differ", Diff: "x"}, Failure{Reason: "canonical results differ", Diff: "y"}, true},
		{Failure{Reason: `property "C1": step 3`}, Failure{Reason: `property "C1": step 0`}, true},
		{Failure{Reason: `property "C1": step 3`}, Failure{Reason: `property "C2": step 3`}, false},
		{Failure{Reason: "panic: index out of range [3]"}, Failure{Reason: "panic: nil map"}, true},
		{Failure{Reason: "transport: a: timeout: no reply within 1s", Transport: true}, Failure{Reason: "transport: a: timeout: no reply within 2s", Transport: true}, true},
		{Failure{Reason: "transport: a: timeout: no reply within 1s", Transport: true}, Failure{Reason: "transport: a: exited: exit status 1", Transport: true}, false},
		{Failure{Reason: "transport: a: exited: exit status 1", Transport: true}, Failure{Reason: "transport: a: unavailable: 3 failures in a row", Transport: true}, false},
		{Failure{Reason: "transport: broken pipe", Transport: true}, Failure{Reason: "transport: EOF", Transport: true}, true},
		{Failure{Reason: "results differ (--errors code)"}, Failure{Reason: "transport: results differ", Transport: true}, false},
		{Failure{Reason: "canonical results differ"}, Failure{Reason: "ref rejected a valid input: steps[0].op: script_order"}, false},
		{Failure{Reason: "canonical results differ"}, Failure{Reason: "panic: boom"}, false},
	} {
		if got := failureClass(&c.a) == failureClass(&c.b); got != c.same {
			t.Errorf("%q and %q: same class %v, want %v", c.a.Reason, c.b.Reason, got, c.same)
		}
	}
}

func containsSubsequence(s, pattern []byte) bool {
	for _, c := range s {
		if len(pattern) > 0 && c == pattern[0] {
			pattern = pattern[1:]
		}
	}
	return len(pattern) == 0
}

// plantedScriptBug is a bug planted in a stateful op's fast twin (a
// wrapper that rewrites the fast twin's answer, as a buggy implementation
// would give it), with the length of the shortest script that shows it,
// derived by hand, and one script of that length that does.
type plantedScriptBug[In, Out any] struct {
	spec     *Spec[In, Out]
	bug      catalog.Func[In, Out]
	shortest int
	example  In
}

// Bounds of requireDeletesToShortest's search: the first failing scripts
// among the first generated ones.
const (
	plantedScripts    = 5
	plantedSearchSeed = 400
)

// requireDeletesToShortest checks that the example shows the bug in
// `shortest` steps; then runs the step-deletion pass, as Shrink does after
// rapid, on the first generated scripts that show the bug (deterministic,
// and longer than rapid's shrunk ones, so a harder start), and requires
// each to end no longer than the shortest script, 1-minimal, failing the
// same way. Some start must be longer than the shortest, or the test would
// show nothing.
func (p plantedScriptBug[In, Out]) requireDeletesToShortest(t *testing.T) {
	s := p.spec
	if n := s.Script.Len(p.example); n != p.shortest {
		t.Fatalf("the example has %d steps, want %d", n, p.shortest)
	}
	f := s.checkFailure("planted", p.bug, "example", 0, p.example, nil)
	if f == nil {
		t.Fatalf("the example does not show the planted bug")
	}
	p.requireOneMinimal(t, "the example", p.example, f)
	longest, found := 0, 0
	for seed := 0; seed < plantedSearchSeed && found < plantedScripts; seed++ {
		in := s.Valid.Example(seed)
		f := s.checkFailure("planted", p.bug, "generated", int64(seed), in, nil)
		if f == nil {
			continue
		}
		found++
		longest = max(longest, s.Script.Len(in))
		cut := s.minimalScript(f, in, func(smaller In) *Failure {
			return s.checkFailure("planted", p.bug, "generated", int64(seed), smaller, nil)
		})
		t.Logf("valid/%d: %v", seed, cut.StepDeletion)
		p.requireOneMinimalAndShortest(t, fmt.Sprintf("valid/%d", seed), f, cut)
	}
	if found == 0 {
		t.Fatalf("none of the first %d generated scripts shows the planted bug", plantedSearchSeed)
	}
	if longest <= p.shortest {
		t.Errorf("the failing generated scripts have at most %d steps, no more than the shortest: nothing to delete", longest)
	}
}

// requireOneMinimalAndShortest checks the failure cut that step deletion
// made of f: as long as the shortest script at most, a finished pass, the
// same failure, and no single step removable.
func (p plantedScriptBug[In, Out]) requireOneMinimalAndShortest(t *testing.T, name string, f, cut *Failure) {
	t.Helper()
	s := p.spec
	var in In
	if err := json.Unmarshal(cut.Input, &in); err != nil {
		t.Fatal(err)
	}
	n, d := s.Script.Len(in), cut.StepDeletion
	switch {
	case d == nil || d.Capped || d.To != n:
		t.Errorf("%s: step deletion %v, want a finished pass ending at %d steps", name, d, n)
	case cut.Reason != f.Reason || failureClass(cut) != failureClass(f):
		t.Errorf("%s: step deletion turned %q into %q", name, f.Reason, cut.Reason)
	case n > p.shortest:
		t.Errorf("%s: %d steps deleted to %d, the shortest script that shows the bug has %d: %s", name, d.From, n, p.shortest, cut.Input)
	}
	p.requireOneMinimal(t, name, in, f)
}

// requireOneMinimal checks that no single step of in can be deleted with
// the failure f kept.
func (p plantedScriptBug[In, Out]) requireOneMinimal(t *testing.T, name string, in In, f *Failure) {
	t.Helper()
	s := p.spec
	for i := range s.Script.Len(in) {
		if g := s.checkFailure("planted", p.bug, "smaller", 0, s.Script.Without(in, i), nil); g != nil && failureClass(g) == failureClass(f) {
			t.Errorf("%s is not 1-minimal: without step %d it still fails (%s)", name, i, g.Reason)
		}
	}
}

// plantedScriptBugs are the planted bugs' tests, one per script op.
func plantedScriptBugs() map[string]func(*testing.T) {
	return map[string]func(*testing.T){
		"radix.script":              plantedRadixEvictUndercount().requireDeletesToShortest,
		"hicache.ack_script":        plantedAckLayerBoundOffByOne().requireDeletesToShortest,
		"hicache.layer_done_script": plantedCounterResetKeepsConsumer().requireDeletesToShortest,
		"hicache.load_script":       plantedLoadStickyFallback().requireDeletesToShortest,
		"transfer.per_layer_script": plantedPerLayerHasForgetsRooms().requireDeletesToShortest,
		"admission.script":          plantedAdmissionDropsCarriedChunk().requireDeletesToShortest,
		"kvev.apply":                plantedKVEvReplayFailureLosesNothing().requireDeletesToShortest,
		"kvev.snapshot":             plantedKVEvSnapshotLosesABatchCount().requireDeletesToShortest,
	}
}

// TestEveryStatefulOpsPlantedBugDeletesToItsShortestScript plants, for
// each script op, a bug whose shortest exposing script is known, and
// requires step deletion to cut generated failing scripts down to it.
func TestEveryStatefulOpsPlantedBugDeletesToItsShortestScript(t *testing.T) {
	for op, test := range plantedScriptBugs() {
		t.Run(op, test)
	}
}

// TestEveryScriptOpRegistersItsSteps: an op whose input is a list of steps
// (a top-level "steps" or "ops" array in its example) registers them for
// step deletion, and every op that does has a planted bug above; a new
// script op that forgot either would report rapid's script as it is.
func TestEveryScriptOpRegistersItsSteps(t *testing.T) {
	planted := plantedScriptBugs()
	for _, u := range Suites() {
		var top map[string]json.RawMessage
		_ = json.Unmarshal(u.Entry().Example(), &top)
		isScript := false
		for _, member := range []string{"steps", "ops"} {
			isScript = isScript || bytes.HasPrefix(bytes.TrimSpace(top[member]), []byte("["))
		}
		registered := u.(interface{ hasScript() bool }).hasScript()
		_, hasBug := planted[u.Name()]
		switch {
		case isScript && !registered:
			t.Errorf("%s: its input is a list of steps, but its Spec registers no Script", u.Name())
		case registered && !hasBug:
			t.Errorf("%s: registers its steps but has no planted bug in plantedScriptBugs", u.Name())
		case hasBug && !registered:
			t.Errorf("%s: has a planted bug but registers no Script", u.Name())
		}
	}
}

// plantedRadixEvictUndercount: an evict that frees units reports one unit
// fewer. Shortest script, 3 steps: create, insert, evict. The first step
// must be a create (ref rejects any other script); only an insert puts
// units in the tree, and an evict of an empty tree frees nothing.
func plantedRadixEvictUndercount() plantedScriptBug[spec.RadixScriptInput, spec.RadixScriptOutput] {
	bug := func(lim spec.Limits, in spec.RadixScriptInput) (spec.RadixScriptOutput, error) {
		out, err := fast.RadixScript(lim, in)
		for i := range out.Trace {
			if e := out.Trace[i].Evict; e != nil && e.Evicted > 0 {
				e.Evicted--
			}
		}
		return out, err
	}
	return plantedScriptBug[spec.RadixScriptInput, spec.RadixScriptOutput]{RadixScript(), bug, 3, spec.RadixScriptInput{Steps: []spec.RadixStep{
		{Op: spec.StepCreate, PageSize: 1}, {Op: spec.StepInsert, Key: []int64{5}}, {Op: spec.StepEvict, NumTokens: 1},
	}}}
}

// plantedAckLayerBoundOffByOne: a layer step at layer L (one past the
// last) is accepted instead of refused (the bound check is <= L). Shortest
// script, 2 steps: create, layer_step L. The first step must be a create,
// and only a layer step names a layer against the create's L.
func plantedAckLayerBoundOffByOne() plantedScriptBug[spec.HiCacheAckScriptInput, spec.HiCacheAckScriptOutput] {
	bug := func(lim spec.Limits, in spec.HiCacheAckScriptInput) (spec.HiCacheAckScriptOutput, error) {
		out, err := fast.HiCacheAckScript(lim, in)
		layers := 0
		for i := range out.Trace {
			s := in.Steps[i]
			if s.Op == spec.AckCreate {
				layers = s.Layers
			}
			if r := &out.Trace[i]; s.Op == spec.AckLayerStep && s.Layer == layers && r.Error != nil {
				r.Error = nil
			}
		}
		return out, err
	}
	return plantedScriptBug[spec.HiCacheAckScriptInput, spec.HiCacheAckScriptOutput]{HiCacheAckScript(), bug, 2, ackScript(ackCreate(1, 2, 8), ackLayer(2))}
}

// plantedCounterResetKeepsConsumer: reset clears the producer but not the
// consumer. Shortest script, 2 steps: set_consumer of a slot, reset. The
// consumer starts at -1, only set_consumer changes it, and only a reset
// can show what reset leaves.
func plantedCounterResetKeepsConsumer() plantedScriptBug[spec.HiCacheLayerDoneScriptInput, spec.HiCacheLayerDoneScriptOutput] {
	bug := func(lim spec.Limits, in spec.HiCacheLayerDoneScriptInput) (spec.HiCacheLayerDoneScriptOutput, error) {
		out, err := fast.HiCacheLayerDoneScript(lim, in)
		for i := 1; i < len(out.Trace); i++ {
			if in.Steps[i].Op == spec.CounterReset {
				out.Trace[i].State.Consumer = out.Trace[i-1].State.Consumer
			}
		}
		return out, err
	}
	return plantedScriptBug[spec.HiCacheLayerDoneScriptInput, spec.HiCacheLayerDoneScriptOutput]{HiCacheLayerDoneScript(), bug, 2, spec.HiCacheLayerDoneScriptInput{
		Layers: 1, Steps: []spec.CounterStep{{Op: spec.CounterSetConsumer, Slot: 0}, {Op: spec.CounterReset}}}}
}

// plantedLoadStickyFallback: once an op ran the fallback path, every later
// op that begins reports fallback too (the flag is never reset). Shortest
// script, 2 ops: one falling back, one after it; a single op has no
// earlier op.
func plantedLoadStickyFallback() plantedScriptBug[spec.HiCacheLoadScriptInput, spec.HiCacheLoadScriptOutput] {
	bug := func(lim spec.Limits, in spec.HiCacheLoadScriptInput) (spec.HiCacheLoadScriptOutput, error) {
		out, err := fast.HiCacheLoadScript(lim, in)
		fellBack := false
		for i := range out.Trace {
			r := &out.Trace[i]
			if fellBack && r.BeginError == nil {
				r.Fallback = true
			}
			fellBack = fellBack || r.Fallback
		}
		return out, err
	}
	one := spec.LoadPools{Layers: 1, HostSlots: 4, DevSlots: 4, KVBytes: 1}
	first := loadOp(1, 1, []int64{3}, []int64{0})
	first.Unavailable, first.Policy = true, spec.LoadAllowFallback
	return plantedScriptBug[spec.HiCacheLoadScriptInput, spec.HiCacheLoadScriptOutput]{HiCacheLoadScript(), bug, 2, spec.HiCacheLoadScriptInput{
		Pools: one, Ops: []spec.LoadOp{first, loadOp(2, 1, []int64{2}, []int64{1})}}}
}

// plantedPerLayerHasForgetsRooms: has answers false for a registered room.
// Shortest script, 3 steps: create, register, has. The first step must be
// a create; only a register gives a room a context.
func plantedPerLayerHasForgetsRooms() plantedScriptBug[spec.TransferPerLayerScriptInput, spec.TransferPerLayerScriptOutput] {
	bug := func(lim spec.Limits, in spec.TransferPerLayerScriptInput) (spec.TransferPerLayerScriptOutput, error) {
		out, err := fast.TransferPerLayerScript(lim, in)
		for i := range out.Trace {
			if h := out.Trace[i].Has; h != nil && *h {
				out.Trace[i].Has = new(false)
			}
		}
		return out, err
	}
	return plantedScriptBug[spec.TransferPerLayerScriptInput, spec.TransferPerLayerScriptOutput]{TransferPerLayerScript(), bug, 3,
		perLayerScript(one(perLayerCreate(1, 1, 8), perLayerReg(1, 0), spec.PerLayerStep{Op: spec.PerLayerHas, Room: 1}))}
}

// plantedAdmissionDropsCarriedChunk: each round ignores the request
// chunked in the round before. Shortest script, 2 rounds: one that chunks
// a request, one that continues it; the first round never has a carried
// chunk, so a single round cannot show the bug.
func plantedAdmissionDropsCarriedChunk() plantedScriptBug[spec.AdmissionScriptInput, spec.AdmissionScriptOutput] {
	bug := func(lim spec.Limits, in spec.AdmissionScriptInput) (spec.AdmissionScriptOutput, error) {
		return ref.RunAdmissionScript(lim, in, func(lim spec.Limits, rin spec.AdmissionRoundInput) (spec.AdmissionRoundOutput, error) {
			rin.Chunked = nil
			return fast.AdmissionRound(lim, rin)
		})
	}
	return plantedScriptBug[spec.AdmissionScriptInput, spec.AdmissionScriptOutput]{AdmissionScript(), bug, 2, admissionE2Script()}
}

// plantedKVEvReplayFailureLosesNothing: a failed replay reports no lost
// seqs. Shortest script, 2 steps: a live batch past the stream's next seq
// (which asks for a replay of the seqs before it), then replay_failed. A
// replay_failed with no outstanding replay is refused and loses nothing,
// and only a live step opens a replay.
func plantedKVEvReplayFailureLosesNothing() plantedScriptBug[spec.KVEvApplyInput, spec.KVEvApplyOutput] {
	bug := func(lim spec.Limits, in spec.KVEvApplyInput) (spec.KVEvApplyOutput, error) {
		out, err := fast.KVEvApply(lim, in)
		for i := range out.Trace {
			if out.Trace[i].Op == spec.KVStepReplayFailed {
				out.Trace[i].Lost = nil
			}
		}
		return out, err
	}
	const v = "vllm-0"
	return plantedScriptBug[spec.KVEvApplyInput, spec.KVEvApplyOutput]{KVEvApply(), bug, 2,
		kvScript(kvOne(v, true), kvLive(v, "", 3, kvChainBatch(3)), kvFailed(v, spec.ReplayReasonTimeout))}
}

// plantedKVEvSnapshotLosesABatchCount: the restored index counts one
// batch fewer on every stream that applied one (a counter dropped by the
// snapshot). Shortest script, 1 step: one live batch; with none, every
// count is 0 and there is nothing to lose.
func plantedKVEvSnapshotLosesABatchCount() plantedScriptBug[spec.KVEvSnapshotInput, spec.KVEvSnapshotOutput] {
	bug := func(lim spec.Limits, in spec.KVEvSnapshotInput) (spec.KVEvSnapshotOutput, error) {
		out, err := fast.KVEvSnapshot(lim, in)
		for i := range out.State.Streams {
			if c := &out.State.Streams[i].Counters; c.Batches > 0 {
				c.Batches--
			}
		}
		return out, err
	}
	const v = "vllm-0"
	return plantedScriptBug[spec.KVEvSnapshotInput, spec.KVEvSnapshotOutput]{KVEvSnapshot(), bug, 1,
		spec.KVEvSnapshotInput{Streams: kvOne(v, false), Steps: []spec.KVEvStep{kvLive(v, "", 0, kvChainBatch(0))}}}
}

// PlantedCounterResetBug is plantedCounterResetKeepsConsumer for the
// Shrink tests of package equiv_test (shrink_test.go): the spec, the buggy
// twin and the length of the shortest script that shows the bug.
func PlantedCounterResetBug() (*Spec[spec.HiCacheLayerDoneScriptInput, spec.HiCacheLayerDoneScriptOutput], catalog.Func[spec.HiCacheLayerDoneScriptInput, spec.HiCacheLayerDoneScriptOutput], int) {
	p := plantedCounterResetKeepsConsumer()
	return p.spec, p.bug, p.shortest
}
