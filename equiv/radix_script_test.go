package equiv_test

import (
	"errors"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/spec"
)

// TestRadixScriptTraceIsBoundedByLimits is the scripts amendment of
// docs/spec/radix-acks.md §1.10: the trace's slot lists are bounded by the
// run's Limits (8 bytes a slot). A match whose slots pass the bound stops
// the script at its step; a script whose steps return no slots is still
// bounded by its final tree (keys and slots: twice the units); an output
// exactly at the bound is served. Every twin stops at the same field.
func TestRadixScriptTraceIsBoundedByLimits(t *testing.T) {
	e, ok := catalog.Lookup("radix.script")
	if !ok {
		t.Fatal("no op radix.script")
	}
	create := spec.RadixStep{Op: spec.StepCreate, PageSize: 1}
	key := []int64{1, 2, 3, 4, 5, 6, 7, 8}
	insert := spec.RadixStep{Op: spec.StepInsert, Key: key}
	match := spec.RadixStep{Op: spec.StepMatch, Key: key}
	for _, c := range []struct {
		name     string
		steps    []spec.RadixStep
		maxBytes int64
		field    string // "" when the run must succeed
	}{
		{"match-slots-past-the-bound", []spec.RadixStep{create, insert, match}, 7 * 8, "steps[2]"},
		{"final-tree-past-the-bound", []spec.RadixStep{create, insert}, 15 * 8, "steps"},
		{"final-tree-at-the-bound", []spec.RadixStep{create, insert}, 16 * 8, ""},
	} {
		in, err := catalog.Marshal(spec.RadixScriptInput{Steps: c.steps})
		if err != nil {
			t.Fatal(err)
		}
		lim := spec.DefaultLimits()
		lim.MaxOutputBytes = c.maxBytes
		for _, impl := range selectedImpls(t, e) {
			_, err := e.Run(impl, lim, in)
			ie, _ := spec.AsInputError(err)
			switch {
			case c.field == "" && err != nil:
				t.Errorf("%s on %s: %v, want the output", c.name, impl, err)
			case c.field != "" && (!errors.Is(err, spec.ErrTooLarge) || ie == nil || ie.Field != c.field):
				t.Errorf("%s on %s: %v, want ErrTooLarge at %s", c.name, impl, err, c.field)
			}
		}
	}
}
