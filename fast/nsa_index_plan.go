package fast

import (
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// NSAIndexPlan is the twin of ref.NSAIndexPlan (docs/spec/cp-layout.md §9). It
// validates with ref's helpers, then builds the whole plan in one pass with
// a phase counter instead of a modulo per layer, and answers the queries
// from the plan's tables without re-deriving skip.
func NSAIndexPlan(lim spec.Limits, in spec.NSAIndexPlanInput) (spec.NSAIndexPlanOutput, error) {
	if err := ref.CheckNSAIndexPlanScalars(lim, in); err != nil {
		return spec.NSAIndexPlanOutput{}, err
	}
	n := in.N
	skip := make([]bool, n)
	firstShared := fillSkip(skip, in)
	if err := ref.CheckNSAIndexShare(in, firstShared); err != nil {
		return spec.NSAIndexPlanOutput{}, err
	}
	p := spec.NSAResolvedIndexPlan{Skip: skip, NextSkip: make([]bool, n), Slot: make([]int, n)}
	copy(p.NextSkip, skip[1:]) // NextSkip[N-1] stays false ([deviation])
	nActive := 0
	pattern := make([]byte, n)
	for l, s := range skip {
		if s {
			p.Slot[l], pattern[l] = -1, 'S'
			continue
		}
		p.Slot[l], pattern[l] = nActive, 'F'
		nActive++
	}
	p.Active = make([]int, 0, nActive)
	for l, s := range skip {
		if !s {
			p.Active = append(p.Active, l)
		}
	}
	out := spec.NSAIndexPlanOutput{
		NSAResolvedIndexPlan: p,
		Pattern:              string(pattern),
		Warnings:             ref.NSAIndexPlanWarnings(in),
		Log:                  ref.NSAIndexPlanLog(n, p.Active),
		HiCacheBytesPerToken: ref.NSAHiCacheBytesPerToken(n, nActive),
		Answers:              make([]spec.NSAIndexAnswer, len(in.Queries)),
	}
	// One backing array for the answers' slot and layer numbers instead of
	// one small allocation per answer.
	ints := make([]int, 2*len(in.Queries))
	for i, q := range in.Queries {
		out.Answers[i] = answer(p, q, ints[2*i:2*i+2:2*i+2])
	}
	return out, nil
}

// fillSkip writes skip(l) for every layer and returns the first S layer, or
// -1. Without a pattern, layer l is F iff max(l-offset+1, 0) is a multiple
// of freq: every layer up to offset-1 is F, then the phase counts
// 1, 2, …, freq-1, 0, … and only phase 0 is F.
func fillSkip(skip []bool, in spec.NSAIndexPlanInput) int {
	first := -1
	if in.Pattern != "" {
		for l := range skip {
			if skip[l] = in.Pattern[l] == 'S'; skip[l] && first < 0 {
				first = l
			}
		}
		return first
	}
	freq := in.FreqOf()
	if freq <= 1 {
		return -1
	}
	offset := 2
	if in.Offset > 0 {
		offset = in.Offset
	}
	phase := 0
	for l := offset; l < len(skip); l++ { // layers < offset have max(...) == 0
		if phase++; phase == freq {
			phase = 0
		}
		if skip[l] = phase != 0; skip[l] && first < 0 {
			first = l
		}
	}
	return first
}

// answer is ref.answerNSAIndexQuery read off the plan's tables: the gate
// checks Skip[l+1] before it looks at a slot, so it never asks for the
// slot of an S layer. The answer's numbers live in buf (slot, then layer).
func answer(p spec.NSAResolvedIndexPlan, q spec.NSAIndexQuery, buf []int) spec.NSAIndexAnswer {
	switch q.Kind {
	case spec.NSAQuerySharedInput:
		if p.Skip[q.Layer] && !q.PrevPresent {
			return refusal(p.CheckSharedLayerInput(q.Layer, false))
		}
		return spec.NSAIndexAnswer{}
	case spec.NSAQuerySlotOf:
		if p.Skip[q.Layer] {
			_, err := p.SlotOf(q.Layer)
			return refusal(err)
		}
		buf[0] = p.Slot[q.Layer]
		return spec.NSAIndexAnswer{Slot: &buf[0]}
	default:
		next := q.Layer + 1
		if next >= len(p.Skip) || p.Skip[next] {
			return spec.NSAIndexAnswer{}
		}
		buf[0], buf[1] = p.Slot[next], next
		return spec.NSAIndexAnswer{Slot: &buf[0], Prefetch: &buf[1]}
	}
}

func refusal(err error) spec.NSAIndexAnswer {
	e := spec.ErrorObjectOf(err)
	return spec.NSAIndexAnswer{Err: &e}
}
