package ref_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

func ip(x int) *int { return &x }

// TestIndexPlanWorkedExamples pins docs/spec/cp-layout.md §9.3.
func TestIndexPlanWorkedExamples(t *testing.T) {
	cases := []struct {
		in      spec.NSAIndexPlanInput
		pattern string
		active  int
	}{
		{spec.NSAIndexPlanInput{N: 10, Freq: ip(2)}, "FFSFSFSFSF", 6},
		{spec.NSAIndexPlanInput{N: 10, Freq: ip(4), Offset: 3}, "FFFSSSFSSS", 4},
		{spec.NSAIndexPlanInput{N: 10, Freq: ip(3), Offset: 1}, "FSSFSSFSSF", 4},
		{spec.NSAIndexPlanInput{N: 78, Freq: ip(4), Offset: 3}, "FFF" + strings.Repeat("SSSF", 18) + "SSS", 21},
		{spec.NSAIndexPlanInput{N: 78, Freq: ip(4)}, "FF" + strings.Repeat("SSSF", 19), 21},
		{spec.NSAIndexPlanInput{N: 5}, "FFFFF", 5},
		// [deviation] upstream would set next_skip[1] = (1 mod 2 != 0) for a layer 2 that does not exist.
		{spec.NSAIndexPlanInput{N: 2, Freq: ip(2)}, "FF", 2},
	}
	for _, c := range cases {
		out, err := ref.NSAIndexPlan(spec.DefaultLimits(), c.in)
		if err != nil {
			t.Fatalf("%+v: %v", c.in, err)
		}
		if out.Pattern != c.pattern || len(out.Active) != c.active || out.NextSkip[c.in.N-1] {
			t.Errorf("%+v: pattern %s, %d active, last next_skip %v; want %s, %d, false", c.in, out.Pattern, len(out.Active), out.NextSkip[c.in.N-1], c.pattern, c.active)
		}
	}
	out, _ := ref.NSAIndexPlan(spec.DefaultLimits(), spec.NSAIndexPlanInput{N: 78, Freq: ip(4), Offset: 3})
	if want := []int{0, 1, 2, 6, 10}; !slicesHavePrefix(out.Active, want) || out.Active[20] != 74 {
		t.Errorf("GLM-5 active %v, want [0 1 2 6 10 … 74]", out.Active)
	}
	if !strings.HasPrefix(out.Log, "index layers active=21/78 [0 1 2 6 10 ") {
		t.Errorf("log %q", out.Log)
	}
}

func slicesHavePrefix(xs, prefix []int) bool {
	return len(xs) >= len(prefix) && cmp.Equal(xs[:len(prefix)], prefix)
}

// TestIndexPlanRuntimeRules pins §9.2's runtime rules and §9.5's minimal
// inputs: the gate does not prefetch after layer 0 of "FS", layer 1 without
// top-k is refused, SlotOf(1) is ErrInactiveIndexLayer, and "FSSS" costs
// 2756 B/token.
func TestIndexPlanRuntimeRules(t *testing.T) {
	out, err := ref.NSAIndexPlan(spec.DefaultLimits(), spec.NSAIndexPlanInput{N: 4, Pattern: "FSSF", Queries: []spec.NSAIndexQuery{
		{Kind: spec.NSAQueryPrefetchAfter, Layer: 0},
		{Kind: spec.NSAQueryPrefetchAfter, Layer: 2},
		{Kind: spec.NSAQueryPrefetchAfter, Layer: 3},
		{Kind: spec.NSAQuerySharedInput, Layer: 1},
		{Kind: spec.NSAQuerySharedInput, Layer: 1, PrevPresent: true},
		{Kind: spec.NSAQuerySharedInput, Layer: 3},
		{Kind: spec.NSAQuerySlotOf, Layer: 1},
		{Kind: spec.NSAQuerySlotOf, Layer: 3},
	}})
	if err != nil {
		t.Fatal(err)
	}
	three, one := 3, 1
	errOf := func(s *spec.Sentinel, bound string, layer int) *spec.ErrorObject {
		e := spec.ErrorObjectOf(spec.Reject(s, "layer", layer, bound))
		return &e
	}
	want := []spec.NSAIndexAnswer{
		{},
		{Slot: &one, Prefetch: &three},
		{},
		{Err: errOf(spec.ErrSharedLayerMissingPrevTopK, "previous top-k present for an S layer", 1)},
		{},
		{},
		{Err: errOf(spec.ErrInactiveIndexLayer, "an F layer (S layers have no index cache)", 1)},
		{Slot: &one},
	}
	if d := cmp.Diff(want, out.Answers); d != "" {
		t.Errorf("answers (-want +got):\n%s", d)
	}
	fsss, _ := ref.NSAIndexPlan(spec.DefaultLimits(), spec.NSAIndexPlanInput{N: 4, Pattern: "FSSS"})
	if fsss.HiCacheBytesPerToken != 2756 {
		t.Errorf("FSSS bytes/token %d, want 4·656 + 132 = 2756", fsss.HiCacheBytesPerToken)
	}
	shadow, _ := ref.NSAIndexPlan(spec.DefaultLimits(), spec.NSAIndexPlanInput{N: 4, Freq: ip(2), Pattern: "FSFS"})
	if !cmp.Equal(shadow.Warnings, []string{spec.NSAPatternShadowsFreq}) || shadow.Pattern != "FSFS" {
		t.Errorf("pattern with freq 2: warnings %q, pattern %s; want the shadow warning and the pattern", shadow.Warnings, shadow.Pattern)
	}
}

// TestIndexPlanRejectsBadInputNamingFieldAndBound pins §9.2's validation
// and §9.5's minimal inputs (Appendix A13).
func TestIndexPlanRejectsBadInputNamingFieldAndBound(t *testing.T) {
	cases := []struct {
		in    spec.NSAIndexPlanInput
		want  *spec.Sentinel
		field string
		value any
	}{
		{spec.NSAIndexPlanInput{N: 0}, spec.ErrConfig, "n", 0},
		{spec.NSAIndexPlanInput{N: 1 << 40}, spec.ErrTooLarge, "n", int64(1 << 40)},
		{spec.NSAIndexPlanInput{N: 4, Freq: ip(0)}, spec.ErrFreq, "freq", 0},
		{spec.NSAIndexPlanInput{N: 4, Offset: -1}, spec.ErrOffset, "offset", -1},
		{spec.NSAIndexPlanInput{N: 4, PPSize: -1}, spec.ErrConfig, "pp_size", -1},
		{spec.NSAIndexPlanInput{N: 4, Pattern: "FCSS"}, spec.ErrPatternCharset, "pattern[1]", "C"},
		{spec.NSAIndexPlanInput{N: 4, Pattern: "FSSf"}, spec.ErrPatternCharset, "pattern[3]", "f"},
		{spec.NSAIndexPlanInput{N: 4, Pattern: "Fé"}, spec.ErrPatternCharset, "pattern[1]", "é"},
		{spec.NSAIndexPlanInput{N: 4, Pattern: "SFFF"}, spec.ErrPatternFirstLayer, "pattern[0]", "S"},
		{spec.NSAIndexPlanInput{N: 4, Pattern: "FSS"}, spec.ErrPatternLength, "pattern", 3},
		{spec.NSAIndexPlanInput{N: 4, Pattern: "FSSFS"}, spec.ErrPatternLength, "pattern", 5},
		{spec.NSAIndexPlanInput{N: 4, Pattern: "FSFF", PPSize: 2, TBO: true}, spec.ErrPPIndexShare, "pp_size", 2},
		{spec.NSAIndexPlanInput{N: 4, Freq: ip(2), TBO: true}, spec.ErrTBOIndexShare, "tbo", true},
		{spec.NSAIndexPlanInput{N: 4, Queries: []spec.NSAIndexQuery{{Kind: "slot", Layer: 0}}}, spec.ErrBadEnum, "queries[0].kind", "slot"},
		{spec.NSAIndexPlanInput{N: 4, Queries: []spec.NSAIndexQuery{{Kind: spec.NSAQuerySlotOf, Layer: 4}}}, spec.ErrLayerOutOfOrder, "queries[0].layer", 4},
	}
	for _, c := range cases {
		_, err := ref.NSAIndexPlan(spec.DefaultLimits(), c.in)
		ie, ok := spec.AsInputError(err)
		if !ok || !errors.Is(err, c.want) || ie.Field != c.field || ie.Value != c.value || ie.Bound == "" {
			t.Errorf("%+v: got %v, want %s on field %s = %v with a bound", c.in, err, c.want.Code(), c.field, c.value)
		}
	}
	// Pattern, PP and TBO are fine while no layer shares.
	if _, err := ref.NSAIndexPlan(spec.DefaultLimits(), spec.NSAIndexPlanInput{N: 3, Pattern: "FFF", PPSize: 4, TBO: true}); err != nil {
		t.Errorf("all-F pattern with PP and TBO: %v", err)
	}
}
