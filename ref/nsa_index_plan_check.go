package ref

import "fmt"

// Validation for nsa.index_plan (docs/spec/cp-layout.md §9): its sentinels, the scalars, the pattern and the PP index share.

// Index-plan sentinels (docs/spec/cp-layout.md §0.5, §9.2).
var (
	// ErrPatternCharset: a pattern character other than 'F' or 'S'.
	ErrPatternCharset = NewSentinel("pattern_charset", "index-topk pattern characters must be 'F' or 'S'")
	// ErrPatternFirstLayer: a pattern whose layer 0 is not 'F' (layer 0 has nothing to share from).
	ErrPatternFirstLayer = NewSentinel("pattern_first_layer", "index-topk pattern must start with 'F'")
	// ErrPatternLength: a pattern whose length is not the number of layers.
	ErrPatternLength = NewSentinel("pattern_length", "index-topk pattern length must equal the number of layers")
	// ErrFreq: an index-topk frequency below 1.
	ErrFreq = NewSentinel("freq", "index_topk_freq must be >= 1")
	// ErrOffset: a negative index-topk offset (0 means unset).
	ErrOffset = NewSentinel("offset", "index_topk_offset must be >= 0")
	// ErrPPIndexShare: index-topk sharing under pipeline parallelism (top-k is not threaded across stages).
	ErrPPIndexShare = NewSentinel("pp_index_share", "index-topk sharing is not supported with pipeline parallelism")
	// ErrTBOIndexShare: index-topk sharing under two-batch overlap (upstream guard).
	ErrTBOIndexShare = NewSentinel("tbo_index_share", "index-topk sharing is not supported with two-batch overlap")
	// ErrSharedLayerMissingPrevTopK: a shared layer reached without the previous layer's top-k.
	ErrSharedLayerMissingPrevTopK = NewSentinel("shared_layer_missing_prev_topk", "shared index layer has no previous top-k indices")
	// ErrInactiveIndexLayer: an index-cache slot asked for a shared layer, which has none.
	ErrInactiveIndexLayer = NewSentinel("inactive_index_layer", "layer has no index-cache slot")
)

// CheckNSAIndexPlanScalars checks everything about in that does not need
// the plan, in the contract order: layer count (and the output bound it
// implies), freq, offset, pp size, then the pattern's charset, first layer
// and length (§9.2), then the query kinds and layers.
func CheckNSAIndexPlanScalars(lim Limits, in NSAIndexPlanInput) error {
	// The spec names no sentinel for the layer count or pipeline size; they
	// are configuration, so they share §8.1's ErrConfig.
	if in.N < 1 {
		return Reject(ErrConfig, "n", in.N, ">= 1 layer")
	}
	// Skip, NextSkip, Active and Slot are N-sized: 2 bools + 2 ints per layer.
	if err := lim.CheckOutput("n", int64(in.N), 18); err != nil {
		return err
	}
	if f := in.FreqOf(); f < 1 {
		return Reject(ErrFreq, "freq", f, ">= 1")
	}
	if in.Offset < 0 {
		return Reject(ErrOffset, "offset", in.Offset, ">= 0 (0 = unset)")
	}
	if in.PPSize < 0 {
		return Reject(ErrConfig, "pp_size", in.PPSize, ">= 1 (0 = 1)")
	}
	if err := CheckNSAIndexPattern(in.N, in.Pattern); err != nil {
		return err
	}
	for q, x := range in.Queries {
		switch x.Kind {
		case NSAQuerySharedInput, NSAQuerySlotOf, NSAQueryPrefetchAfter:
		default:
			return Reject(ErrBadEnum, Idx("queries", q)+".kind", x.Kind,
				fmt.Sprintf("%q, %q or %q", NSAQuerySharedInput, NSAQuerySlotOf, NSAQueryPrefetchAfter))
		}
		if x.Layer < 0 || x.Layer >= in.N {
			return Reject(ErrLayerOutOfOrder, Idx("queries", q)+".layer", x.Layer, fmt.Sprintf("in [0, n=%d)", in.N))
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
			return Reject(ErrPatternCharset, Idx("pattern", pos), string(c), `'F' or 'S' (case-sensitive)`)
		}
	}
	if pattern[0] != 'F' {
		return Reject(ErrPatternFirstLayer, "pattern[0]", pattern[:1], `'F' (layer 0 has nothing to share from)`)
	}
	if len(pattern) != n {
		return Reject(ErrPatternLength, "pattern", len(pattern), fmt.Sprintf("length == n (%d)", n))
	}
	return nil
}

// CheckNSAIndexShare rejects a plan with a shared layer under pipeline
// parallelism (PP first) or two-batch overlap (§9.2), naming the first S layer.
func CheckNSAIndexShare(in NSAIndexPlanInput, firstShared int) error {
	if firstShared < 0 {
		return nil
	}
	if in.PPSize > 1 {
		return Reject(ErrPPIndexShare, "pp_size", in.PPSize, fmt.Sprintf("1 when layer %d shares top-k", firstShared))
	}
	if in.TBO {
		return Reject(ErrTBOIndexShare, "tbo", true, fmt.Sprintf("false when layer %d shares top-k", firstShared))
	}
	return nil
}
