package ref

import (
	"strconv"
	"strings"
)

// This file is nsa.index_plan (docs/spec/cp-layout.md §9): which layers run the NSA
// indexer ("F", full) and which reuse the previous layer's top-k ("S",
// shared), the compact index-cache slots of the F layers, and the runtime
// rules built on that plan (shared-layer input, slot lookup, prefetch gate).

// NSAPatternShadowsFreq is the §9.2 warning for a pattern set together with
// index_topk_freq > 1 or an offset: the pattern wins.
const NSAPatternShadowsFreq = "pattern shadows index_topk_freq"

// Bytes per token and layer of the two caches HiCache holds (§7.1): the
// 656-byte FP8 MLA row of every layer and the 132-byte index-K row of F layers.
const (
	nsaMLARowBytes    = 656
	nsaIndexKRowBytes = 132
)

// Index-plan query kinds (§9.2 runtime rules).
const (
	// NSAQuerySharedInput is CheckSharedLayerInput(layer, prev_present).
	NSAQuerySharedInput = "shared_input"
	// NSAQuerySlotOf is SlotOf(layer).
	NSAQuerySlotOf = "slot_of"
	// NSAQueryPrefetchAfter is the prefetch gate run after layer finishes.
	NSAQueryPrefetchAfter = "prefetch_after"
)

// NSAIndexPlanInput is the input of nsa.index_plan (docs/spec/cp-layout.md §9.1): the
// resolved config plus runtime queries answered against the plan.
type NSAIndexPlanInput struct {
	// N is the number of hidden layers, >= 1.
	N int `json:"n"`
	// Freq is index_topk_freq; nil means the default 1.
	Freq *int `json:"freq,omitempty"`
	// Offset is index_topk_offset; 0 means unset.
	Offset int `json:"offset,omitzero"`
	// Pattern is index_topk_pattern, one 'F'/'S' per layer; "" means unset.
	Pattern string `json:"pattern,omitzero"`
	// PPSize is the pipeline-parallel size; 0 means 1.
	PPSize int `json:"pp_size,omitzero"`
	// TBO is whether two-batch overlap is on.
	TBO bool `json:"tbo,omitzero"`
	// Queries are runtime rule invocations answered in order.
	Queries []NSAIndexQuery `json:"queries,omitempty"`
}

// NSAIndexQuery is one runtime rule invocation (§9.2 "Runtime rules").
type NSAIndexQuery struct {
	// Kind is NSAQuerySharedInput, NSAQuerySlotOf or NSAQueryPrefetchAfter.
	Kind string `json:"kind"`
	// Layer is the layer the rule is invoked for, in [0, N).
	Layer int `json:"layer"`
	// PrevPresent is whether the previous layer's top-k is available (shared_input only).
	PrevPresent bool `json:"prev_present,omitzero"`
}

// NSAIndexAnswer is the result of one query: a refusal is its canonical error
// object, as a script op reports a refused step.
type NSAIndexAnswer struct {
	// Slot is the compact slot (slot_of) or the prefetched layer's slot
	// (prefetch_after, when it prefetches).
	Slot *int `json:"slot,omitempty"`
	// Prefetch is the layer prefetched after Layer (prefetch_after), or nil for none.
	Prefetch *int `json:"prefetch,omitempty"`
	// Err is the refusal, or nil.
	Err *ErrorObject `json:"err,omitempty"`
}

// NSAResolvedIndexPlan is the resolved plan (§9.1): per layer, whether it shares the
// previous top-k, whether the next layer does, and the compact slot of
// every F layer.
type NSAResolvedIndexPlan struct {
	// Skip[l] is true for S layers.
	Skip []bool `json:"skip"`
	// NextSkip[l] is Skip[l+1]; false for the last layer ([deviation]).
	NextSkip []bool `json:"next_skip"`
	// Active lists the F layers, ascending.
	Active []int `json:"active"`
	// Slot[l] is l's rank in Active, or -1 for S layers.
	Slot []int `json:"slot"`
}

// NSAIndexPlanOutput is the output of nsa.index_plan.
type NSAIndexPlanOutput struct {
	NSAResolvedIndexPlan
	// Pattern is the plan rendered as an 'F'/'S' string.
	Pattern string `json:"pattern"`
	// Warnings are the §9.2 config warnings (NSAPatternShadowsFreq), never nil.
	Warnings []string `json:"warnings"`
	// Log is the once-at-pool-init line, "index layers active=A/N [l0 l1 …]".
	Log string `json:"log"`
	// HiCacheBytesPerToken is N·656 + len(Active)·132 (§9.4 P9.6).
	HiCacheBytesPerToken int64 `json:"hicache_bytes_per_token"`
	// Answers holds one answer per query, never nil.
	Answers []NSAIndexAnswer `json:"answers"`
}

// FreqOf is the effective index_topk_freq (nil means 1).
func (in NSAIndexPlanInput) FreqOf() int {
	if in.Freq == nil {
		return 1
	}
	return *in.Freq
}

// NSAIndexPlanWarnings returns the §9.2 warnings of a valid config, never nil.
func NSAIndexPlanWarnings(in NSAIndexPlanInput) []string {
	if in.Pattern != "" && (in.FreqOf() > 1 || in.Offset > 0) {
		return []string{NSAPatternShadowsFreq}
	}
	return []string{}
}

// NSASkipLayer is skip(l) of §9.2 for a valid config: the pattern when set,
// else vLLM's offset formula, else upstream's (offset 2 in effect).
func NSASkipLayer(in NSAIndexPlanInput, l int) bool {
	if in.Pattern != "" {
		return in.Pattern[l] == 'S'
	}
	freq := in.FreqOf()
	if freq <= 1 {
		return false
	}
	offset := 2
	if in.Offset > 0 {
		offset = in.Offset
	}
	return max(l-offset+1, 0)%freq != 0
}

// ResolveNSAIndexPlan validates in and returns its plan and warnings
// (docs/spec/cp-layout.md §9.1 ResolvePlan).
func ResolveNSAIndexPlan(lim Limits, in NSAIndexPlanInput) (NSAResolvedIndexPlan, []string, error) {
	if err := CheckNSAIndexPlanScalars(lim, in); err != nil {
		return NSAResolvedIndexPlan{}, nil, err
	}
	p := NSAResolvedIndexPlan{Skip: make([]bool, in.N), NextSkip: make([]bool, in.N), Active: []int{}, Slot: make([]int, in.N)}
	firstShared := -1
	for l := range in.N {
		p.Skip[l] = NSASkipLayer(in, l)
		if p.Skip[l] && firstShared < 0 {
			firstShared = l
		}
	}
	if err := CheckNSAIndexShare(in, firstShared); err != nil {
		return NSAResolvedIndexPlan{}, nil, err
	}
	for l := range in.N {
		if l+1 < in.N {
			p.NextSkip[l] = p.Skip[l+1]
		}
		p.Slot[l] = -1
		if !p.Skip[l] {
			p.Slot[l] = len(p.Active)
			p.Active = append(p.Active, l)
		}
	}
	return p, NSAIndexPlanWarnings(in), nil
}

// SlotOf is the compact index-cache slot of layer l; an S layer has none
// (ErrInactiveIndexLayer). Precondition: 0 <= l < N.
func (p NSAResolvedIndexPlan) SlotOf(l int) (int, error) {
	if p.Skip[l] {
		return 0, Reject(ErrInactiveIndexLayer, "layer", l, "an F layer (S layers have no index cache)")
	}
	return p.Slot[l], nil
}

// CheckSharedLayerInput refuses an S layer reached without the previous
// layer's top-k: sparse attention must never run without indices.
// Precondition: 0 <= l < N.
func (p NSAResolvedIndexPlan) CheckSharedLayerInput(l int, prevPresent bool) error {
	if p.Skip[l] && !prevPresent {
		return Reject(ErrSharedLayerMissingPrevTopK, "layer", l, "previous top-k present for an S layer")
	}
	return nil
}

// prefetchAfter is the prefetch gate run after layer l: it prefetches layer
// l+1's index cache iff l+1 < N and l+1 is an F layer, and returns that
// layer and its slot. Precondition: 0 <= l < N.
func (p NSAResolvedIndexPlan) prefetchAfter(l int) (layer, slot int, ok bool) {
	next := l + 1
	if next >= len(p.Skip) || p.Skip[next] {
		return 0, 0, false
	}
	s, err := p.SlotOf(next)
	return next, s, err == nil
}

// answerNSAIndexQuery answers one validated query against the plan.
func answerNSAIndexQuery(p NSAResolvedIndexPlan, q NSAIndexQuery) NSAIndexAnswer {
	switch q.Kind {
	case NSAQuerySharedInput:
		return answerErr(p.CheckSharedLayerInput(q.Layer, q.PrevPresent))
	case NSAQuerySlotOf:
		s, err := p.SlotOf(q.Layer)
		if err != nil {
			return answerErr(err)
		}
		return NSAIndexAnswer{Slot: &s}
	default:
		layer, s, ok := p.prefetchAfter(q.Layer)
		if !ok {
			return NSAIndexAnswer{}
		}
		return NSAIndexAnswer{Slot: &s, Prefetch: &layer}
	}
}

func answerErr(err error) NSAIndexAnswer {
	if err == nil {
		return NSAIndexAnswer{}
	}
	e := ErrorObjectOf(err)
	return NSAIndexAnswer{Err: &e}
}

// RenderNSAIndexPattern writes skip as an 'F'/'S' string.
func RenderNSAIndexPattern(skip []bool) string {
	var b strings.Builder
	b.Grow(len(skip))
	for _, s := range skip {
		if s {
			b.WriteByte('S')
		} else {
			b.WriteByte('F')
		}
	}
	return b.String()
}

// NSAIndexPlanLog is the once-at-pool-init line naming every active layer,
// e.g. "index layers active=21/78 [0 1 2 6 …]". Digits are appended in place
// (no string per layer), so the line costs a couple of allocations.
func NSAIndexPlanLog(n int, active []int) string {
	b := make([]byte, 0, 40+8*len(active))
	b = append(b, "index layers active="...)
	b = strconv.AppendInt(b, int64(len(active)), 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, " ["...)
	for i, l := range active {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendInt(b, int64(l), 10)
	}
	return string(append(b, ']'))
}

// NSAHiCacheBytesPerToken is §9.4 P9.6: every layer's MLA row plus an index-K
// row for each active layer. n is bounded by CheckNSAIndexPlanScalars.
func NSAHiCacheBytesPerToken(n, active int) int64 {
	return int64(n)*nsaMLARowBytes + int64(active)*nsaIndexKRowBytes
}

// NSAIndexPlan is nsa.index_plan (docs/spec/cp-layout.md §9): the resolved plan, its
// rendering, warnings, log line and HiCache bytes per token, and the answer
// to every runtime query.
func NSAIndexPlan(lim Limits, in NSAIndexPlanInput) (NSAIndexPlanOutput, error) {
	p, warnings, err := ResolveNSAIndexPlan(lim, in)
	if err != nil {
		return NSAIndexPlanOutput{}, err
	}
	out := NSAIndexPlanOutput{
		NSAResolvedIndexPlan: p,
		Pattern:              RenderNSAIndexPattern(p.Skip),
		Warnings:             warnings,
		Log:                  NSAIndexPlanLog(in.N, p.Active),
		HiCacheBytesPerToken: NSAHiCacheBytesPerToken(in.N, len(p.Active)),
		Answers:              make([]NSAIndexAnswer, 0, len(in.Queries)),
	}
	for _, q := range in.Queries {
		out.Answers = append(out.Answers, answerNSAIndexQuery(p, q))
	}
	return out, nil
}
