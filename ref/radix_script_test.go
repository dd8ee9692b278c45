package ref

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kvtwin/kvtwin/spec"
)

func TestRadixScriptTracesTheWorkedExample(t *testing.T) {
	in := spec.RadixScriptInput{Steps: []spec.RadixStep{
		{Op: spec.StepCreate, PageSize: 1},
		{Op: spec.StepInsert, Key: []int64{1, 2, 3}, Value: []spec.SlotIdx{10, 11, 12}},
		{Op: spec.StepInsert, Key: []int64{1, 2, 4}, Value: []spec.SlotIdx{20, 21, 22}},
		{Op: spec.StepInsert, Key: []int64{5, 6}, Value: []spec.SlotIdx{30, 31}},
		{Op: spec.StepMatch, Key: []int64{1, 2, 4}},
		{Op: spec.StepLock, Node: 3},
		{Op: spec.StepEvict, NumTokens: 1},
		{Op: spec.StepUnlock, Node: 3},
		{Op: spec.StepUnlock, Node: 3},
	}}
	out, err := RadixScript(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	if got := *out.Trace[2].PrefixLen; got != 2 {
		t.Fatalf("second insert prefix_len %d, want 2", got)
	}
	if diff := cmp.Diff(spec.MatchResult{Indices: []spec.SlotIdx{10, 11, 22}, LastNode: 3}, *out.Trace[4].Match); diff != "" {
		t.Fatal(diff)
	}
	if *out.Trace[5].Delta != -3 || out.Trace[6].Evict.Victims[0] != 1 || *out.Trace[7].Delta != 3 {
		t.Fatalf("lock/evict/unlock trace: %+v", out.Trace[5:8])
	}
	last := out.Trace[8]
	if last.Error == nil || last.Error.Code != "lock_underflow" || last.Error.Field != "steps[8].node" || last.Delta != nil {
		t.Fatalf("double unlock: %+v", last)
	}
	if err := CheckTreeState(out.Tree); err != nil {
		t.Fatal(err)
	}
}

func TestRadixScriptRejectsScriptsThatCannotRun(t *testing.T) {
	lim := spec.DefaultLimits()
	for _, c := range []struct {
		name  string
		steps []spec.RadixStep
		want  *spec.Sentinel
		field string
	}{
		{"empty", nil, spec.ErrScriptOrder, "steps[0].op"},
		{"no-create", []spec.RadixStep{{Op: spec.StepMatch}}, spec.ErrScriptOrder, "steps[0].op"},
		{"unknown-op", []spec.RadixStep{{Op: spec.StepCreate, PageSize: 1}, {Op: "split"}}, spec.ErrBadEnum, "steps[1].op"},
		{"page-size", []spec.RadixStep{{Op: spec.StepCreate}}, spec.ErrInvalidPageSize, "steps[0].page_size"},
		{"token", []spec.RadixStep{{Op: spec.StepCreate, PageSize: 1}, {Op: spec.StepMatch, Key: []int64{1 << 32}}}, spec.ErrTokenRange, "steps[1].key[0]"},
	} {
		_, err := RadixScript(lim, spec.RadixScriptInput{Steps: c.steps})
		ie, ok := spec.AsInputError(err)
		if !errors.Is(err, c.want) || !ok || ie.Field != c.field {
			t.Errorf("%s: %v, want %s at %s", c.name, err, c.want.Code(), c.field)
		}
	}
}

func TestRadixScriptBoundsItsOutput(t *testing.T) {
	steps := []spec.RadixStep{{Op: spec.StepCreate, PageSize: 1}, {Op: spec.StepInsert, Key: make([]int64, 100)}}
	for range 20 {
		steps = append(steps, spec.RadixStep{Op: spec.StepMatch, Key: make([]int64, 100)})
	}
	_, err := RadixScript(spec.Limits{MaxOutputBytes: 8 * 1000}, spec.RadixScriptInput{Steps: steps})
	if !errors.Is(err, spec.ErrTooLarge) {
		t.Fatalf("20 matches of 100 slots under an 8000-byte limit: %v", err)
	}
}
