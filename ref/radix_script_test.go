package ref

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRadixScriptTracesTheWorkedExample(t *testing.T) {
	in := RadixScriptInput{Steps: []RadixStep{
		{Op: StepCreate, PageSize: 1},
		{Op: StepInsert, Key: []int64{1, 2, 3}, Value: []SlotIdx{10, 11, 12}},
		{Op: StepInsert, Key: []int64{1, 2, 4}, Value: []SlotIdx{20, 21, 22}},
		{Op: StepInsert, Key: []int64{5, 6}, Value: []SlotIdx{30, 31}},
		{Op: StepMatch, Key: []int64{1, 2, 4}},
		{Op: StepLock, Node: 3},
		{Op: StepEvict, NumTokens: 1},
		{Op: StepUnlock, Node: 3},
		{Op: StepUnlock, Node: 3},
	}}
	out, err := RadixScript(DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	if got := *out.Trace[2].PrefixLen; got != 2 {
		t.Fatalf("second insert prefix_len %d, want 2", got)
	}
	if diff := cmp.Diff(MatchResult{Indices: []SlotIdx{10, 11, 22}, LastNode: 3}, *out.Trace[4].Match); diff != "" {
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
	lim := DefaultLimits()
	for _, c := range []struct {
		name  string
		steps []RadixStep
		want  *Sentinel
		field string
	}{
		{"empty", nil, ErrScriptOrder, "steps[0].op"},
		{"no-create", []RadixStep{{Op: StepMatch}}, ErrScriptOrder, "steps[0].op"},
		{"unknown-op", []RadixStep{{Op: StepCreate, PageSize: 1}, {Op: "split"}}, ErrBadEnum, "steps[1].op"},
		{"page-size", []RadixStep{{Op: StepCreate}}, ErrInvalidPageSize, "steps[0].page_size"},
		{"token", []RadixStep{{Op: StepCreate, PageSize: 1}, {Op: StepMatch, Key: []int64{1 << 32}}}, ErrTokenRange, "steps[1].key[0]"},
	} {
		_, err := RadixScript(lim, RadixScriptInput{Steps: c.steps})
		ie, ok := AsInputError(err)
		if !errors.Is(err, c.want) || !ok || ie.Field != c.field {
			t.Errorf("%s: %v, want %s at %s", c.name, err, c.want.Code(), c.field)
		}
	}
}

func TestRadixScriptBoundsItsOutput(t *testing.T) {
	steps := []RadixStep{{Op: StepCreate, PageSize: 1}, {Op: StepInsert, Key: make([]int64, 100)}}
	for range 20 {
		steps = append(steps, RadixStep{Op: StepMatch, Key: make([]int64, 100)})
	}
	_, err := RadixScript(Limits{MaxOutputBytes: 8 * 1000}, RadixScriptInput{Steps: steps})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("20 matches of 100 slots under an 8000-byte limit: %v", err)
	}
}
