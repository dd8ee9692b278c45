package ref

import (
	"fmt"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for nsa.index_plan (docs/spec/cp-layout.md §9): its sentinels, the scalars, the pattern and the PP index share.

// CheckNSAIndexPlanScalars checks everything about in that does not need
// the plan, in the contract order: layer count (and the output bound it
// implies), freq, offset, pp size, then the pattern's charset, first layer
// and length (§9.2), then the query kinds and layers.
func CheckNSAIndexPlanScalars(lim spec.Limits, in spec.NSAIndexPlanInput) error {
	// The spec names no sentinel for the layer count or pipeline size; they
	// are configuration, so they share §8.1's ErrConfig.
	if in.N < 1 {
		return spec.Reject(spec.ErrConfig, "n", in.N, ">= 1 layer")
	}
	// Skip, NextSkip, Active and Slot are N-sized: 2 bools + 2 ints per layer.
	if err := lim.CheckOutput("n", int64(in.N), 18); err != nil {
		return err
	}
	if f := in.FreqOf(); f < 1 {
		return spec.Reject(spec.ErrFreq, "freq", f, ">= 1")
	}
	if in.Offset < 0 {
		return spec.Reject(spec.ErrOffset, "offset", in.Offset, ">= 0 (0 = unset)")
	}
	if in.PPSize < 0 {
		return spec.Reject(spec.ErrConfig, "pp_size", in.PPSize, ">= 1 (0 = 1)")
	}
	if err := CheckNSAIndexPattern(in.N, in.Pattern); err != nil {
		return err
	}
	for q, x := range in.Queries {
		switch x.Kind {
		case spec.NSAQuerySharedInput, spec.NSAQuerySlotOf, spec.NSAQueryPrefetchAfter:
		default:
			return spec.Reject(spec.ErrBadEnum, spec.Idx("queries", q)+".kind", x.Kind,
				fmt.Sprintf("%q, %q or %q", spec.NSAQuerySharedInput, spec.NSAQuerySlotOf, spec.NSAQueryPrefetchAfter))
		}
		if x.Layer < 0 || x.Layer >= in.N {
			return spec.Reject(spec.ErrLayerOutOfOrder, spec.Idx("queries", q)+".layer", x.Layer, fmt.Sprintf("in [0, n=%d)", in.N))
		}
	}
	return nil
}

// CheckNSAIndexPattern validates a set pattern against n layers (§9.2, §9.5):
// charset first (naming the position), then layer 0, then the length. The
// empty pattern is unset and always passes.
func CheckNSAIndexPattern(n int, pattern string) error {
	if pattern == "" {
		return nil
	}
	for pos, c := range pattern { // pos is a byte offset; c the whole character there
		if c != 'F' && c != 'S' {
			return spec.Reject(spec.ErrPatternCharset, spec.Idx("pattern", pos), string(c), `'F' or 'S' (case-sensitive)`)
		}
	}
	if pattern[0] != 'F' {
		return spec.Reject(spec.ErrPatternFirstLayer, "pattern[0]", pattern[:1], `'F' (layer 0 has nothing to share from)`)
	}
	if len(pattern) != n {
		return spec.Reject(spec.ErrPatternLength, "pattern", len(pattern), fmt.Sprintf("length == n (%d)", n))
	}
	return nil
}

// CheckNSAIndexShare rejects a plan with a shared layer under pipeline
// parallelism (PP first) or two-batch overlap (§9.2), naming the first S layer.
func CheckNSAIndexShare(in spec.NSAIndexPlanInput, firstShared int) error {
	if firstShared < 0 {
		return nil
	}
	if in.PPSize > 1 {
		return spec.Reject(spec.ErrPPIndexShare, "pp_size", in.PPSize, fmt.Sprintf("1 when layer %d shares top-k", firstShared))
	}
	if in.TBO {
		return spec.Reject(spec.ErrTBOIndexShare, "tbo", true, fmt.Sprintf("false when layer %d shares top-k", firstShared))
	}
	return nil
}
