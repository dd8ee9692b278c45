package mutants

import (
	"fmt"
	"strings"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// PatternLengthUnchecked is docs/spec/cp-layout.md §9.5 bug 1: the pattern's length
// was never compared with the layer count. A long pattern's tail was
// silently ignored; a short one failed late, deep in pool init, with an
// obscure per-layer error (here an internal error naming the first layer
// past the pattern's end, rather than a panic, so the zoo's kill reason is
// reproducible).
func PatternLengthUnchecked() equiv.Killable {
	return &equiv.Mutant[spec.NSAIndexPlanInput, spec.NSAIndexPlanOutput]{
		Spec:    equiv.NSAIndexPlan(),
		ID:      "pattern-length-unchecked",
		Section: "cp-layout.md §9.5",
		About:   "pattern length not checked against N: a long pattern's tail is ignored, a short one fails late in pool init",
		Fn: func(lim spec.Limits, in spec.NSAIndexPlanInput) (spec.NSAIndexPlanOutput, error) {
			if in.Pattern != "" && in.N >= 1 && len(in.Pattern) != in.N {
				if ref.CheckNSAIndexPattern(len(in.Pattern), in.Pattern) == nil {
					if len(in.Pattern) < in.N { // the late failure in pool init
						return spec.NSAIndexPlanOutput{}, fmt.Errorf("pool init: layer %d: pattern index out of range", len(in.Pattern))
					}
					in.Pattern = in.Pattern[:in.N] // the bug: the tail is dropped
				}
			}
			return fast.NSAIndexPlan(lim, in)
		},
	}
}

// PrefetchUngated is docs/spec/cp-layout.md §9.5 bug 2: the CP shared-KV index
// prefetcher asked for layer l+1's slot whatever the layer, so the first
// F→S transition hit the inactive-layer fail-fast.
func PrefetchUngated() equiv.Killable {
	return &equiv.Mutant[spec.NSAIndexPlanInput, spec.NSAIndexPlanOutput]{
		Spec:    equiv.NSAIndexPlan(),
		ID:      "prefetch-ungated",
		Section: "cp-layout.md §9.5",
		About:   "the prefetch gate calls SlotOf(l+1) without checking skip(l+1): ErrInactiveIndexLayer on an F→S step",
		Fn: func(lim spec.Limits, in spec.NSAIndexPlanInput) (spec.NSAIndexPlanOutput, error) {
			out, err := fast.NSAIndexPlan(lim, in)
			if err != nil {
				return out, err
			}
			for i, q := range in.Queries {
				if q.Kind != spec.NSAQueryPrefetchAfter || q.Layer+1 >= in.N {
					continue
				}
				next := q.Layer + 1
				s, err := out.SlotOf(next) // the bug: no skip(l+1) check first
				if err != nil {
					e := spec.ErrorObjectOf(err)
					out.Answers[i] = spec.NSAIndexAnswer{Err: &e}
					continue
				}
				out.Answers[i] = spec.NSAIndexAnswer{Slot: &s, Prefetch: &next}
			}
			return out, nil
		},
	}
}

// SharedLayerMissingPrevTopK is docs/spec/cp-layout.md §9.5 bug 3: a shared layer
// given no previous top-k fell through and ran sparse attention without
// indices instead of failing fast.
func SharedLayerMissingPrevTopK() equiv.Killable {
	return &equiv.Mutant[spec.NSAIndexPlanInput, spec.NSAIndexPlanOutput]{
		Spec:    equiv.NSAIndexPlan(),
		ID:      "shared-layer-missing-prev-topk",
		Section: "cp-layout.md §9.5",
		About:   "an S layer without the previous top-k runs on (sparse attention without indices)",
		Fn: func(lim spec.Limits, in spec.NSAIndexPlanInput) (spec.NSAIndexPlanOutput, error) {
			out, err := fast.NSAIndexPlan(lim, in)
			if err != nil {
				return out, err
			}
			for i, q := range in.Queries {
				if q.Kind == spec.NSAQuerySharedInput {
					out.Answers[i] = spec.NSAIndexAnswer{} // the bug: never refused
				}
			}
			return out, nil
		},
	}
}

// HiCacheIndexBytesEveryLayer is docs/spec/cp-layout.md §9.5 bug 4: the HiCache
// estimate counted a 132-byte index-K row for every layer, not only the
// active ones.
func HiCacheIndexBytesEveryLayer() equiv.Killable {
	return &equiv.Mutant[spec.NSAIndexPlanInput, spec.NSAIndexPlanOutput]{
		Spec:    equiv.NSAIndexPlan(),
		ID:      "hicache-index-bytes-every-layer",
		Section: "cp-layout.md §9.5",
		About:   "HiCache bytes/token count index bytes for all N layers (N·656 + N·132)",
		Fn: func(lim spec.Limits, in spec.NSAIndexPlanInput) (spec.NSAIndexPlanOutput, error) {
			out, err := fast.NSAIndexPlan(lim, in)
			if err == nil {
				out.HiCacheBytesPerToken = ref.NSAHiCacheBytesPerToken(in.N, in.N) // the bug: N, not |Active|
			}
			return out, err
		},
	}
}

// PatternCharsetCForFull is docs/spec/cp-layout.md §9.5 item 5: an earlier fork test
// spelled full layers 'C'; accepting it as 'F' hides a pattern written for
// another charset.
func PatternCharsetCForFull() equiv.Killable {
	return &equiv.Mutant[spec.NSAIndexPlanInput, spec.NSAIndexPlanOutput]{
		Spec:    equiv.NSAIndexPlan(),
		ID:      "pattern-charset-c-for-full",
		Section: "cp-layout.md §9.5",
		About:   "the old 'C' (full) spelling is accepted as 'F' instead of ErrPatternCharset",
		Fn: func(lim spec.Limits, in spec.NSAIndexPlanInput) (spec.NSAIndexPlanOutput, error) {
			in.Pattern = strings.ReplaceAll(in.Pattern, "C", "F") // the bug: the old charset
			return fast.NSAIndexPlan(lim, in)
		},
	}
}
