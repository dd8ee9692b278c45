package equiv_test

import (
	"testing"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestCPDraftInputPropertiesCatchWrongInputs: each cp.draft_input property
// holds on ref's draft input and fails on one broken the way it guards
// against.
func TestCPDraftInputPropertiesCatchWrongInputs(t *testing.T) {
	sp := equiv.CPDraftInput()
	lim := spec.DefaultLimits()
	// padded cp=2, g=1, L=[2]: R(0) = 2 = Σ L.
	global := spec.CPDraftInputInput{Layout: &spec.LayoutSpec{CP: 2, Lens: []int{2}, Granule: 1},
		HiddenContract: spec.DraftGlobalValid, Hidden: spec.Rows{W: 2, B: []byte{1, 1, 2, 2}}}
	withDraft := global
	withDraft.DraftHidden = &spec.Rows{W: 1, B: []byte{9, 0}}
	run := func(in spec.CPDraftInputInput) spec.CPDraftInputOutput {
		out, err := ref.CPDraftInput(lim, in)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	// The length-inference bug on the global rows: marked CP-local, guard masks a2.
	inferred := run(global)
	inferred.CPLocal, inferred.Contract = true, spec.DraftCPLocal
	inferred.Guard = ref.DraftGuard(&spec.Layout{CP: 2, L: []int{2}, S: [][]int{{1, 1, 1, 1}}, V: [][]int{{1, 1, 0, 0}}}, 0, true, 2)
	// The v2 bug: global rows although draft hidden states were given.
	ignored := run(global)
	// A guard that masks nothing on CP-local rows (scalar non-padded count).
	unmasked := run(withDraft)
	unmasked.Guard.ValidMask = []bool{true, true}
	broken := map[string]struct {
		in  spec.CPDraftInputInput
		out spec.CPDraftInputOutput
	}{
		"marker-is-declared":            {global, inferred},
		"prefers-cp-local-draft-hidden": {withDraft, ignored},
		"guard-follows-marker":          {withDraft, unmasked},
	}
	for _, p := range sp.Props {
		for _, in := range []spec.CPDraftInputInput{global, withDraft} {
			if err := p.Holds(lim, in, run(in)); err != nil {
				t.Errorf("%s fails on ref's draft input: %v", p.Name, err)
			}
		}
		b, ok := broken[p.Name]
		if !ok {
			t.Errorf("no broken draft input for property %s", p.Name)
			continue
		}
		if propHolds(t, sp.Props, p.Name, b.in, b.out) == nil {
			t.Errorf("%s holds on broken draft input %+v", p.Name, b.out)
		}
	}
}
