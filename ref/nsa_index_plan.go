package ref

import (
	"strconv"
	"strings"

	"github.com/kvtwin/kvtwin/spec"
)

// This file is nsa.index_plan (docs/spec/cp-layout.md §9): which layers run the NSA
// indexer ("F", full) and which reuse the previous layer's top-k ("S",
// shared), the compact index-cache slots of the F layers, and the runtime
// rules built on that plan (shared-layer input, slot lookup, prefetch gate).

// Bytes per token and layer of the two caches HiCache holds (§7.1): the
// 656-byte FP8 MLA row of every layer and the 132-byte index-K row of F layers.
const (
	nsaMLARowBytes    = 656
	nsaIndexKRowBytes = 132
)

// NSAIndexPlanWarnings returns the §9.2 warnings of a valid config, never nil.
func NSAIndexPlanWarnings(in spec.NSAIndexPlanInput) []string {
	if in.Pattern != "" && (in.FreqOf() > 1 || in.Offset > 0) {
		return []string{spec.NSAPatternShadowsFreq}
	}
	return []string{}
}

// NSASkipLayer is skip(l) of §9.2 for a valid config: the pattern when set,
// else vLLM's offset formula, else upstream's (offset 2 in effect).
func NSASkipLayer(in spec.NSAIndexPlanInput, l int) bool {
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
func ResolveNSAIndexPlan(lim spec.Limits, in spec.NSAIndexPlanInput) (spec.NSAResolvedIndexPlan, []string, error) {
	if err := CheckNSAIndexPlanScalars(lim, in); err != nil {
		return spec.NSAResolvedIndexPlan{}, nil, err
	}
	p := spec.NSAResolvedIndexPlan{Skip: make([]bool, in.N), NextSkip: make([]bool, in.N), Active: []int{}, Slot: make([]int, in.N)}
	firstShared := -1
	for l := range in.N {
		p.Skip[l] = NSASkipLayer(in, l)
		if p.Skip[l] && firstShared < 0 {
			firstShared = l
		}
	}
	if err := CheckNSAIndexShare(in, firstShared); err != nil {
		return spec.NSAResolvedIndexPlan{}, nil, err
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

// answerNSAIndexQuery answers one validated query against the plan.
func answerNSAIndexQuery(p spec.NSAResolvedIndexPlan, q spec.NSAIndexQuery) spec.NSAIndexAnswer {
	switch q.Kind {
	case spec.NSAQuerySharedInput:
		return answerErr(p.CheckSharedLayerInput(q.Layer, q.PrevPresent))
	case spec.NSAQuerySlotOf:
		s, err := p.SlotOf(q.Layer)
		if err != nil {
			return answerErr(err)
		}
		return spec.NSAIndexAnswer{Slot: &s}
	default:
		layer, s, ok := p.PrefetchAfter(q.Layer)
		if !ok {
			return spec.NSAIndexAnswer{}
		}
		return spec.NSAIndexAnswer{Slot: &s, Prefetch: &layer}
	}
}

func answerErr(err error) spec.NSAIndexAnswer {
	if err == nil {
		return spec.NSAIndexAnswer{}
	}
	e := spec.ErrorObjectOf(err)
	return spec.NSAIndexAnswer{Err: &e}
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
func NSAIndexPlan(lim spec.Limits, in spec.NSAIndexPlanInput) (spec.NSAIndexPlanOutput, error) {
	p, warnings, err := ResolveNSAIndexPlan(lim, in)
	if err != nil {
		return spec.NSAIndexPlanOutput{}, err
	}
	out := spec.NSAIndexPlanOutput{
		NSAResolvedIndexPlan: p,
		Pattern:              RenderNSAIndexPattern(p.Skip),
		Warnings:             warnings,
		Log:                  NSAIndexPlanLog(in.N, p.Active),
		HiCacheBytesPerToken: NSAHiCacheBytesPerToken(in.N, len(p.Active)),
		Answers:              make([]spec.NSAIndexAnswer, 0, len(in.Queries)),
	}
	for _, q := range in.Queries {
		out.Answers = append(out.Answers, answerNSAIndexQuery(p, q))
	}
	return out, nil
}
