package ref_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/ref"
)

// TestCPDraftInputKnownAnswers pins cp.draft_input's design on the smallest
// layouts: padded cp=2, g=1, L=[2] (R(0) = 2 = Σ L: the contracts share a
// length) and L=[3] (rank 0 holds a0 | PAD, rank 1 a1 | a2, §2.5).
func TestCPDraftInputKnownAnswers(t *testing.T) {
	l2 := &ref.LayoutSpec{CP: 2, Lens: []int{2}, Granule: 1}
	l3 := &ref.LayoutSpec{CP: 2, Lens: []int{3}, Granule: 1}
	global2 := ref.Rows{W: 2, B: []byte{1, 1, 2, 2}}
	local := ref.Rows{W: 1, B: []byte{10, 0}}
	cases := []struct {
		name string
		in   ref.CPDraftInputInput
		want ref.CPDraftInputOutput
	}{
		{"global rows of R(r) length stay global", ref.CPDraftInputInput{Layout: l2, HiddenContract: ref.DraftGlobalValid, Hidden: global2},
			ref.CPDraftInputOutput{Hidden: global2, Contract: ref.DraftGlobalValid, Source: ref.DraftSourceHidden,
				Guard: ref.DraftPadGuard{Rows: 2, ValidMask: []bool{true, true}, LastRows: []int{1}}}},
		{"same length declared CP-local", ref.CPDraftInputInput{Layout: l2, HiddenContract: ref.DraftCPLocal, Hidden: global2},
			ref.CPDraftInputOutput{Hidden: global2, CPLocal: true, Contract: ref.DraftCPLocal, Source: ref.DraftSourceHidden,
				Guard: ref.DraftPadGuard{Rows: 2, ValidMask: []bool{true, false}, LastRows: []int{-1}}}},
		{"draft hidden preferred on rank 0 (a0 | PAD)", ref.CPDraftInputInput{Layout: l3, HiddenContract: ref.DraftGlobalValid,
			Hidden: ref.Rows{W: 2, B: []byte{1, 1, 2, 2, 3, 3}}, DraftHidden: &local},
			ref.CPDraftInputOutput{Hidden: local, CPLocal: true, Contract: ref.DraftCPLocal, Source: ref.DraftSourceDraftHidden,
				Guard: ref.DraftPadGuard{Rows: 2, ValidMask: []bool{true, false}, LastRows: []int{-1}}}},
		{"rank 1 (a1 | a2) owns the last token at local row 1", ref.CPDraftInputInput{Layout: l3, Rank: 1, HiddenContract: ref.DraftGlobalValid,
			Hidden: ref.Rows{W: 2, B: []byte{1, 1, 2, 2, 3, 3}}, DraftHidden: &ref.Rows{W: 1, B: []byte{11, 12}}},
			ref.CPDraftInputOutput{Hidden: ref.Rows{W: 1, B: []byte{11, 12}}, CPLocal: true, Contract: ref.DraftCPLocal, Source: ref.DraftSourceDraftHidden,
				Guard: ref.DraftPadGuard{Rows: 2, ValidMask: []bool{true, true}, LastRows: []int{1}}}},
		{"non-CP path unchanged", ref.CPDraftInputInput{HiddenContract: ref.DraftGlobalValid, Hidden: global2},
			ref.CPDraftInputOutput{Hidden: global2, Contract: ref.DraftGlobalValid, Source: ref.DraftSourceHidden,
				Guard: ref.DraftPadGuard{Rows: 2, ValidMask: []bool{true, true}, LastRows: []int{}}}},
	}
	for _, c := range cases {
		got, err := ref.CPDraftInput(ref.DefaultLimits(), c.in)
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
	ok := func() ref.CPDraftInputInput {
		return ref.CPDraftInputInput{Layout: &ref.LayoutSpec{CP: 2, Lens: []int{3}, Granule: 1}, HiddenContract: ref.DraftGlobalValid,
			Hidden: ref.Rows{W: 1, B: []byte{1, 2, 3}}, DraftHidden: &ref.Rows{W: 1, B: []byte{1, 0}}}
	}
	with := func(f func(*ref.CPDraftInputInput)) ref.CPDraftInputInput { in := ok(); f(&in); return in }
	cases := []struct {
		in    ref.CPDraftInputInput
		want  *ref.Sentinel
		field string
	}{
		{with(func(in *ref.CPDraftInputInput) { in.Layout.CP = 1 }), ref.ErrInvalidCPSize, "layout.cp"},
		{with(func(in *ref.CPDraftInputInput) { in.Layout.Granule = 0 }), ref.ErrTooShortForZigzag, "layout.lens[0]"},
		{with(func(in *ref.CPDraftInputInput) { in.Rank = 2 }), ref.ErrRank, "rank"},
		{with(func(in *ref.CPDraftInputInput) { in.Layout, in.DraftHidden, in.Rank = nil, nil, 1 }), ref.ErrRank, "rank"},
		{with(func(in *ref.CPDraftInputInput) { in.HiddenContract = "GLOBAL_VALID" }), ref.ErrBadEnum, "hidden_contract"},
		{with(func(in *ref.CPDraftInputInput) {
			in.Layout, in.DraftHidden, in.HiddenContract = nil, nil, ref.DraftCPLocal
		}), ref.ErrRowContract, "hidden_contract"},
		{with(func(in *ref.CPDraftInputInput) { in.Hidden.W = 2 }), ref.ErrRowCount, "hidden.b"},
		// §7.5's A10 shape: 3 global rows declared CP-local (R(0) = 2).
		{with(func(in *ref.CPDraftInputInput) { in.HiddenContract = ref.DraftCPLocal }), ref.ErrRowContract, "hidden"},
		{with(func(in *ref.CPDraftInputInput) { in.Layout = nil }), ref.ErrRowContract, "draft_hidden"},
		{with(func(in *ref.CPDraftInputInput) { in.DraftHidden.W = 0 }), ref.ErrRowCount, "draft_hidden.w"},
		{with(func(in *ref.CPDraftInputInput) { in.DraftHidden.B = []byte{1, 2, 3} }), ref.ErrRowContract, "draft_hidden"},
	}
	for _, c := range cases {
		_, err := ref.CPDraftInput(ref.DefaultLimits(), c.in)
		ie, isInput := ref.AsInputError(err)
		if !isInput || !errors.Is(err, c.want) || ie.Field != c.field || ie.Bound == "" {
			t.Errorf("%+v: got %v, want %s on field %s with a bound", c.in, err, c.want.Code(), c.field)
		}
	}
}
