package ref_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/ref"
)

func ip(x int) *int { return &x }

// TestIndexPlanWorkedExamples pins docs/spec/cp-layout.md §9.3.
func TestIndexPlanWorkedExamples(t *testing.T) {
	cases := []struct {
		in      ref.NSAIndexPlanInput
		pattern string
		active  int
	}{
		{ref.NSAIndexPlanInput{N: 10, Freq: ip(2)}, "FFSFSFSFSF", 6},
		{ref.NSAIndexPlanInput{N: 10, Freq: ip(4), Offset: 3}, "FFFSSSFSSS", 4},
		{ref.NSAIndexPlanInput{N: 10, Freq: ip(3), Offset: 1}, "FSSFSSFSSF", 4},
		{ref.NSAIndexPlanInput{N: 78, Freq: ip(4), Offset: 3}, "FFF" + strings.Repeat("SSSF", 18) + "SSS", 21},
		{ref.NSAIndexPlanInput{N: 78, Freq: ip(4)}, "FF" + strings.Repeat("SSSF", 19), 21},
		{ref.NSAIndexPlanInput{N: 5}, "FFFFF", 5},
		// [deviation] upstream would set next_skip[1] = (1 mod 2 != 0) for a layer 2 that does not exist.
		{ref.NSAIndexPlanInput{N: 2, Freq: ip(2)}, "FF", 2},
	}
	for _, c := range cases {
		out, err := ref.NSAIndexPlan(ref.DefaultLimits(), c.in)
		if err != nil {
			t.Fatalf("%+v: %v", c.in, err)
		}
		if out.Pattern != c.pattern || len(out.Active) != c.active || out.NextSkip[c.in.N-1] {
			t.Errorf("%+v: pattern %s, %d active, last next_skip %v; want %s, %d, false", c.in, out.Pattern, len(out.Active), out.NextSkip[c.in.N-1], c.pattern, c.active)
		}
	}
	out, _ := ref.NSAIndexPlan(ref.DefaultLimits(), ref.NSAIndexPlanInput{N: 78, Freq: ip(4), Offset: 3})
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
	out, err := ref.NSAIndexPlan(ref.DefaultLimits(), ref.NSAIndexPlanInput{N: 4, Pattern: "FSSF", Queries: []ref.NSAIndexQuery{
		{Kind: ref.NSAQueryPrefetchAfter, Layer: 0},
		{Kind: ref.NSAQueryPrefetchAfter, Layer: 2},
		{Kind: ref.NSAQueryPrefetchAfter, Layer: 3},
		{Kind: ref.NSAQuerySharedInput, Layer: 1},
		{Kind: ref.NSAQuerySharedInput, Layer: 1, PrevPresent: true},
		{Kind: ref.NSAQuerySharedInput, Layer: 3},
		{Kind: ref.NSAQuerySlotOf, Layer: 1},
		{Kind: ref.NSAQuerySlotOf, Layer: 3},
	}})
	if err != nil {
		t.Fatal(err)
	}
	three, one := 3, 1
	errOf := func(s *ref.Sentinel, bound string, layer int) *ref.ErrorObject {
		e := ref.ErrorObjectOf(ref.Reject(s, "layer", layer, bound))
		return &e
	}
	want := []ref.NSAIndexAnswer{
		{},
		{Slot: &one, Prefetch: &three},
		{},
		{Err: errOf(ref.ErrSharedLayerMissingPrevTopK, "previous top-k present for an S layer", 1)},
		{},
		{},
		{Err: errOf(ref.ErrInactiveIndexLayer, "an F layer (S layers have no index cache)", 1)},
		{Slot: &one},
	}
	if d := cmp.Diff(want, out.Answers); d != "" {
		t.Errorf("answers (-want +got):\n%s", d)
	}
	fsss, _ := ref.NSAIndexPlan(ref.DefaultLimits(), ref.NSAIndexPlanInput{N: 4, Pattern: "FSSS"})
	if fsss.HiCacheBytesPerToken != 2756 {
		t.Errorf("FSSS bytes/token %d, want 4·656 + 132 = 2756", fsss.HiCacheBytesPerToken)
	}
	shadow, _ := ref.NSAIndexPlan(ref.DefaultLimits(), ref.NSAIndexPlanInput{N: 4, Freq: ip(2), Pattern: "FSFS"})
	if !cmp.Equal(shadow.Warnings, []string{ref.NSAPatternShadowsFreq}) || shadow.Pattern != "FSFS" {
		t.Errorf("pattern with freq 2: warnings %q, pattern %s; want the shadow warning and the pattern", shadow.Warnings, shadow.Pattern)
	}
}

// TestIndexPlanRejectsBadInputNamingFieldAndBound pins §9.2's validation
// and §9.5's minimal inputs (Appendix A13).
func TestIndexPlanRejectsBadInputNamingFieldAndBound(t *testing.T) {
	cases := []struct {
		in    ref.NSAIndexPlanInput
		want  *ref.Sentinel
		field string
		value any
	}{
		{ref.NSAIndexPlanInput{N: 0}, ref.ErrConfig, "n", 0},
		{ref.NSAIndexPlanInput{N: 1 << 40}, ref.ErrTooLarge, "n", int64(1 << 40)},
		{ref.NSAIndexPlanInput{N: 4, Freq: ip(0)}, ref.ErrFreq, "freq", 0},
		{ref.NSAIndexPlanInput{N: 4, Offset: -1}, ref.ErrOffset, "offset", -1},
		{ref.NSAIndexPlanInput{N: 4, PPSize: -1}, ref.ErrConfig, "pp_size", -1},
		{ref.NSAIndexPlanInput{N: 4, Pattern: "FCSS"}, ref.ErrPatternCharset, "pattern[1]", "C"},
		{ref.NSAIndexPlanInput{N: 4, Pattern: "FSSf"}, ref.ErrPatternCharset, "pattern[3]", "f"},
		{ref.NSAIndexPlanInput{N: 4, Pattern: "Fé"}, ref.ErrPatternCharset, "pattern[1]", "é"},
		{ref.NSAIndexPlanInput{N: 4, Pattern: "SFFF"}, ref.ErrPatternFirstLayer, "pattern[0]", "S"},
		{ref.NSAIndexPlanInput{N: 4, Pattern: "FSS"}, ref.ErrPatternLength, "pattern", 3},
		{ref.NSAIndexPlanInput{N: 4, Pattern: "FSSFS"}, ref.ErrPatternLength, "pattern", 5},
		{ref.NSAIndexPlanInput{N: 4, Pattern: "FSFF", PPSize: 2, TBO: true}, ref.ErrPPIndexShare, "pp_size", 2},
		{ref.NSAIndexPlanInput{N: 4, Freq: ip(2), TBO: true}, ref.ErrTBOIndexShare, "tbo", true},
		{ref.NSAIndexPlanInput{N: 4, Queries: []ref.NSAIndexQuery{{Kind: "slot", Layer: 0}}}, ref.ErrBadEnum, "queries[0].kind", "slot"},
		{ref.NSAIndexPlanInput{N: 4, Queries: []ref.NSAIndexQuery{{Kind: ref.NSAQuerySlotOf, Layer: 4}}}, ref.ErrLayerOutOfOrder, "queries[0].layer", 4},
	}
	for _, c := range cases {
		_, err := ref.NSAIndexPlan(ref.DefaultLimits(), c.in)
		ie, ok := ref.AsInputError(err)
		if !ok || !errors.Is(err, c.want) || ie.Field != c.field || ie.Value != c.value || ie.Bound == "" {
			t.Errorf("%+v: got %v, want %s on field %s = %v with a bound", c.in, err, c.want.Code(), c.field, c.value)
		}
	}
	// Pattern, PP and TBO are fine while no layer shares.
	if _, err := ref.NSAIndexPlan(ref.DefaultLimits(), ref.NSAIndexPlanInput{N: 3, Pattern: "FFF", PPSize: 4, TBO: true}); err != nil {
		t.Errorf("all-F pattern with PP and TBO: %v", err)
	}
}
