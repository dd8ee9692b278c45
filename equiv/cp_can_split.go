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
	"github.com/kvtwin/kvtwin/spec"
)

// CPCanSplit is the differential spec of cp.can_split (docs/spec/cp-layout.md §5).
func CPCanSplit() *Spec[spec.CPCanSplitInput, spec.CPCanSplitOutput] {
	return &Spec[spec.CPCanSplitInput, spec.CPCanSplitOutput]{
		Op:          catalog.CPCanSplit(),
		Valid:       rapid.Custom(canSplitValid),
		Invalid:     rapid.Custom(canSplitInvalid),
		Boundary:    canSplitBoundary(),
		Regressions: canSplitRegressions(),
		Rejects: map[string]*spec.Sentinel{
			"table-extend-prefix-nil":          spec.ErrPagePlan,
			"table-extend-prefix-misaligned":   spec.ErrPagePlan,
			"unpadded-compute-rows-past-int32": spec.ErrTooLarge,
		},
		Props: []Prop[spec.CPCanSplitInput, spec.CPCanSplitOutput]{
			{"non-eligible-ignores-metadata", canSplitNonEligible},
			{"page-plan-fail-fast", canSplitFailFast},
			{"split-layout-valid", canSplitLayoutValid},
		},
	}
}

var allModes = []spec.ForwardMode{spec.ModeExtend, spec.ModeMixed, spec.ModeDecode, spec.ModeTargetVerify,
	spec.ModeDraftExtend, spec.ModeDraftExtendV2, spec.ModeIdle}

// cpLen draws an extend length from the §5 boundary set for (cp, ps) or
// an ordinary prefill length.
func cpLen(t *rapid.T, cp, ps int, label string) int {
	edges := []int{1, max(ps-1, 1), ps, ps + 1, 2*cp - 1, 2 * cp, 2*cp + 1}
	return rapid.OneOf(rapid.SampledFrom(edges), rapid.IntRange(1, 300)).Draw(t, label)
}

// canSplitValid draws any accepted forward: half the time a CP extend with
// a consistent plan, otherwise any mode with arbitrary (often garbage)
// metadata, which non-eligible forwards must ignore.
func canSplitValid(t *rapid.T) spec.CPCanSplitInput {
	in := garbageForward(t)
	if rapid.Bool().Draw(t, "eligible") {
		return eligibleForward(t)
	}
	if in.CPEnabled && in.CPSize > 1 && ref.CPSplitEligible(in.Mode, in.UsesCPSharedKV) {
		// Garbage metadata on an eligible forward may be invalid: make the
		// forward non-eligible instead (CP off, or a mode it never splits).
		in.Mode = rapid.SampledFrom([]spec.ForwardMode{spec.ModeMixed, spec.ModeDecode, spec.ModeTargetVerify, spec.ModeIdle}).Draw(t, "non_eligible_mode")
	}
	return in
}

// garbageForward draws every field freely: nils, short lists, negative and
// misaligned values.
func garbageForward(t *rapid.T) spec.CPCanSplitInput {
	ints := func(label string) []int {
		if rapid.IntRange(0, 3).Draw(t, label+"_nil") == 0 {
			return nil
		}
		return rapid.SliceOfN(rapid.IntRange(-70, 200), 0, 5).Draw(t, label)
	}
	return spec.CPCanSplitInput{
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
func eligibleForward(t *rapid.T) spec.CPCanSplitInput {
	shared := rapid.Bool().Draw(t, "shared_kv")
	modes := []spec.ForwardMode{spec.ModeExtend}
	if shared {
		modes = append(modes, spec.ModeDraftExtend, spec.ModeDraftExtendV2)
	}
	cp := rapid.IntRange(2, 8).Draw(t, "cp_size")
	ps := rapid.SampledFrom([]int{1, 2, 4, 16, 64}).Draw(t, "page_size")
	b := rapid.IntRange(0, 5).Draw(t, "batch_size")
	in := spec.CPCanSplitInput{Mode: rapid.SampledFrom(modes).Draw(t, "mode"), CPEnabled: true, CPSize: cp,
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
func eligibleShared(t *rapid.T) spec.CPCanSplitInput {
	in := eligibleForward(t)
	if in.UsesCPSharedKV && in.BatchSize > 0 {
		return in
	}
	in.Mode, in.UsesCPSharedKV, in.BatchSize = spec.ModeExtend, true, 1
	in.ExtendLens, in.PrefixLens, in.SeqLens = []int{in.PageSize + 1}, []int{0}, nil
	return in
}

func canSplitInvalid(t *rapid.T) Bad[spec.CPCanSplitInput] {
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
		in.Mode = spec.ForwardMode(rapid.SampledFrom([]string{"", "extend", "PREFILL", "DRAFT_EXTEND_V3"}).Draw(t, "bad_mode"))
		return Bad[spec.CPCanSplitInput]{in, spec.ErrBadEnum}
	case 1:
		in.CPSize = rapid.IntRange(spec.MaxCP+1, spec.MaxCP+100).Draw(t, "huge_cp")
		return Bad[spec.CPCanSplitInput]{in, spec.ErrInvalidCPSize}
	case 2:
		if rapid.Bool().Draw(t, "nil_lens") {
			in.ExtendLens = nil
		} else {
			in.BatchSize += rapid.SampledFrom([]int{-1, 1}).Draw(t, "count_off")
		}
		return Bad[spec.CPCanSplitInput]{in, spec.ErrMissingExtendLens}
	case 3:
		in.PageSize = rapid.IntRange(-2, 0).Draw(t, "bad_page_size")
		return Bad[spec.CPCanSplitInput]{in, spec.ErrPagePlan}
	case 4:
		if rapid.Bool().Draw(t, "nil_prefix") {
			in.PrefixLens = nil
		} else {
			in.PrefixLens = in.PrefixLens[:b-1]
		}
		return Bad[spec.CPCanSplitInput]{in, spec.ErrPagePlan}
	case 5:
		withSeq()
		in.SeqLens = append(in.SeqLens, 0)
		return Bad[spec.CPCanSplitInput]{in, spec.ErrPagePlan}
	case 6:
		if in.PageSize == 1 {
			in.PrefixLens[at] = rapid.IntRange(-5, -1).Draw(t, "negative_prefix")
		} else {
			in.PrefixLens[at] += rapid.IntRange(1, in.PageSize-1).Draw(t, "misalign")
		}
		in.SeqLens = nil
		return Bad[spec.CPCanSplitInput]{in, spec.ErrPagePlan}
	case 7:
		in.ExtendLens[at] = rapid.IntRange(-3, 0).Draw(t, "short_extend")
		in.SeqLens = nil
		return Bad[spec.CPCanSplitInput]{in, spec.ErrPagePlan}
	case 8:
		withSeq()
		in.SeqLens[at] += rapid.SampledFrom([]int{-1, 1, in.PageSize}).Draw(t, "seq_off")
		return Bad[spec.CPCanSplitInput]{in, spec.ErrPagePlan}
	case 9:
		in.UsesCPSharedKV, in.Mode, in.PrefixLens, in.SeqLens = false, spec.ModeExtend, nil, nil
		in.ExtendLens[at] = rapid.IntRange(-100, -1).Draw(t, "negative_len")
		return Bad[spec.CPCanSplitInput]{in, spec.ErrBadLength}
	case 10:
		in.Granule = rapid.IntRange(-5, -1).Draw(t, "bad_granule")
		return Bad[spec.CPCanSplitInput]{in, spec.ErrInvalidGranule}
	default:
		// 2·cp segments of at least L_i/(2·cp) rows reach 2^31 rows.
		in.ExtendLens[at] = spec.MaxLayoutRows
		in.SeqLens = nil
		return Bad[spec.CPCanSplitInput]{in, spec.ErrTooLarge}
	}
}

// canSplitBoundary: §5.3's decision table, then the length edges (1, ps−1,
// ps, ps+1, 2·cp−1, 2·cp, 2·cp+1 and a batch mixing them) with shared-KV
// on and off, for each eligible mode.
func canSplitBoundary() []Case[spec.CPCanSplitInput] {
	fwd := func(mode spec.ForwardMode, shared bool, lens, prefix []int) spec.CPCanSplitInput {
		return spec.CPCanSplitInput{Mode: mode, CPEnabled: true, CPSize: 2, UsesCPSharedKV: shared,
			BatchSize: len(lens), ExtendLens: lens, PrefixLens: prefix, PageSize: 64}
	}
	cs := []Case[spec.CPCanSplitInput]{
		{"table-extend-split-padded", fwd(spec.ModeExtend, true, []int{3, 9}, []int{0, 64})},
		{"table-extend-prefix-nil", fwd(spec.ModeExtend, true, []int{3, 9}, nil)},
		{"table-extend-prefix-misaligned", fwd(spec.ModeExtend, true, []int{3}, []int{10})},
		{"table-target-verify-prefix-nil", fwd(spec.ModeTargetVerify, true, []int{2, 2}, nil)},
		{"table-decode-prefix-nil", fwd(spec.ModeDecode, true, []int{1, 1}, nil)},
		{"table-draft-extend-shared-kv", fwd(spec.ModeDraftExtend, true, []int{5}, []int{0})},
		{"table-draft-extend-v2-shared-kv", fwd(spec.ModeDraftExtendV2, true, []int{5}, []int{0})},
		{"table-draft-extend-shared-kv-off", fwd(spec.ModeDraftExtend, false, []int{5}, []int{10})},
		{"table-mixed", fwd(spec.ModeMixed, true, []int{9, 3}, nil)},
		{"table-mixed-shared-kv-off", fwd(spec.ModeMixed, false, []int{9, 8}, nil)},
		{"table-idle", fwd(spec.ModeIdle, true, nil, nil)},
		{"table-extend-shared-kv-off-sub-threshold", fwd(spec.ModeExtend, false, []int{3}, nil)},
		{"table-extend-shared-kv-off-split-unpadded", fwd(spec.ModeExtend, false, []int{8, 9}, nil)},
		{"cp-disabled", func() spec.CPCanSplitInput {
			in := fwd(spec.ModeExtend, true, nil, nil)
			in.CPEnabled = false
			return in
		}()},
		{"cp-size-one", func() spec.CPCanSplitInput { in := fwd(spec.ModeExtend, true, nil, nil); in.CPSize = 1; return in }()},
		{"empty-batch-shared-kv", fwd(spec.ModeExtend, true, []int{}, []int{})},
		{"all-zero-shared-kv-off", fwd(spec.ModeExtend, false, []int{0, 0}, nil)},
		// Every length passes the 2·cp threshold, but together they are
		// 2^31 + 3 compute rows: the unpadded builder's row bound rejects
		// the split that step 6 asks for.
		{"unpadded-compute-rows-past-int32", fwd(spec.ModeExtend, false, []int{math.MaxInt32, 4}, nil)},
	}
	for _, cp := range []int{2, 3, 4} {
		for _, ps := range []int{4, 64} {
			edges := []int{1, ps - 1, ps, ps + 1, 2*cp - 1, 2 * cp, 2*cp + 1}
			for _, shared := range []bool{true, false} {
				for _, mode := range []spec.ForwardMode{spec.ModeExtend, spec.ModeDraftExtendV2} {
					batches := [][]int{edges}
					for _, l := range edges {
						batches = append(batches, []int{l})
					}
					for _, lens := range batches {
						in := spec.CPCanSplitInput{Mode: mode, CPEnabled: true, CPSize: cp, UsesCPSharedKV: shared,
							BatchSize: len(lens), ExtendLens: lens, PrefixLens: make([]int, len(lens)), PageSize: ps}
						for i := range lens {
							in.PrefixLens[i] = ps * (i % 3)
						}
						name := fmt.Sprintf("cp%d-ps%d-shared%t-%s-lens%v", cp, ps, shared, mode, lens)
						cs = append(cs, Case[spec.CPCanSplitInput]{name, in})
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
func canSplitRegressions() []Case[spec.CPCanSplitInput] {
	return []Case[spec.CPCanSplitInput]{
		{"page-plan-before-eligibility", spec.CPCanSplitInput{Mode: spec.ModeTargetVerify, CPEnabled: true, CPSize: 2,
			UsesCPSharedKV: true, BatchSize: 2, ExtendLens: []int{2, 2}, PageSize: 64}},
	}
}

// canSplitNonEligible is P5.1: a forward that is not a CP extend (or has CP
// off) is a no-split for the matching reason, and stays one — without an
// error — whatever its metadata becomes.
func canSplitNonEligible(lim spec.Limits, in spec.CPCanSplitInput, out spec.CPCanSplitOutput) error {
	want := spec.ReasonNotCPExtend
	switch {
	case !in.CPEnabled || in.CPSize <= 1:
		want = spec.ReasonCPDisabled
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
func garbageVariants(in spec.CPCanSplitInput) []spec.CPCanSplitInput {
	vs := make([]spec.CPCanSplitInput, 5)
	for i := range vs {
		vs[i] = in
	}
	vs[0].PrefixLens = nil
	vs[1].PrefixLens = []int{10}
	vs[2].ExtendLens = nil
	vs[3].PageSize, vs[3].Granule, vs[3].CPSize = 0, -1, spec.MaxCP*4
	vs[4].ExtendLens, vs[4].SeqLens, vs[4].BatchSize = []int{-1, 0}, []int{7}, 5
	if in.CPSize <= 1 {
		vs[3].CPSize = in.CPSize // keep "cp disabled" disabled
	}
	return vs
}

// canSplitFailFast is P5.2: an accepted eligible shared-KV forward with
// tokens to extend is split (never a silent no-split), and each way of
// breaking its page plan makes ref fail with ErrPagePlan.
func canSplitFailFast(lim spec.Limits, in spec.CPCanSplitInput, out spec.CPCanSplitOutput) error {
	if !in.CPEnabled || in.CPSize <= 1 || !in.UsesCPSharedKV || !ref.CPSplitEligible(in.Mode, true) || len(in.ExtendLens) == 0 {
		return nil
	}
	if !out.Split {
		return fmt.Errorf("eligible shared-KV forward with a valid page plan decided no-split (%q)", out.Reason)
	}
	for _, bad := range brokenPlans(in) {
		if _, err := ref.CPCanSplit(lim, bad); !errors.Is(err, spec.ErrPagePlan) {
			return fmt.Errorf("broken page plan %+v: got %v, want page_plan", bad, err)
		}
	}
	return nil
}

// brokenPlans breaks each page-plan rule of §5.2 step 4 in in's last request.
func brokenPlans(in spec.CPCanSplitInput) []spec.CPCanSplitInput {
	last := len(in.ExtendLens) - 1
	var vs []spec.CPCanSplitInput
	with := func(f func(*spec.CPCanSplitInput)) {
		v := in
		v.ExtendLens, v.PrefixLens, v.SeqLens = slices.Clone(in.ExtendLens), slices.Clone(in.PrefixLens), slices.Clone(in.SeqLens)
		f(&v)
		vs = append(vs, v)
	}
	with(func(v *spec.CPCanSplitInput) { v.PrefixLens = nil })
	with(func(v *spec.CPCanSplitInput) { v.PrefixLens[last] = -in.PageSize })
	with(func(v *spec.CPCanSplitInput) { v.ExtendLens[last] = 0 })
	with(func(v *spec.CPCanSplitInput) {
		v.SeqLens = make([]int, len(in.ExtendLens))
		for i := range v.SeqLens {
			v.SeqLens[i] = v.PrefixLens[i] + v.ExtendLens[i]
		}
		v.SeqLens[last]++
	})
	if in.PageSize > 1 {
		with(func(v *spec.CPCanSplitInput) { v.PrefixLens[last]++ })
	}
	return vs
}

// canSplitLayoutValid is P5.3: a split carries a layout that passes
// Validate() and is the builder's layout for (cp, L, g) — padded exactly
// when shared-KV is on; a no-split carries none; and Decide is
// deterministic.
func canSplitLayoutValid(lim spec.Limits, in spec.CPCanSplitInput, out spec.CPCanSplitOutput) error {
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
	sp := spec.LayoutSpec{CP: in.CPSize, Lens: in.ExtendLens}
	if in.UsesCPSharedKV {
		sp.Granule = ref.SplitGranule(in)
	}
	want, err := sp.Build()
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
