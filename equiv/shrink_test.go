package equiv_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/fixtures"
	"github.com/kvtwin/kvtwin/spec"
)

// TestShrinkReturnsAMinimalCounterexample drives Shrink (what `kvtwin audit`
// uses outside go test) with a twin that ignores chunk_page_start, and
// expects rapid's shrunk input: a one-page chunk at position 1.
func TestShrinkReturnsAMinimalCounterexample(t *testing.T) {
	broken := func(lim spec.Limits, in spec.TransferFilterCPRankInput) (spec.TransferFilterCPRankOutput, error) {
		in.ChunkPageStart = 0
		return fast.TransferFilterCPRank(lim, in)
	}
	f := equiv.TransferFilterCPRank().Shrink("broken", broken, equiv.Valid)
	if f == nil {
		t.Fatal("Shrink found no counterexample for a twin that ignores chunk_page_start")
	}
	var in spec.TransferFilterCPRankInput
	if err := json.Unmarshal(f.Input, &in); err != nil {
		t.Fatal(err)
	}
	if len(in.KV) != 1 || in.ChunkPageStart != 1 {
		t.Errorf("shrunk input is not minimal: %s", f.Input)
	}
	if f.Diff == "" {
		t.Errorf("failure carries no diff: %v", f)
	}
}

// TestShrinkDeletesStepsAfterRapid: Shrink, what `kvtwin audit` runs for an
// implementation of this build, reports the layer-done counter's planted
// reset bug (steps_test.go) as a script no longer than the shortest that
// shows it, however long rapid's shrunk script was (the generator follows
// a model of the counter, so rapid's shrink often stops at a dozen steps
// or more), and says what step deletion did.
func TestShrinkDeletesStepsAfterRapid(t *testing.T) {
	if raceEnabled {
		t.Skip("rapid's search under -race runs a fifth of its checks; make test-full runs this without -race")
	}
	s, bug, shortest := equiv.PlantedCounterResetBug()
	requireShrunkToShortest(t, s.Shrink("planted", bug, equiv.Valid), shortest)
}

// TestRemoteShrinkDeletesStepsAgainstTheAdapter: RemoteShrink, what `kvtwin
// audit` runs for an adapter, does the same against the adapter.
func TestRemoteShrinkDeletesStepsAgainstTheAdapter(t *testing.T) {
	if raceEnabled {
		t.Skip("rapid's search under -race runs a fifth of its checks; make test-full runs this without -race")
	}
	s, bug, shortest := equiv.PlantedCounterResetBug()
	adapter := runnerFunc(func(op string, in []byte) (fixtures.Result, error) {
		var x spec.HiCacheLayerDoneScriptInput
		if err := json.Unmarshal(in, &x); err != nil {
			return fixtures.Result{}, err
		}
		out, err := bug(spec.DefaultLimits(), x)
		return fixtures.Result{Bytes: catalog.Canonical(out, err), Rejected: err != nil}, nil
	})
	f := s.RemoteShrink("exec:planted", adapter, equiv.ErrorsCode, equiv.Valid)
	if f != nil && f.Transport {
		t.Fatalf("the adapter's counterexample is a transport failure: %v", f)
	}
	requireShrunkToShortest(t, f, shortest)
}

// requireShrunkToShortest checks a shrunk failure of the counter's reset
// bug: found, no longer than the shortest script, and its report says what
// step deletion did.
func requireShrunkToShortest(t *testing.T, f *equiv.Failure, shortest int) {
	t.Helper()
	if f == nil {
		t.Fatal("no counterexample for the planted bug")
	}
	var in spec.HiCacheLayerDoneScriptInput
	if err := json.Unmarshal(f.Input, &in); err != nil {
		t.Fatal(err)
	}
	if d := f.StepDeletion; len(in.Steps) > shortest || d == nil || d.To != len(in.Steps) {
		t.Errorf("shrunk to %s (%v), want at most %d steps after step deletion", f.Input, d, shortest)
	}
	if !strings.Contains(f.Error(), "step deletion: ") {
		t.Errorf("the failure's report does not say what step deletion did:\n%v", f)
	}
}

// runnerFunc adapts a function to equiv.Remote.
type runnerFunc func(op string, in []byte) (fixtures.Result, error)

func (f runnerFunc) Run(op string, in []byte) (fixtures.Result, error) { return f(op, in) }
