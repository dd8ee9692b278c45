package equiv

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
)

// CPCanSplit is the differential spec of cp.can_split (docs/spec/cp-layout.md §5).
func CPCanSplit() *Spec[ref.CPCanSplitInput, ref.CPCanSplitOutput] {
	return &Spec[ref.CPCanSplitInput, ref.CPCanSplitOutput]{
		Op:          catalog.CPCanSplit(),
		Valid:       rapid.Custom(canSplitValid),
		Invalid:     rapid.Custom(canSplitInvalid),
		Boundary:    canSplitBoundary(),
		Regressions: canSplitRegressions(),
		Rejects: map[string]*ref.Sentinel{
			"table-extend-prefix-nil":          ref.ErrPagePlan,
			"table-extend-prefix-misaligned":   ref.ErrPagePlan,
			"unpadded-compute-rows-past-int32": ref.ErrTooLarge,
		},
		Props: []Prop[ref.CPCanSplitInput, ref.CPCanSplitOutput]{
			{"non-eligible-ignores-metadata", canSplitNonEligible},
			{"page-plan-fail-fast", canSplitFailFast},
			{"split-layout-valid", canSplitLayoutValid},
		},
	}
}

var allModes = []ref.ForwardMode{ref.ModeExtend, ref.ModeMixed, ref.ModeDecode, ref.ModeTargetVerify,
	ref.ModeDraftExtend, ref.ModeDraftExtendV2, ref.ModeIdle}

// cpLen draws an extend length from the §5 boundary set for (cp, ps) or
// an ordinary prefill length.
func cpLen(t *rapid.T, cp, ps int, label string) int {
	edges := []int{1, max(ps-1, 1), ps, ps + 1, 2*cp - 1, 2 * cp, 2*cp + 1}
	return rapid.OneOf(rapid.SampledFrom(edges), rapid.IntRange(1, 300)).Draw(t, label)
}

// canSplitValid draws any accepted forward: half the time a CP extend with
// a consistent plan, otherwise any mode with arbitrary (often garbage)
// metadata, which non-eligible forwards must ignore.
func canSplitValid(t *rapid.T) ref.CPCanSplitInput {
	in := garbageForward(t)
	if rapid.Bool().Draw(t, "eligible") {
		return eligibleForward(t)
	}
	if in.CPEnabled && in.CPSize > 1 && ref.CPSplitEligible(in.Mode, in.UsesCPSharedKV) {
		// Garbage metadata on an eligible forward may be invalid: make the
		// forward non-eligible instead (CP off, or a mode it never splits).
		in.Mode = rapid.SampledFrom([]ref.ForwardMode{ref.ModeMixed, ref.ModeDecode, ref.ModeTargetVerify, ref.ModeIdle}).Draw(t, "non_eligible_mode")
	}
	return in
}

// garbageForward draws every field freely: nils, short lists, negative and
// misaligned values.
func garbageForward(t *rapid.T) ref.CPCanSplitInput {
	ints := func(label string) []int {
		if rapid.IntRange(0, 3).Draw(t, label+"_nil") == 0 {
			return nil
		}
		return rapid.SliceOfN(rapid.IntRange(-70, 200), 0, 5).Draw(t, label)
	}
	return ref.CPCanSplitInput{
		Mode:           rapid.SampledFrom(allModes).Draw(t, "mode"),
		CPEnabled:      rapid.IntRange(0, 5).Draw(t, "cp_enabled") > 0,
		CPSize:         rapid.IntRange(-1, 8).Draw(t, "cp_size"),
		UsesCPSharedKV: rapid.Bool().Draw(t, "shared_kv"),
		BatchSize:      rapid.IntRange(-1, 5).Draw(t, "batch_size"),
		ExtendLens:     ints("extend_lens"),
		PrefixLens:     ints("prefix_lens"),
		SeqLens:        ints("seq_lens"),
		PageSize:       rapid.IntRange(-1, 64).Draw(t, "page_size"),
		Granule:        rapid.IntRange(-2, 64).Draw(t, "granule"),
	}
}

// eligibleForward draws an accepted CP extend: EXTEND or (shared-KV) a
// draft extend, cp in [2, 8], a page plan that holds under shared-KV and
// non-negative lengths without it.
func eligibleForward(t *rapid.T) ref.CPCanSplitInput {
	shared := rapid.Bool().Draw(t, "shared_kv")
	modes := []ref.ForwardMode{ref.ModeExtend}
	if shared {
		modes = append(modes, ref.ModeDraftExtend, ref.ModeDraftExtendV2)
	}
	cp := rapid.IntRange(2, 8).Draw(t, "cp_size")
	ps := rapid.SampledFrom([]int{1, 2, 4, 16, 64}).Draw(t, "page_size")
	b := rapid.IntRange(0, 5).Draw(t, "batch_size")
	in := ref.CPCanSplitInput{Mode: rapid.SampledFrom(modes).Draw(t, "mode"), CPEnabled: true, CPSize: cp,
		UsesCPSharedKV: shared, BatchSize: b, ExtendLens: []int{}, PageSize: ps}
	withSeq := rapid.Bool().Draw(t, "with_seq_lens")
	if shared {
		in.PrefixLens = []int{}
		in.Granule = rapid.SampledFrom([]int{0, 0, 1, 2, ps}).Draw(t, "granule")
		if withSeq {
			in.SeqLens = []int{}
		}
	}
	for range b {
		l := cpLen(t, cp, ps, "len")
		if !shared && rapid.IntRange(0, 5).Draw(t, "zero_len") == 0 {
			l = 0
		}
		in.ExtendLens = append(in.ExtendLens, l)
		if shared {
			p := ps * rapid.IntRange(0, 4).Draw(t, "prefix_pages")
			in.PrefixLens = append(in.PrefixLens, p)
			if withSeq {
				in.SeqLens = append(in.SeqLens, p+l)
			}
		}
	}
	return in
}

// eligibleShared draws an accepted shared-KV extend of at least one request.
func eligibleShared(t *rapid.T) ref.CPCanSplitInput {
	in := eligibleForward(t)
	if in.UsesCPSharedKV && in.BatchSize > 0 {
		return in
	}
	in.Mode, in.UsesCPSharedKV, in.BatchSize = ref.ModeExtend, true, 1
	in.ExtendLens, in.PrefixLens, in.SeqLens = []int{in.PageSize + 1}, []int{0}, nil
	return in
}

func canSplitInvalid(t *rapid.T) Bad[ref.CPCanSplitInput] {
	in := eligibleShared(t)
	b := in.BatchSize
	at := rapid.IntRange(0, b-1).Draw(t, "at")
	withSeq := func() {
		if in.SeqLens == nil {
			in.SeqLens = make([]int, b)
			for i := range b {
				in.SeqLens[i] = in.PrefixLens[i] + in.ExtendLens[i]
			}
		}
	}
	in.ExtendLens, in.PrefixLens, in.SeqLens = slices.Clone(in.ExtendLens), slices.Clone(in.PrefixLens), slices.Clone(in.SeqLens)
	switch rapid.IntRange(0, 11).Draw(t, "violation") {
	case 0:
		in.Mode = ref.ForwardMode(rapid.SampledFrom([]string{"", "extend", "PREFILL", "DRAFT_EXTEND_V3"}).Draw(t, "bad_mode"))
		return Bad[ref.CPCanSplitInput]{in, ref.ErrBadEnum}
	case 1:
		in.CPSize = rapid.IntRange(ref.MaxCP+1, ref.MaxCP+100).Draw(t, "huge_cp")
		return Bad[ref.CPCanSplitInput]{in, ref.ErrInvalidCPSize}
	case 2:
		if rapid.Bool().Draw(t, "nil_lens") {
			in.ExtendLens = nil
		} else {
			in.BatchSize += rapid.SampledFrom([]int{-1, 1}).Draw(t, "count_off")
		}
		return Bad[ref.CPCanSplitInput]{in, ref.ErrMissingExtendLens}
	case 3:
		in.PageSize = rapid.IntRange(-2, 0).Draw(t, "bad_page_size")
		return Bad[ref.CPCanSplitInput]{in, ref.ErrPagePlan}
	case 4:
		if rapid.Bool().Draw(t, "nil_prefix") {
			in.PrefixLens = nil
		} else {
			in.PrefixLens = in.PrefixLens[:b-1]
		}
		return Bad[ref.CPCanSplitInput]{in, ref.ErrPagePlan}
	case 5:
		withSeq()
		in.SeqLens = append(in.SeqLens, 0)
		return Bad[ref.CPCanSplitInput]{in, ref.ErrPagePlan}
	case 6:
		if in.PageSize == 1 {
			in.PrefixLens[at] = rapid.IntRange(-5, -1).Draw(t, "negative_prefix")
		} else {
			in.PrefixLens[at] += rapid.IntRange(1, in.PageSize-1).Draw(t, "misalign")
		}
		in.SeqLens = nil
		return Bad[ref.CPCanSplitInput]{in, ref.ErrPagePlan}
	case 7:
		in.ExtendLens[at] = rapid.IntRange(-3, 0).Draw(t, "short_extend")
		in.SeqLens = nil
		return Bad[ref.CPCanSplitInput]{in, ref.ErrPagePlan}
	case 8:
		withSeq()
		in.SeqLens[at] += rapid.SampledFrom([]int{-1, 1, in.PageSize}).Draw(t, "seq_off")
		return Bad[ref.CPCanSplitInput]{in, ref.ErrPagePlan}
	case 9:
		in.UsesCPSharedKV, in.Mode, in.PrefixLens, in.SeqLens = false, ref.ModeExtend, nil, nil
		in.ExtendLens[at] = rapid.IntRange(-100, -1).Draw(t, "negative_len")
		return Bad[ref.CPCanSplitInput]{in, ref.ErrBadLength}
	case 10:
		in.Granule = rapid.IntRange(-5, -1).Draw(t, "bad_granule")
		return Bad[ref.CPCanSplitInput]{in, ref.ErrInvalidGranule}
	default:
		// 2·cp segments of at least L_i/(2·cp) rows reach 2^31 rows.
		in.ExtendLens[at] = ref.MaxLayoutRows
		in.SeqLens = nil
		return Bad[ref.CPCanSplitInput]{in, ref.ErrTooLarge}
	}
}

// canSplitBoundary: §5.3's decision table, then the length edges (1, ps−1,
// ps, ps+1, 2·cp−1, 2·cp, 2·cp+1 and a batch mixing them) with shared-KV
// on and off, for each eligible mode.
func canSplitBoundary() []Case[ref.CPCanSplitInput] {
	fwd := func(mode ref.ForwardMode, shared bool, lens, prefix []int) ref.CPCanSplitInput {
		return ref.CPCanSplitInput{Mode: mode, CPEnabled: true, CPSize: 2, UsesCPSharedKV: shared,
			BatchSize: len(lens), ExtendLens: lens, PrefixLens: prefix, PageSize: 64}
	}
	cs := []Case[ref.CPCanSplitInput]{
		{"table-extend-split-padded", fwd(ref.ModeExtend, true, []int{3, 9}, []int{0, 64})},
		{"table-extend-prefix-nil", fwd(ref.ModeExtend, true, []int{3, 9}, nil)},
		{"table-extend-prefix-misaligned", fwd(ref.ModeExtend, true, []int{3}, []int{10})},
		{"table-target-verify-prefix-nil", fwd(ref.ModeTargetVerify, true, []int{2, 2}, nil)},
		{"table-decode-prefix-nil", fwd(ref.ModeDecode, true, []int{1, 1}, nil)},
		{"table-draft-extend-shared-kv", fwd(ref.ModeDraftExtend, true, []int{5}, []int{0})},
		{"table-draft-extend-v2-shared-kv", fwd(ref.ModeDraftExtendV2, true, []int{5}, []int{0})},
		{"table-draft-extend-shared-kv-off", fwd(ref.ModeDraftExtend, false, []int{5}, []int{10})},
		{"table-mixed", fwd(ref.ModeMixed, true, []int{9, 3}, nil)},
		{"table-mixed-shared-kv-off", fwd(ref.ModeMixed, false, []int{9, 8}, nil)},
		{"table-idle", fwd(ref.ModeIdle, true, nil, nil)},
		{"table-extend-shared-kv-off-sub-threshold", fwd(ref.ModeExtend, false, []int{3}, nil)},
		{"table-extend-shared-kv-off-split-unpadded", fwd(ref.ModeExtend, false, []int{8, 9}, nil)},
		{"cp-disabled", func() ref.CPCanSplitInput { in := fwd(ref.ModeExtend, true, nil, nil); in.CPEnabled = false; return in }()},
		{"cp-size-one", func() ref.CPCanSplitInput { in := fwd(ref.ModeExtend, true, nil, nil); in.CPSize = 1; return in }()},
		{"empty-batch-shared-kv", fwd(ref.ModeExtend, true, []int{}, []int{})},
		{"all-zero-shared-kv-off", fwd(ref.ModeExtend, false, []int{0, 0}, nil)},
		// Every length passes the 2·cp threshold, but together they are
		// 2^31 + 3 compute rows: the unpadded builder's row bound rejects
		// the split that step 6 asks for.
		{"unpadded-compute-rows-past-int32", fwd(ref.ModeExtend, false, []int{math.MaxInt32, 4}, nil)},
	}
	for _, cp := range []int{2, 3, 4} {
		for _, ps := range []int{4, 64} {
			edges := []int{1, ps - 1, ps, ps + 1, 2*cp - 1, 2 * cp, 2*cp + 1}
			for _, shared := range []bool{true, false} {
				for _, mode := range []ref.ForwardMode{ref.ModeExtend, ref.ModeDraftExtendV2} {
					batches := [][]int{edges}
					for _, l := range edges {
						batches = append(batches, []int{l})
					}
					for _, lens := range batches {
						in := ref.CPCanSplitInput{Mode: mode, CPEnabled: true, CPSize: cp, UsesCPSharedKV: shared,
							BatchSize: len(lens), ExtendLens: lens, PrefixLens: make([]int, len(lens)), PageSize: ps}
						for i := range lens {
							in.PrefixLens[i] = ps * (i % 3)
						}
						name := fmt.Sprintf("cp%d-ps%d-shared%t-%s-lens%v", cp, ps, shared, mode, lens)
						cs = append(cs, Case[ref.CPCanSplitInput]{name, in})
					}
				}
			}
		}
	}
	return cs
}

// canSplitRegressions: §5.5's minimal input. Validating the page plan
// before the eligibility check failed a TARGET_VERIFY forward that carries
// no prefix plan (it owns none) with ErrPagePlan instead of no-split.
func canSplitRegressions() []Case[ref.CPCanSplitInput] {
	return []Case[ref.CPCanSplitInput]{
		{"page-plan-before-eligibility", ref.CPCanSplitInput{Mode: ref.ModeTargetVerify, CPEnabled: true, CPSize: 2,
			UsesCPSharedKV: true, BatchSize: 2, ExtendLens: []int{2, 2}, PageSize: 64}},
	}
}

// canSplitNonEligible is P5.1: a forward that is not a CP extend (or has CP
// off) is a no-split for the matching reason, and stays one — without an
// error — whatever its metadata becomes.
func canSplitNonEligible(lim ref.Limits, in ref.CPCanSplitInput, out ref.CPCanSplitOutput) error {
	want := ref.ReasonNotCPExtend
	switch {
	case !in.CPEnabled || in.CPSize <= 1:
		want = ref.ReasonCPDisabled
	case ref.CPSplitEligible(in.Mode, in.UsesCPSharedKV):
		return nil
	}
	if out.Split || out.Reason != want || out.Layout != nil {
		return fmt.Errorf("non-eligible forward decided %+v, want a no-split for %q", out, want)
	}
	for _, g := range garbageVariants(in) {
		o, err := ref.CPCanSplit(lim, g)
		if err != nil || o.Split || o.Reason != want {
			return fmt.Errorf("non-eligible forward with metadata %+v: got %+v, %v; want a no-split for %q", g, o, err, want)
		}
	}
	return nil
}

// garbageVariants are in with its metadata broken in each way §5.3 names.
func garbageVariants(in ref.CPCanSplitInput) []ref.CPCanSplitInput {
	vs := make([]ref.CPCanSplitInput, 5)
	for i := range vs {
		vs[i] = in
	}
	vs[0].PrefixLens = nil
	vs[1].PrefixLens = []int{10}
	vs[2].ExtendLens = nil
	vs[3].PageSize, vs[3].Granule, vs[3].CPSize = 0, -1, ref.MaxCP*4
	vs[4].ExtendLens, vs[4].SeqLens, vs[4].BatchSize = []int{-1, 0}, []int{7}, 5
	if in.CPSize <= 1 {
		vs[3].CPSize = in.CPSize // keep "cp disabled" disabled
	}
	return vs
}

// canSplitFailFast is P5.2: an accepted eligible shared-KV forward with
// tokens to extend is split (never a silent no-split), and each way of
// breaking its page plan makes ref fail with ErrPagePlan.
func canSplitFailFast(lim ref.Limits, in ref.CPCanSplitInput, out ref.CPCanSplitOutput) error {
	if !in.CPEnabled || in.CPSize <= 1 || !in.UsesCPSharedKV || !ref.CPSplitEligible(in.Mode, true) || len(in.ExtendLens) == 0 {
		return nil
	}
	if !out.Split {
		return fmt.Errorf("eligible shared-KV forward with a valid page plan decided no-split (%q)", out.Reason)
	}
	for _, bad := range brokenPlans(in) {
		if _, err := ref.CPCanSplit(lim, bad); !errors.Is(err, ref.ErrPagePlan) {
			return fmt.Errorf("broken page plan %+v: got %v, want page_plan", bad, err)
		}
	}
	return nil
}

// brokenPlans breaks each page-plan rule of §5.2 step 4 in in's last request.
func brokenPlans(in ref.CPCanSplitInput) []ref.CPCanSplitInput {
	last := len(in.ExtendLens) - 1
	var vs []ref.CPCanSplitInput
	with := func(f func(*ref.CPCanSplitInput)) {
		v := in
		v.ExtendLens, v.PrefixLens, v.SeqLens = slices.Clone(in.ExtendLens), slices.Clone(in.PrefixLens), slices.Clone(in.SeqLens)
		f(&v)
		vs = append(vs, v)
	}
	with(func(v *ref.CPCanSplitInput) { v.PrefixLens = nil })
	with(func(v *ref.CPCanSplitInput) { v.PrefixLens[last] = -in.PageSize })
	with(func(v *ref.CPCanSplitInput) { v.ExtendLens[last] = 0 })
	with(func(v *ref.CPCanSplitInput) {
		v.SeqLens = make([]int, len(in.ExtendLens))
		for i := range v.SeqLens {
			v.SeqLens[i] = v.PrefixLens[i] + v.ExtendLens[i]
		}
		v.SeqLens[last]++
	})
	if in.PageSize > 1 {
		with(func(v *ref.CPCanSplitInput) { v.PrefixLens[last]++ })
	}
	return vs
}

// canSplitLayoutValid is P5.3: a split carries a layout that passes
// Validate() and is the builder's layout for (cp, L, g) — padded exactly
// when shared-KV is on; a no-split carries none; and Decide is
// deterministic.
func canSplitLayoutValid(lim ref.Limits, in ref.CPCanSplitInput, out ref.CPCanSplitOutput) error {
	if !out.Split {
		if out.Layout != nil {
			return fmt.Errorf("no-split (%q) carries a layout", out.Reason)
		}
		return nil
	}
	if out.Layout == nil {
		return fmt.Errorf("split without a layout")
	}
	if err := out.Layout.Validate(); err != nil {
		return fmt.Errorf("split layout fails Validate: %v", err)
	}
	spec := ref.LayoutSpec{CP: in.CPSize, Lens: in.ExtendLens}
	if in.UsesCPSharedKV {
		spec.Granule = ref.SplitGranule(in)
	}
	want, err := spec.Build()
	if err != nil {
		return fmt.Errorf("builder rejects the split batch: %v", err)
	}
	if d := cmp.Diff(want, *out.Layout); d != "" {
		return fmt.Errorf("layout is not the builder's (-want +got):\n%s", d)
	}
	again, err := ref.CPCanSplit(lim, in)
	if err != nil || !cmp.Equal(again, out) {
		return fmt.Errorf("decide is not deterministic: %+v, %v", again, err)
	}
	return nil
}
