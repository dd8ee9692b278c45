package ref_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestCPDraftInputKnownAnswers pins cp.draft_input's design on the smallest
// layouts: padded cp=2, g=1, L=[2] (R(0) = 2 = Σ L: the contracts share a
// length) and L=[3] (rank 0 holds a0 | PAD, rank 1 a1 | a2, §2.5).
func TestCPDraftInputKnownAnswers(t *testing.T) {
	l2 := &spec.LayoutSpec{CP: 2, Lens: []int{2}, Granule: 1}
	l3 := &spec.LayoutSpec{CP: 2, Lens: []int{3}, Granule: 1}
	global2 := spec.Rows{W: 2, B: []byte{1, 1, 2, 2}}
	local := spec.Rows{W: 1, B: []byte{10, 0}}
	cases := []struct {
		name string
		in   spec.CPDraftInputInput
		want spec.CPDraftInputOutput
	}{
		{"global rows of R(r) length stay global", spec.CPDraftInputInput{Layout: l2, HiddenContract: spec.DraftGlobalValid, Hidden: global2},
			spec.CPDraftInputOutput{Hidden: global2, Contract: spec.DraftGlobalValid, Source: spec.DraftSourceHidden,
				Guard: spec.DraftPadGuard{Rows: 2, ValidMask: []bool{true, true}, LastRows: []int{1}}}},
		{"same length declared CP-local", spec.CPDraftInputInput{Layout: l2, HiddenContract: spec.DraftCPLocal, Hidden: global2},
			spec.CPDraftInputOutput{Hidden: global2, CPLocal: true, Contract: spec.DraftCPLocal, Source: spec.DraftSourceHidden,
				Guard: spec.DraftPadGuard{Rows: 2, ValidMask: []bool{true, false}, LastRows: []int{-1}}}},
		{"draft hidden preferred on rank 0 (a0 | PAD)", spec.CPDraftInputInput{Layout: l3, HiddenContract: spec.DraftGlobalValid,
			Hidden: spec.Rows{W: 2, B: []byte{1, 1, 2, 2, 3, 3}}, DraftHidden: &local},
			spec.CPDraftInputOutput{Hidden: local, CPLocal: true, Contract: spec.DraftCPLocal, Source: spec.DraftSourceDraftHidden,
				Guard: spec.DraftPadGuard{Rows: 2, ValidMask: []bool{true, false}, LastRows: []int{-1}}}},
		{"rank 1 (a1 | a2) owns the last token at local row 1", spec.CPDraftInputInput{Layout: l3, Rank: 1, HiddenContract: spec.DraftGlobalValid,
			Hidden: spec.Rows{W: 2, B: []byte{1, 1, 2, 2, 3, 3}}, DraftHidden: &spec.Rows{W: 1, B: []byte{11, 12}}},
			spec.CPDraftInputOutput{Hidden: spec.Rows{W: 1, B: []byte{11, 12}}, CPLocal: true, Contract: spec.DraftCPLocal, Source: spec.DraftSourceDraftHidden,
				Guard: spec.DraftPadGuard{Rows: 2, ValidMask: []bool{true, true}, LastRows: []int{1}}}},
		{"non-CP path unchanged", spec.CPDraftInputInput{HiddenContract: spec.DraftGlobalValid, Hidden: global2},
			spec.CPDraftInputOutput{Hidden: global2, Contract: spec.DraftGlobalValid, Source: spec.DraftSourceHidden,
				Guard: spec.DraftPadGuard{Rows: 2, ValidMask: []bool{true, true}, LastRows: []int{}}}},
	}
	for _, c := range cases {
		got, err := ref.CPDraftInput(spec.DefaultLimits(), c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, d)
		}
	}
}

// TestCPDraftInputRejectsBadInputNamingFieldAndBound: layout and rank errors,
// unknown contracts, ragged buffers, and row counts that break the
// *declared* contract.
func TestCPDraftInputRejectsBadInputNamingFieldAndBound(t *testing.T) {
	ok := func() spec.CPDraftInputInput {
		return spec.CPDraftInputInput{Layout: &spec.LayoutSpec{CP: 2, Lens: []int{3}, Granule: 1}, HiddenContract: spec.DraftGlobalValid,
			Hidden: spec.Rows{W: 1, B: []byte{1, 2, 3}}, DraftHidden: &spec.Rows{W: 1, B: []byte{1, 0}}}
	}
	with := func(f func(*spec.CPDraftInputInput)) spec.CPDraftInputInput { in := ok(); f(&in); return in }
	cases := []struct {
		in    spec.CPDraftInputInput
		want  *spec.Sentinel
		field string
	}{
		{with(func(in *spec.CPDraftInputInput) { in.Layout.CP = 1 }), spec.ErrInvalidCPSize, "layout.cp"},
		{with(func(in *spec.CPDraftInputInput) { in.Layout.Granule = 0 }), spec.ErrTooShortForZigzag, "layout.lens[0]"},
		{with(func(in *spec.CPDraftInputInput) { in.Rank = 2 }), spec.ErrRank, "rank"},
		{with(func(in *spec.CPDraftInputInput) { in.Layout, in.DraftHidden, in.Rank = nil, nil, 1 }), spec.ErrRank, "rank"},
		{with(func(in *spec.CPDraftInputInput) { in.HiddenContract = "GLOBAL_VALID" }), spec.ErrBadEnum, "hidden_contract"},
		{with(func(in *spec.CPDraftInputInput) {
			in.Layout, in.DraftHidden, in.HiddenContract = nil, nil, spec.DraftCPLocal
		}), spec.ErrRowContract, "hidden_contract"},
		{with(func(in *spec.CPDraftInputInput) { in.Hidden.W = 2 }), spec.ErrRowCount, "hidden.b"},
		// §7.5's A10 shape: 3 global rows declared CP-local (R(0) = 2).
		{with(func(in *spec.CPDraftInputInput) { in.HiddenContract = spec.DraftCPLocal }), spec.ErrRowContract, "hidden"},
		{with(func(in *spec.CPDraftInputInput) { in.Layout = nil }), spec.ErrRowContract, "draft_hidden"},
		{with(func(in *spec.CPDraftInputInput) { in.DraftHidden.W = 0 }), spec.ErrRowCount, "draft_hidden.w"},
		{with(func(in *spec.CPDraftInputInput) { in.DraftHidden.B = []byte{1, 2, 3} }), spec.ErrRowContract, "draft_hidden"},
	}
	for _, c := range cases {
		_, err := ref.CPDraftInput(spec.DefaultLimits(), c.in)
		ie, isInput := spec.AsInputError(err)
		if !isInput || !errors.Is(err, c.want) || ie.Field != c.field || ie.Bound == "" {
			t.Errorf("%+v: got %v, want %s on field %s with a bound", c.in, err, c.want.Code(), c.field)
		}
	}
}
