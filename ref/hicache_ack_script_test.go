package ref

import (
	"errors"
	"runtime"
	"testing"

	"github.com/kvtwin/kvtwin/spec"
)

// The script's group semantics: MIN draining over ranks with independent
// readiness, and group steps some rank must reject refused as a whole.
func TestHiCacheAckScriptDrainsTheMinOverRanks(t *testing.T) {
	in := spec.HiCacheAckScriptInput{Steps: []spec.AckStep{
		{Op: spec.AckCreate, Ranks: 2, Layers: 1, HostCapacity: 4},
		{Op: spec.AckNode, ValueLen: 1},
		{Op: spec.AckNode, ValueLen: 1},
		{Op: spec.AckWriteNonCP, Node: 1},
		{Op: spec.AckWriteNonCP, Node: 2},
		{Op: spec.AckEventsComplete, Rank: new(0), K: 2},
		{Op: spec.AckEventsComplete, Rank: new(1), K: 1},
		{Op: spec.AckWritingCheck, Agreed: new(2)}, // beyond rank 1: refused on every rank
		{Op: spec.AckEventsComplete, K: 1},         // beyond rank 0's unready acks: refused on every rank
		{Op: spec.AckWritingCheck},                 // MIN = 1
	}}
	out, err := HiCacheAckScript(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	if e := out.Trace[7].Error; e == nil || e.Code != errDrainBeyondReady.Code() || e.Field != "steps[7].agreed" || out.Trace[7].Diverged != nil {
		t.Fatalf("explicit drain beyond rank 1: %+v", out.Trace[7])
	}
	if e := out.Trace[8].Error; e == nil || e.Code != errEventsBeyondQueue.Code() || out.Trace[8].Diverged != nil {
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
func TestHiCacheAckScriptHaltsAtTerminalError(t *testing.T) {
	in := spec.HiCacheAckScriptInput{Steps: []spec.AckStep{
		{Op: spec.AckCreate, Ranks: 1, Layers: 1},
		{Op: spec.AckAppend, IDs: []spec.NodeID{9}},
		{Op: spec.AckEventsComplete, K: 1},
		{Op: spec.AckWritingCheck},
		{Op: spec.AckHas, Node: 9},
	}}
	out, err := HiCacheAckScript(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	last := out.Trace[len(out.Trace)-1]
	if len(out.Trace) != 4 || !out.Halted || !last.Terminal || last.Error.Code != spec.ErrUnknownWriteAck.Code() || last.Error.Value != spec.NodeID(9) {
		t.Fatalf("trace %d steps, halted %t, last %+v", len(out.Trace), out.Halted, last)
	}
}

// Refusals are reported with their reason, not as errors.
func TestHiCacheAckScriptReportsRefusalReasons(t *testing.T) {
	in := spec.HiCacheAckScriptInput{Steps: []spec.AckStep{
		{Op: spec.AckCreate, Ranks: 2, Layers: 2, HostCapacity: 1},
		{Op: spec.AckNode, ValueLen: 1},
		{Op: spec.AckNode, ValueLen: 1},
		{Op: spec.AckReserve, Node: 1, Owned: []int{1, 0}},
		{Op: spec.AckReserve, Node: 1, Owned: []int{1, 0}},
		{Op: spec.AckWriteNonCP, Node: 2},
	}}
	out, err := HiCacheAckScript(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	if out.Trace[4].Refused != spec.ReasonPending || out.Trace[5].Refused != spec.ReasonHostFull || out.Trace[4].Error != nil {
		t.Fatalf("%+v %+v", out.Trace[4], out.Trace[5])
	}
}

// Scripts that cannot run are rejected whole, naming the step's field.
func TestHiCacheAckScriptRejectsUnrunnableScripts(t *testing.T) {
	create := spec.AckStep{Op: spec.AckCreate, Ranks: 2, Layers: 1, HostCapacity: 4}
	cases := []struct {
		name  string
		steps []spec.AckStep
		want  *spec.Sentinel
		field string
	}{
		{"empty", nil, spec.ErrScriptOrder, "steps[0].op"},
		{"no create first", []spec.AckStep{{Op: spec.AckReserve}}, spec.ErrScriptOrder, "steps[0].op"},
		{"unknown op", []spec.AckStep{create, {Op: "drain"}}, spec.ErrBadEnum, "steps[1].op"},
		{"no ranks", []spec.AckStep{{Op: spec.AckCreate, Layers: 1}}, spec.ErrBadCPSize, "steps[0].ranks"},
		{"no layers", []spec.AckStep{{Op: spec.AckCreate, Ranks: 1}}, spec.ErrBadNumLayers, "steps[0].num_layers"},
		{"negative capacity", []spec.AckStep{{Op: spec.AckCreate, Ranks: 1, Layers: 1, HostCapacity: -1}}, spec.ErrNegative, "steps[0].host_capacity"},
		{"huge capacity", []spec.AckStep{{Op: spec.AckCreate, Ranks: 4, Layers: 1, HostCapacity: 1 << 40}}, spec.ErrTooLarge, "steps[0].host_capacity"},
		{"owned per rank", []spec.AckStep{create, {Op: spec.AckReserve, Node: 1, Owned: []int{1}}}, spec.ErrLengthMismatch, "steps[1].owned"},
		{"negative owned", []spec.AckStep{create, {Op: spec.AckWriteBackup, Node: 1, Owned: []int{1, -1}}}, spec.ErrNegative, "steps[1].owned[1]"},
		{"bad fail_at", []spec.AckStep{create, {Op: spec.AckWriteBackup, Node: 1, Owned: []int{1, 1}, FailAt: "later"}}, spec.ErrBadEnum, "steps[1].fail_at"},
		{"rank out of range", []spec.AckStep{create, {Op: spec.AckEventsComplete, Rank: new(2)}}, spec.ErrBadCPRank, "steps[1].rank"},
	}
	for _, c := range cases {
		_, err := HiCacheAckScript(spec.DefaultLimits(), spec.HiCacheAckScriptInput{Steps: c.steps})
		ie, ok := spec.AsInputError(err)
		if !errors.Is(err, c.want) || !ok || ie.Field != c.field {
			t.Errorf("%s: got %v, want %s at %s", c.name, err, c.want.Code(), c.field)
		}
	}
}

// TestHiCacheAckScriptRejectsLayersWhoseFlagTableOverflows is the hostile-input
// harness's finding on hicache.ack_script: the group's table size
// ranks·(host_capacity + layers·(registrations+1)) was formed unchecked, so
// layers = 2^63−1 (or 2^61 with 7 registrations: 2^64 flags, i.e. 0)
// wrapped it below the output bound and the first reservation's
// make([]bool, layers) panicked in both twins. The layers term is checked
// on its own and named; the sum and the product then cannot wrap silently.
func TestHiCacheAckScriptRejectsLayersWhoseFlagTableOverflows(t *testing.T) {
	backup := spec.AckStep{Op: spec.AckWriteBackup, Node: 1, Owned: []int{1, 1, 1}}
	script := func(layers, regs int) []spec.AckStep {
		steps := []spec.AckStep{{Op: spec.AckCreate, Ranks: 3, Layers: layers, HostCapacity: 10}, {Op: spec.AckNode, ValueLen: 3}}
		for range regs {
			steps = append(steps, backup)
		}
		return steps
	}
	for _, c := range []struct {
		name  string
		steps []spec.AckStep
		want  *spec.Sentinel
		field string
	}{
		{"layers 2^63-1", script(1<<63-1, 1), spec.ErrOverflow, "steps[0].layers"},
		{"layers 2^61, 8 flag sets", script(1<<61, 7), spec.ErrOverflow, "steps[0].layers"},
		{"layers 2^62 on 3 ranks: the product wraps", script(1<<62, 0)[:1], spec.ErrOverflow, "steps[0].host_capacity"},
		{"layers 2^40: fits int64, not the limits", script(1<<40, 0)[:1], spec.ErrTooLarge, "steps[0].host_capacity"},
		{"capacity near 2^63", []spec.AckStep{{Op: spec.AckCreate, Ranks: 1, Layers: 1, HostCapacity: 1<<63 - 1}}, spec.ErrOverflow, "steps[0].host_capacity"},
	} {
		_, err := HiCacheAckScript(spec.DefaultLimits(), spec.HiCacheAckScriptInput{Steps: c.steps})
		ie, ok := spec.AsInputError(err)
		if !errors.Is(err, c.want) || !ok || ie.Field != c.field {
			t.Errorf("%s: got %v, want %s at %s", c.name, err, c.want.Code(), c.field)
		}
	}
}

// TestHiCacheAckScriptBoundsTheTraceTheRankCountMultiplies: every step's result
// carries one ready prefix and one duplicate count per rank, and runs the
// step on every rank, so a create of 100,000 ranks — within its own bound
// (ranks × (host_capacity + layers) × 8 bytes) — made each of the
// following one-word steps cost 1.6 MB of trace and 100,000 rank steps.
// The trace's per-rank entries are bounded like an output, at the create
// whose ranks they multiply.
func TestHiCacheAckScriptBoundsTheTraceTheRankCountMultiplies(t *testing.T) {
	steps := []spec.AckStep{{Op: spec.AckCreate, Ranks: 100_000, Layers: 1}}
	for range 100 {
		steps = append(steps, spec.AckStep{Op: spec.AckReset})
	}
	lim := spec.Limits{MaxOutputBytes: 1 << 20}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	_, err := HiCacheAckScript(lim, spec.HiCacheAckScriptInput{Steps: steps})
	runtime.ReadMemStats(&m1)
	if ie, ok := spec.AsInputError(err); !ok || !errors.Is(err, spec.ErrTooLarge) || ie.Field != "steps[0].ranks" {
		t.Errorf("got %v, want too_large at steps[0].ranks", err)
	}
	if a := m1.TotalAlloc - m0.TotalAlloc; a > 4<<20 {
		t.Errorf("allocated %d bytes before rejecting", a)
	}
	// The same group for a few steps fits: 4 × 2 ranks' entries.
	if _, err := HiCacheAckScript(lim, spec.HiCacheAckScriptInput{Steps: []spec.AckStep{{Op: spec.AckCreate, Ranks: 2, Layers: 1}, {Op: spec.AckReset}, {Op: spec.AckReset}, {Op: spec.AckReset}}}); err != nil {
		t.Errorf("a small script: %v", err)
	}
}
