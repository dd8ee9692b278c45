package fast_test

import (
	"testing"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestCPDraftInputAliasesItsSource checks the fast path was taken: the draft
// rows alias the chosen input (no copy of the hidden states) and the only
// allocations are the guard's mask and last rows, whatever the row count.
func TestCPDraftInputAliasesItsSource(t *testing.T) {
	sp := spec.LayoutSpec{CP: 8, Lens: []int{12_800, 12_800, 700, 1}, Granule: 64}
	lay, err := sp.Build()
	if err != nil {
		t.Fatal(err)
	}
	draft := spec.Rows{W: 256, B: make([]byte, lay.R(3)*256)}
	in := spec.CPDraftInputInput{Layout: &sp, Rank: 3, HiddenContract: spec.DraftGlobalValid,
		Hidden: spec.Rows{W: 256, B: make([]byte, lay.TotalValid()*256)}, DraftHidden: &draft}
	out, err := fast.CPDraftInput(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	if !out.CPLocal || &out.Hidden.B[0] != &draft.B[0] {
		t.Fatalf("draft rows do not alias the CP-local draft hidden states (cp_local %t)", out.CPLocal)
	}
	// The layout build (validation) allocates per request; the guard adds two.
	base := testing.AllocsPerRun(20, func() { _, _ = ref.ValidateCPDraftInput(spec.DefaultLimits(), in) })
	if n := testing.AllocsPerRun(20, func() { _, _ = fast.CPDraftInput(spec.DefaultLimits(), in) }); n > base+2 {
		t.Errorf("fast.DraftInput allocated %v times, validation alone %v: want at most 2 more", n, base)
	}
}
