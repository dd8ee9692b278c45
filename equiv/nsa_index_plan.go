package equiv

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// NSAIndexPlan is the differential spec of nsa.index_plan (docs/spec/cp-layout.md §9).
func NSAIndexPlan() *Spec[spec.NSAIndexPlanInput, spec.NSAIndexPlanOutput] {
	return &Spec[spec.NSAIndexPlanInput, spec.NSAIndexPlanOutput]{
		Op:          catalog.NSAIndexPlan(),
		Valid:       rapid.Custom(indexPlanValid),
		Invalid:     rapid.Custom(indexPlanInvalid),
		Boundary:    indexPlanBoundary(),
		Regressions: indexPlanRegressions(),
		Rejects: map[string]*spec.Sentinel{
			"pattern-length-unchecked":   spec.ErrPatternLength,
			"pattern-length-short":       spec.ErrPatternLength,
			"pattern-charset-c-for-full": spec.ErrPatternCharset,
			"pattern-starts-shared":      spec.ErrPatternFirstLayer,
			"pp-with-shared-layer":       spec.ErrPPIndexShare,
			"tbo-with-shared-layer":      spec.ErrTBOIndexShare,
		},
		Props: []Prop[spec.NSAIndexPlanInput, spec.NSAIndexPlanOutput]{
			{"P9.1-layer0-full", planLayer0Full},
			{"P9.2-next-skip", planNextSkip},
			{"P9.3-slot-bijection", planSlots},
			{"P9.4-freq-offset-equals-pattern", planFromPattern},
			{"P9.5-prefetch-gated", planAnswers},
			{"P9.6-hicache-bytes", planBytes},
			{"warning-iff-shadowed", planWarnings},
		},
	}
}

func indexPlanValid(t *rapid.T) spec.NSAIndexPlanInput {
	n := rapid.OneOf(rapid.IntRange(1, 12), rapid.IntRange(1, 100), rapid.Just(78)).Draw(t, "n")
	in := spec.NSAIndexPlanInput{N: n}
	if rapid.IntRange(0, 3).Draw(t, "has_freq") > 0 {
		f := rapid.IntRange(1, 8).Draw(t, "freq")
		in.Freq = &f
	}
	if rapid.Bool().Draw(t, "has_offset") {
		in.Offset = rapid.IntRange(1, n+2).Draw(t, "offset")
	}
	if rapid.IntRange(0, 2).Draw(t, "has_pattern") == 0 {
		in.Pattern = drawIndexPattern(t, n)
	}
	in.PPSize = rapid.SampledFrom([]int{0, 1, 1, 2, 4}).Draw(t, "pp_size")
	in.TBO = rapid.Bool().Draw(t, "tbo")
	if _, _, err := ref.ResolveNSAIndexPlan(spec.DefaultLimits(), in); errors.Is(err, spec.ErrPPIndexShare) || errors.Is(err, spec.ErrTBOIndexShare) {
		in.PPSize, in.TBO = rapid.IntRange(0, 1).Draw(t, "pp_size_shared"), false
	}
	nq := rapid.IntRange(0, 10).Draw(t, "n_queries")
	for range nq {
		in.Queries = append(in.Queries, spec.NSAIndexQuery{
			Kind:        rapid.SampledFrom([]string{spec.NSAQuerySharedInput, spec.NSAQuerySlotOf, spec.NSAQueryPrefetchAfter}).Draw(t, "kind"),
			Layer:       rapid.IntRange(0, n-1).Draw(t, "layer"),
			PrevPresent: rapid.Bool().Draw(t, "prev_present"),
		})
	}
	return in
}

// drawIndexPattern draws a valid pattern of n layers: 'F' first, then F/S runs
// (mostly S, as real index sharing is).
func drawIndexPattern(t *rapid.T, n int) string {
	b := []byte{'F'}
	for len(b) < n {
		b = append(b, rapid.SampledFrom([]byte("FSSS")).Draw(t, "layer_kind"))
	}
	return string(b)
}

func indexPlanInvalid(t *rapid.T) Bad[spec.NSAIndexPlanInput] {
	in := indexPlanValid(t)
	type bad = Bad[spec.NSAIndexPlanInput]
	withPattern := func() {
		if in.Pattern == "" {
			in.Pattern = drawIndexPattern(t, in.N)
		}
	}
	shared := func() {
		in.N = max(in.N, 2)
		in.Pattern = "FS" + strings.Repeat("F", in.N-2)
		in.Queries = nil
	}
	switch rapid.IntRange(0, 11).Draw(t, "violation") {
	case 0:
		in.N = rapid.IntRange(-1<<20, 0).Draw(t, "bad_n")
		return bad{in, spec.ErrConfig}
	case 1:
		f := rapid.IntRange(-8, 0).Draw(t, "bad_freq")
		in.Freq = &f
		return bad{in, spec.ErrFreq}
	case 2:
		in.Offset = rapid.IntRange(-1<<20, -1).Draw(t, "bad_offset")
		return bad{in, spec.ErrOffset}
	case 3:
		in.PPSize = rapid.IntRange(-8, -1).Draw(t, "bad_pp_size")
		return bad{in, spec.ErrConfig}
	case 4:
		withPattern()
		at := rapid.IntRange(0, len(in.Pattern)-1).Draw(t, "bad_char_at")
		c := rapid.SampledFrom([]string{"f", "s", "C", "x", "0", " ", "-", "é"}).Draw(t, "bad_char")
		in.Pattern = in.Pattern[:at] + c + in.Pattern[at+1:]
		return bad{in, spec.ErrPatternCharset}
	case 5:
		withPattern()
		in.Pattern = "S" + in.Pattern[1:]
		return bad{in, spec.ErrPatternFirstLayer}
	case 6:
		withPattern()
		if len(in.Pattern) > 1 && rapid.Bool().Draw(t, "short") {
			in.Pattern = in.Pattern[:rapid.IntRange(1, len(in.Pattern)-1).Draw(t, "short_len")]
		} else {
			in.Pattern += drawIndexPattern(t, rapid.IntRange(1, 4).Draw(t, "extra"))
		}
		return bad{in, spec.ErrPatternLength}
	case 7:
		shared()
		in.PPSize = rapid.IntRange(2, 8).Draw(t, "pp_shared")
		return bad{in, spec.ErrPPIndexShare}
	case 8:
		shared()
		in.PPSize, in.TBO = rapid.IntRange(0, 1).Draw(t, "pp_tbo"), true
		return bad{in, spec.ErrTBOIndexShare}
	case 9:
		in.Queries = append(in.Queries, spec.NSAIndexQuery{Kind: rapid.SampledFrom([]string{"", "slot", "SLOT_OF", "prefetch"}).Draw(t, "bad_kind")})
		return bad{in, spec.ErrBadEnum}
	case 10:
		layer := rapid.OneOf(rapid.IntRange(-5, -1), rapid.IntRange(in.N, in.N+5)).Draw(t, "bad_layer")
		in.Queries = append(in.Queries, spec.NSAIndexQuery{Kind: spec.NSAQuerySlotOf, Layer: layer})
		return bad{in, spec.ErrLayerOutOfOrder}
	default:
		in.N = rapid.IntRange(int(spec.DefaultMaxOutputBytes/18)+1, 1<<40).Draw(t, "huge_n")
		return bad{in, spec.ErrTooLarge}
	}
}

func intPtr(f int) *int { return &f }

// everyLayerQueries asks every runtime rule of every layer, with and
// without the previous top-k.
func everyLayerQueries(n int) []spec.NSAIndexQuery {
	qs := []spec.NSAIndexQuery{}
	for l := range n {
		qs = append(qs,
			spec.NSAIndexQuery{Kind: spec.NSAQuerySharedInput, Layer: l},
			spec.NSAIndexQuery{Kind: spec.NSAQuerySharedInput, Layer: l, PrevPresent: true},
			spec.NSAIndexQuery{Kind: spec.NSAQuerySlotOf, Layer: l},
			spec.NSAIndexQuery{Kind: spec.NSAQueryPrefetchAfter, Layer: l})
	}
	return qs
}

// indexPlanBoundary: §9.3's worked examples, the smallest models (N = 1,
// 2), offsets at 1 and past N, the next-skip deviation on the last layer,
// a pattern shadowing freq and offset, and the rejected edges.
func indexPlanBoundary() []Case[spec.NSAIndexPlanInput] {
	type c = Case[spec.NSAIndexPlanInput]
	glm := "FFF" + strings.Repeat("SSSF", 18) + "SSS"
	return []c{
		{"9.3-n10-freq2", spec.NSAIndexPlanInput{N: 10, Freq: intPtr(2), Queries: everyLayerQueries(10)}},
		{"9.3-n10-freq4-offset3", spec.NSAIndexPlanInput{N: 10, Freq: intPtr(4), Offset: 3, Queries: everyLayerQueries(10)}},
		{"9.3-n10-freq3-offset1", spec.NSAIndexPlanInput{N: 10, Freq: intPtr(3), Offset: 1, Queries: everyLayerQueries(10)}},
		{"9.3-n78-freq4-offset3", spec.NSAIndexPlanInput{N: 78, Freq: intPtr(4), Offset: 3}},
		{"9.3-n78-freq4", spec.NSAIndexPlanInput{N: 78, Freq: intPtr(4)}},
		{"n78-glm-pattern", spec.NSAIndexPlanInput{N: 78, Pattern: glm, Queries: everyLayerQueries(78)}},
		{"n1", spec.NSAIndexPlanInput{N: 1, Queries: everyLayerQueries(1)}},
		{"n1-freq4", spec.NSAIndexPlanInput{N: 1, Freq: intPtr(4), Queries: everyLayerQueries(1)}},
		{"n2-freq2-last-layer", spec.NSAIndexPlanInput{N: 2, Freq: intPtr(2), Queries: everyLayerQueries(2)}},
		{"n3-freq2-last-layer", spec.NSAIndexPlanInput{N: 3, Freq: intPtr(2), Queries: everyLayerQueries(3)}},
		{"n5-freq2-offset-past-n", spec.NSAIndexPlanInput{N: 5, Freq: intPtr(2), Offset: 9, Queries: everyLayerQueries(5)}},
		{"freq1-offset-set", spec.NSAIndexPlanInput{N: 4, Freq: intPtr(1), Offset: 3}},
		{"pattern-shadows-freq", spec.NSAIndexPlanInput{N: 4, Freq: intPtr(4), Pattern: "FSFS"}},
		{"pattern-shadows-offset", spec.NSAIndexPlanInput{N: 4, Offset: 2, Pattern: "FFSS"}},
		{"pattern-single-f", spec.NSAIndexPlanInput{N: 1, Pattern: "F", PPSize: 4, TBO: true}},
		{"all-full-pattern-with-pp-tbo", spec.NSAIndexPlanInput{N: 3, Pattern: "FFF", PPSize: 2, TBO: true}},
		{"pattern-length-short", spec.NSAIndexPlanInput{N: 4, Pattern: "FSS"}},
		{"pattern-starts-shared", spec.NSAIndexPlanInput{N: 2, Pattern: "SF"}},
		{"pp-with-shared-layer", spec.NSAIndexPlanInput{N: 10, Freq: intPtr(2), PPSize: 2}},
		{"tbo-with-shared-layer", spec.NSAIndexPlanInput{N: 2, Pattern: "FS", TBO: true}},
	}
}

// indexPlanRegressions: §9.5's minimal inputs (Appendix A13, A14).
func indexPlanRegressions() []Case[spec.NSAIndexPlanInput] {
	type c = Case[spec.NSAIndexPlanInput]
	return []c{
		// Fixed ErrPatternLength(4, 5); the bug ignored the tail.
		{"pattern-length-unchecked", spec.NSAIndexPlanInput{N: 4, Pattern: "FSSFS"}},
		// After layer 0 of "FS": fixed no prefetch; the bug asked SlotOf(1).
		{"prefetch-ungated", spec.NSAIndexPlanInput{N: 2, Pattern: "FS", Queries: []spec.NSAIndexQuery{{Kind: spec.NSAQueryPrefetchAfter, Layer: 0}}}},
		// Layer 1 of "FS" without top-k: fixed ErrSharedLayerMissingPrevTopK; the bug ran on.
		{"shared-layer-missing-prev-topk", spec.NSAIndexPlanInput{N: 2, Pattern: "FS", Queries: []spec.NSAIndexQuery{{Kind: spec.NSAQuerySharedInput, Layer: 1}}}},
		// The old fork's 'C' for full layers: fixed ErrPatternCharset(1).
		{"pattern-charset-c-for-full", spec.NSAIndexPlanInput{N: 4, Pattern: "FCSS"}},
		// "FSSS": fixed 4·656 + 1·132 = 2756 B/token; the bug 3152.
		{"hicache-index-bytes-every-layer", spec.NSAIndexPlanInput{N: 4, Pattern: "FSSS"}},
	}
}

// planLayer0Full is P9.1.
func planLayer0Full(_ spec.Limits, _ spec.NSAIndexPlanInput, out spec.NSAIndexPlanOutput) error {
	if out.Skip[0] {
		return fmt.Errorf("layer 0 shares top-k: %s", out.Pattern)
	}
	return nil
}

// planNextSkip is P9.2 and the [deviation]: NextSkip[N−1] is false.
func planNextSkip(_ spec.Limits, in spec.NSAIndexPlanInput, out spec.NSAIndexPlanOutput) error {
	if len(out.Skip) != in.N || len(out.NextSkip) != in.N {
		return fmt.Errorf("len(skip)=%d, len(next_skip)=%d, want n=%d", len(out.Skip), len(out.NextSkip), in.N)
	}
	for l := range in.N - 1 {
		if out.NextSkip[l] != out.Skip[l+1] {
			return fmt.Errorf("next_skip[%d]=%v != skip[%d]=%v", l, out.NextSkip[l], l+1, out.Skip[l+1])
		}
	}
	if out.NextSkip[in.N-1] {
		return fmt.Errorf("next_skip of the last layer %d is true: no layer %d exists", in.N-1, in.N)
	}
	return nil
}

// planSlots is P9.3: |Active| + #S == N, Active ascending and exactly the F
// layers, Slot a monotone bijection Active → [0, |Active|), −1 elsewhere,
// and the rendered pattern and log line agree with the plan.
func planSlots(_ spec.Limits, in spec.NSAIndexPlanInput, out spec.NSAIndexPlanOutput) error {
	shared := 0
	for _, s := range out.Skip {
		if s {
			shared++
		}
	}
	if len(out.Active)+shared != in.N {
		return fmt.Errorf("|active|=%d + #S=%d != n=%d", len(out.Active), shared, in.N)
	}
	next := 0
	for l, s := range out.Skip {
		switch {
		case s && out.Slot[l] != -1:
			return fmt.Errorf("shared layer %d has slot %d, want -1", l, out.Slot[l])
		case !s && (out.Slot[l] != next || out.Active[next] != l):
			return fmt.Errorf("full layer %d: slot %d, want %d (active %v)", l, out.Slot[l], next, out.Active)
		case !s:
			next++
		}
	}
	if want := ref.RenderNSAIndexPattern(out.Skip); out.Pattern != want {
		return fmt.Errorf("pattern %q, want %q", out.Pattern, want)
	}
	if want := fmt.Sprintf("index layers active=%d/%d %v", len(out.Active), in.N, out.Active); out.Log != want {
		return fmt.Errorf("log %q, want %q", out.Log, want)
	}
	return nil
}

// planFromPattern is P9.4: the plan equals the plan of its rendered pattern
// (with freq and offset unset), runtime answers included.
func planFromPattern(lim spec.Limits, in spec.NSAIndexPlanInput, out spec.NSAIndexPlanOutput) error {
	x := in
	x.Pattern, x.Freq, x.Offset = out.Pattern, nil, 0
	want, err := ref.NSAIndexPlan(lim, x)
	if err != nil {
		return fmt.Errorf("ref on the rendered pattern %q: %v", out.Pattern, err)
	}
	want.Warnings = out.Warnings // the warning depends on freq/offset, not on the plan
	a, _ := catalog.Marshal(want)
	b, _ := catalog.Marshal(out)
	if string(a) != string(b) {
		return fmt.Errorf("plan from freq/offset %s != plan from pattern %q %s", b, out.Pattern, a)
	}
	return nil
}

// planAnswers is P9.5 and the two other runtime rules: the prefetch gate
// names layer+1 (with its slot) iff it exists and is F, and never refuses
// (it never asks SlotOf for an S layer); slot_of refuses exactly S layers;
// shared_input refuses exactly S layers without a previous top-k.
func planAnswers(_ spec.Limits, in spec.NSAIndexPlanInput, out spec.NSAIndexPlanOutput) error {
	if len(out.Answers) != len(in.Queries) {
		return fmt.Errorf("%d answers for %d queries", len(out.Answers), len(in.Queries))
	}
	for i, q := range in.Queries {
		a, l := out.Answers[i], q.Layer
		refused := func(code string) bool { return a.Err != nil && a.Err.Code == code }
		switch q.Kind {
		case spec.NSAQueryPrefetchAfter:
			fetch := l+1 < in.N && !out.Skip[l+1]
			if a.Err != nil {
				return fmt.Errorf("query %d: prefetch after %d refused: %s", i, l, a.Err.Message)
			}
			if fetch != (a.Prefetch != nil) || (fetch && (*a.Prefetch != l+1 || a.Slot == nil || *a.Slot != out.Slot[l+1])) {
				return fmt.Errorf("query %d: prefetch after %d of %s answered %+v", i, l, out.Pattern, a)
			}
		case spec.NSAQuerySlotOf:
			if out.Skip[l] != refused(spec.ErrInactiveIndexLayer.Code()) || (!out.Skip[l] && (a.Slot == nil || *a.Slot != out.Slot[l])) {
				return fmt.Errorf("query %d: slot_of(%d) of %s answered %+v", i, l, out.Pattern, a)
			}
		default:
			if want := out.Skip[l] && !q.PrevPresent; want != refused(spec.ErrSharedLayerMissingPrevTopK.Code()) || (!want && a != (spec.NSAIndexAnswer{})) {
				return fmt.Errorf("query %d: shared_input(%d, prev=%v) of %s answered %+v", i, l, q.PrevPresent, out.Pattern, a)
			}
		}
	}
	return nil
}

// planBytes is P9.6: N·656 + |Active|·132 bytes per token.
func planBytes(_ spec.Limits, in spec.NSAIndexPlanInput, out spec.NSAIndexPlanOutput) error {
	if want := int64(in.N)*656 + int64(len(out.Active))*132; out.HiCacheBytesPerToken != want {
		return fmt.Errorf("hicache bytes/token %d, want %d·656 + %d·132 = %d", out.HiCacheBytesPerToken, in.N, len(out.Active), want)
	}
	return nil
}

// planWarnings: the shadowing warning appears exactly when a pattern is set
// with freq > 1 or an offset.
func planWarnings(_ spec.Limits, in spec.NSAIndexPlanInput, out spec.NSAIndexPlanOutput) error {
	want := []string{}
	if in.Pattern != "" && (in.FreqOf() > 1 || in.Offset > 0) {
		want = []string{spec.NSAPatternShadowsFreq}
	}
	if !slices.Equal(want, out.Warnings) {
		return fmt.Errorf("warnings %q, want %q", out.Warnings, want)
	}
	return nil
}
