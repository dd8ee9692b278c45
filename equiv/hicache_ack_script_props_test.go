package equiv_test

import (
	"testing"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestAckPropertiesCatchWrongRuns: each §3.3 property holds on ref's run of
// a two-rank duplicate-drain script and fails on a result broken the way
// it guards against.
func TestAckPropertiesCatchWrongRuns(t *testing.T) {
	sp := equiv.HiCacheAckScript()
	in := spec.HiCacheAckScriptInput{Steps: []spec.AckStep{
		{Op: spec.AckCreate, Ranks: 2, Layers: 1, HostCapacity: 8},
		{Op: spec.AckNode, Node: 7, ValueLen: 1},
		{Op: spec.AckWriteNonCP, Node: 7},
		{Op: spec.AckInjectDuplicate, Node: 7},
		{Op: spec.AckEventsComplete, K: 2},
		{Op: spec.AckWritingCheck},
		{Op: spec.AckHas, Node: 7},
	}}
	good, err := ref.HiCacheAckScript(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	if d := good.Trace[5].Drain; d == nil || d.Popped != 2 || d.Duplicates != 1 {
		t.Fatalf("the script does not drain a duplicate: %+v", good.Trace[5])
	}
	broken := map[string]func(*spec.HiCacheAckScriptOutput){
		// W6 broken: a lock left behind on rank 1.
		"write-invariants": func(o *spec.HiCacheAckScriptOutput) { o.Ranks[1].Nodes[0].LockRef = 1 },
		// W11 broken: rank 1 returned a different outcome.
		"spmd-consistency": func(o *spec.HiCacheAckScriptOutput) {
			o.Trace[2].Diverged = []spec.AckOutcome{{}, {Refused: spec.ReasonPending}}
		},
		// the drain stopped after one ack although two were ready everywhere.
		"drain-pops-agreed": func(o *spec.HiCacheAckScriptOutput) { o.Trace[5].Drain.Popped = 1 },
		// a warning counted without a duplicate drained.
		"duplicates-warn": func(o *spec.HiCacheAckScriptOutput) { o.Trace[6].DuplicateAcks[0] = 2 },
		// the run halted without a terminal error.
		"terminal-ends-run": func(o *spec.HiCacheAckScriptOutput) { o.Trace, o.Halted = o.Trace[:6], true },
	}
	propsCatchBreaks(t, sp.Props, in, good, broken)
}
