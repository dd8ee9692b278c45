package ref_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestCPCanSplitDecisionTable pins docs/spec/cp-layout.md §5.3 row by row (cp=2,
// shared-KV on unless stated) and §5.5's regression.
func TestCPCanSplitDecisionTable(t *testing.T) {
	fwd := func(mode spec.ForwardMode, shared bool, lens, prefix []int) spec.CPCanSplitInput {
		return spec.CPCanSplitInput{Mode: mode, CPEnabled: true, CPSize: 2, UsesCPSharedKV: shared,
			BatchSize: len(lens), ExtendLens: lens, PrefixLens: prefix, PageSize: 64}
	}
	padded := func(lens ...int) *spec.Layout {
		lay, err := spec.BuildLayoutPadded(2, lens, 64)
		if err != nil {
			t.Fatal(err)
		}
		return &lay
	}
	unpadded, err := spec.BuildLayoutUnpadded(2, []int{8, 9})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		in   spec.CPCanSplitInput
		want spec.CPCanSplitOutput
		err  *spec.Sentinel
	}{
		{"EXTEND [0,64] ps64 L[3,9]", fwd(spec.ModeExtend, true, []int{3, 9}, []int{0, 64}),
			spec.CPCanSplitOutput{Split: true, Reason: spec.ReasonPadded, Layout: padded(3, 9)}, nil},
		{"EXTEND prefix nil", fwd(spec.ModeExtend, true, []int{3, 9}, nil), spec.CPCanSplitOutput{}, spec.ErrPagePlan},
		{"EXTEND prefix [10]", fwd(spec.ModeExtend, true, []int{3}, []int{10}), spec.CPCanSplitOutput{}, spec.ErrPagePlan},
		{"TARGET_VERIFY prefix nil (§5.5)", fwd(spec.ModeTargetVerify, true, []int{2, 2}, nil), ref.NoSplit(spec.ReasonNotCPExtend), nil},
		{"DECODE prefix nil", fwd(spec.ModeDecode, true, []int{1}, nil), ref.NoSplit(spec.ReasonNotCPExtend), nil},
		{"DRAFT_EXTEND [0] L[5]", fwd(spec.ModeDraftExtend, true, []int{5}, []int{0}),
			spec.CPCanSplitOutput{Split: true, Reason: spec.ReasonPadded, Layout: padded(5)}, nil},
		{"DRAFT_EXTEND shared-KV off", fwd(spec.ModeDraftExtend, false, []int{5}, []int{3}), ref.NoSplit(spec.ReasonNotCPExtend), nil},
		{"MIXED", fwd(spec.ModeMixed, true, []int{9}, nil), ref.NoSplit(spec.ReasonNotCPExtend), nil},
		{"EXTEND shared-KV off L[3]", fwd(spec.ModeExtend, false, []int{3}, nil), ref.NoSplit(spec.ReasonSubThreshold), nil},
		{"EXTEND shared-KV off L[8,9]", fwd(spec.ModeExtend, false, []int{8, 9}, nil),
			spec.CPCanSplitOutput{Split: true, Reason: ref.ReasonUnpadded, Layout: &unpadded}, nil},
	}
	for _, c := range cases {
		got, err := ref.CPCanSplit(spec.DefaultLimits(), c.in)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("%s: got %v, want %s", c.name, err, c.err.Code())
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, d)
		}
	}
}

// TestCPCanSplitRejectsBadInputNamingFieldAndBound pins the errors of §5.2
// steps 3–6 on eligible forwards, each with its field.
func TestCPCanSplitRejectsBadInputNamingFieldAndBound(t *testing.T) {
	ok := func() spec.CPCanSplitInput {
		return spec.CPCanSplitInput{Mode: spec.ModeExtend, CPEnabled: true, CPSize: 2, UsesCPSharedKV: true,
			BatchSize: 2, ExtendLens: []int{3, 9}, PrefixLens: []int{0, 64}, SeqLens: []int{3, 73}, PageSize: 64}
	}
	with := func(f func(*spec.CPCanSplitInput)) spec.CPCanSplitInput { in := ok(); f(&in); return in }
	cases := []struct {
		in    spec.CPCanSplitInput
		want  *spec.Sentinel
		field string
	}{
		{with(func(in *spec.CPCanSplitInput) { in.Mode = "PREFILL" }), spec.ErrBadEnum, "mode"},
		{with(func(in *spec.CPCanSplitInput) { in.CPSize = spec.MaxCP + 1 }), spec.ErrInvalidCPSize, "cp_size"},
		{with(func(in *spec.CPCanSplitInput) { in.ExtendLens = nil }), spec.ErrMissingExtendLens, "extend_lens"},
		{with(func(in *spec.CPCanSplitInput) { in.BatchSize = 3 }), spec.ErrMissingExtendLens, "extend_lens"},
		{with(func(in *spec.CPCanSplitInput) { in.PageSize = 0 }), spec.ErrPagePlan, "page_size"},
		{with(func(in *spec.CPCanSplitInput) { in.PrefixLens = nil }), spec.ErrPagePlan, "prefix_lens"},
		{with(func(in *spec.CPCanSplitInput) { in.SeqLens = []int{3} }), spec.ErrPagePlan, "seq_lens"},
		{with(func(in *spec.CPCanSplitInput) { in.PrefixLens[1] = 65 }), spec.ErrPagePlan, "prefix_lens[1]"},
		{with(func(in *spec.CPCanSplitInput) { in.PrefixLens[0] = -64 }), spec.ErrPagePlan, "prefix_lens[0]"},
		{with(func(in *spec.CPCanSplitInput) { in.ExtendLens[1] = 0 }), spec.ErrPagePlan, "extend_lens[1]"},
		{with(func(in *spec.CPCanSplitInput) { in.SeqLens[1] = 72 }), spec.ErrPagePlan, "seq_lens[1]"},
		{with(func(in *spec.CPCanSplitInput) { in.UsesCPSharedKV = false; in.ExtendLens[1] = -1 }), spec.ErrBadLength, "extend_lens[1]"},
		{with(func(in *spec.CPCanSplitInput) { in.Granule = -1 }), spec.ErrInvalidGranule, "granule"},
		{with(func(in *spec.CPCanSplitInput) { in.ExtendLens[0] = spec.MaxLayoutRows; in.SeqLens = nil }), spec.ErrTooLarge, "lens"},
	}
	for _, c := range cases {
		_, err := ref.CPCanSplit(spec.DefaultLimits(), c.in)
		ie, isInput := spec.AsInputError(err)
		if !isInput || !errors.Is(err, c.want) || ie.Field != c.field || ie.Bound == "" {
			t.Errorf("%+v: got %v, want %s on field %s with a bound", c.in, err, c.want.Code(), c.field)
		}
	}
}

// TestCPCanSplitGranuleDefaultsToPageSize: g == ps for shared-KV (§5.1)
// unless a granule is given (Appendix D.9 keeps g a parameter).
func TestCPCanSplitGranuleDefaultsToPageSize(t *testing.T) {
	in := spec.CPCanSplitInput{Mode: spec.ModeExtend, CPEnabled: true, CPSize: 2, UsesCPSharedKV: true,
		BatchSize: 1, ExtendLens: []int{3}, PrefixLens: []int{0}, PageSize: 4}
	for _, c := range []struct{ granule, seg int }{{0, 4}, {1, 1}, {4, 4}} {
		in.Granule = c.granule
		out, err := ref.CPCanSplit(spec.DefaultLimits(), in)
		if err != nil || !out.Split || out.Layout.S[0][0] != c.seg {
			t.Errorf("granule %d: got %+v, %v; want segments of %d rows", c.granule, out, err, c.seg)
		}
	}
}
