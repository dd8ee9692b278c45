package ref

import (
	"errors"
	"testing"
)

// The script's group semantics: MIN draining over ranks with independent
// readiness, and group steps some rank must reject refused as a whole.
func TestAckScriptDrainsTheMinOverRanks(t *testing.T) {
	in := AckScriptInput{Steps: []AckStep{
		{Op: AckCreate, Ranks: 2, Layers: 1, HostCapacity: 4},
		{Op: AckNode, ValueLen: 1},
		{Op: AckNode, ValueLen: 1},
		{Op: AckWriteNonCP, Node: 1},
		{Op: AckWriteNonCP, Node: 2},
		{Op: AckEventsComplete, Rank: new(0), K: 2},
		{Op: AckEventsComplete, Rank: new(1), K: 1},
		{Op: AckWritingCheck, Agreed: new(2)}, // beyond rank 1: refused on every rank
		{Op: AckEventsComplete, K: 1},         // beyond rank 0's unready acks: refused on every rank
		{Op: AckWritingCheck},                 // MIN = 1
	}}
	out, err := AckScript(DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	if e := out.Trace[7].Error; e == nil || e.Code != ErrDrainBeyondReady.Code() || e.Field != "steps[7].agreed" || out.Trace[7].Diverged != nil {
		t.Fatalf("explicit drain beyond rank 1: %+v", out.Trace[7])
	}
	if e := out.Trace[8].Error; e == nil || e.Code != ErrEventsBeyondQueue.Code() || out.Trace[8].Diverged != nil {
		t.Fatalf("event sweep beyond rank 0: %+v", out.Trace[8])
	}
	if r := out.Trace[8]; r.ReadyPrefix[0] != 2 || r.ReadyPrefix[1] != 1 {
		t.Fatalf("a refused sweep changed readiness: %v", r.ReadyPrefix)
	}
	if d := out.Trace[9].Drain; d == nil || d.Popped != 1 || d.Completed[0] != 1 {
		t.Fatalf("MIN drain: %+v", out.Trace[9])
	}
	if err := CheckAckRanks(out.Ranks); err != nil {
		t.Fatal(err)
	}
}

// A terminal consumer error ends the run; later steps are not traced.
func TestAckScriptHaltsAtTerminalError(t *testing.T) {
	in := AckScriptInput{Steps: []AckStep{
		{Op: AckCreate, Ranks: 1, Layers: 1},
		{Op: AckAppend, IDs: []NodeID{9}},
		{Op: AckEventsComplete, K: 1},
		{Op: AckWritingCheck},
		{Op: AckHas, Node: 9},
	}}
	out, err := AckScript(DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	last := out.Trace[len(out.Trace)-1]
	if len(out.Trace) != 4 || !out.Halted || !last.Terminal || last.Error.Code != ErrUnknownWriteAck.Code() || last.Error.Value != NodeID(9) {
		t.Fatalf("trace %d steps, halted %t, last %+v", len(out.Trace), out.Halted, last)
	}
}

// Refusals are reported with their reason, not as errors.
func TestAckScriptReportsRefusalReasons(t *testing.T) {
	in := AckScriptInput{Steps: []AckStep{
		{Op: AckCreate, Ranks: 2, Layers: 2, HostCapacity: 1},
		{Op: AckNode, ValueLen: 1},
		{Op: AckNode, ValueLen: 1},
		{Op: AckReserve, Node: 1, Owned: []int{1, 0}},
		{Op: AckReserve, Node: 1, Owned: []int{1, 0}},
		{Op: AckWriteNonCP, Node: 2},
	}}
	out, err := AckScript(DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	if out.Trace[4].Refused != ReasonPending || out.Trace[5].Refused != ReasonHostFull || out.Trace[4].Error != nil {
		t.Fatalf("%+v %+v", out.Trace[4], out.Trace[5])
	}
}

// Scripts that cannot run are rejected whole, naming the step's field.
func TestAckScriptRejectsUnrunnableScripts(t *testing.T) {
	create := AckStep{Op: AckCreate, Ranks: 2, Layers: 1, HostCapacity: 4}
	cases := []struct {
		name  string
		steps []AckStep
		want  *Sentinel
		field string
	}{
		{"empty", nil, ErrScriptOrder, "steps[0].op"},
		{"no create first", []AckStep{{Op: AckReserve}}, ErrScriptOrder, "steps[0].op"},
		{"unknown op", []AckStep{create, {Op: "drain"}}, ErrBadEnum, "steps[1].op"},
		{"no ranks", []AckStep{{Op: AckCreate, Layers: 1}}, ErrBadCPSize, "steps[0].ranks"},
		{"no layers", []AckStep{{Op: AckCreate, Ranks: 1}}, ErrBadNumLayers, "steps[0].num_layers"},
		{"negative capacity", []AckStep{{Op: AckCreate, Ranks: 1, Layers: 1, HostCapacity: -1}}, ErrNegative, "steps[0].host_capacity"},
		{"huge capacity", []AckStep{{Op: AckCreate, Ranks: 4, Layers: 1, HostCapacity: 1 << 40}}, ErrTooLarge, "steps[0].host_capacity"},
		{"owned per rank", []AckStep{create, {Op: AckReserve, Node: 1, Owned: []int{1}}}, ErrLengthMismatch, "steps[1].owned"},
		{"negative owned", []AckStep{create, {Op: AckWriteBackup, Node: 1, Owned: []int{1, -1}}}, ErrNegative, "steps[1].owned[1]"},
		{"bad fail_at", []AckStep{create, {Op: AckWriteBackup, Node: 1, Owned: []int{1, 1}, FailAt: "later"}}, ErrBadEnum, "steps[1].fail_at"},
		{"rank out of range", []AckStep{create, {Op: AckEventsComplete, Rank: new(2)}}, ErrBadCPRank, "steps[1].rank"},
	}
	for _, c := range cases {
		_, err := AckScript(DefaultLimits(), AckScriptInput{Steps: c.steps})
		ie, ok := AsInputError(err)
		if !errors.Is(err, c.want) || !ok || ie.Field != c.field {
			t.Errorf("%s: got %v, want %s at %s", c.name, err, c.want.Code(), c.field)
		}
	}
}
