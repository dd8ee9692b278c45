package equiv

import (
	"fmt"
	"math"
	"slices"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TransferGroupContiguous is the differential spec of transfer.group_contiguous (docs/spec/transfer.md §2).
func TransferGroupContiguous() *Spec[spec.TransferGroupContiguousInput, spec.TransferGroupContiguousOutput] {
	return &Spec[spec.TransferGroupContiguousInput, spec.TransferGroupContiguousOutput]{
		Op:          catalog.TransferGroupContiguous(),
		Valid:       rapid.Custom(groupValid),
		Invalid:     rapid.Custom(groupInvalid),
		Boundary:    groupBoundary(),
		Regressions: groupRegressions(),
		Rejects: map[string]*spec.Sentinel{
			"group-length-mismatch":    spec.ErrLengthMismatch,
			"negative-after-max-int64": spec.ErrNegative,
		},
		Props: []Prop[spec.TransferGroupContiguousInput, spec.TransferGroupContiguousOutput]{
			{"concat-equals-input", groupConcat},
			{"equal-run-lengths", groupEqualLengths},
			{"plus-one-inside-runs", groupContiguity},
			{"maximal-at-boundaries", groupMaximal},
			{"runs-equal-one-plus-breaks", groupBreakCount},
			{"single-run-regroups-to-itself", groupSingleRun},
		},
	}
}

func groupValid(t *rapid.T) spec.TransferGroupContiguousInput {
	n := rapid.IntRange(0, 40).Draw(t, "n")
	src, dst := pairedIDs(t, n)
	// rapid leans towards the low end of a range, so 0 is the usual shape.
	switch rapid.IntRange(0, 9).Draw(t, "empty_side") {
	case 8:
		return spec.TransferGroupContiguousInput{Src: src, Dst: []int64{}}
	case 9:
		return spec.TransferGroupContiguousInput{Src: []int64{}, Dst: dst}
	}
	return spec.TransferGroupContiguousInput{Src: src, Dst: dst}
}

// pairedIDs draws n (src, dst) pairs shaped like a chunk's page pairs: runs
// of 1..8 pairs, each run continuing, jumping, stepping back or repeating on
// each side independently, so breaks fall on one side, the other or both.
// The ids sit near 0 or right under MaxInt64.
func pairedIDs(t *rapid.T, n int) (src, dst []int64) {
	return pageWalk(t, n, "src", true), pageWalk(t, n, "dst", true)
}

// pageWalk draws n non-negative ids as run after run of +1 steps, the step
// between runs being +1 (no break on this side), a jump, a step back, or 0.
// The ids start near 0, or when high is set one time in five end at or
// just below MaxInt64.
func pageWalk(t *rapid.T, n int, side string, high bool) []int64 {
	off := make([]int64, n)
	cur, left := int64(0), 0
	for i := range off {
		if left == 0 {
			left = rapid.IntRange(1, 8).Draw(t, side+"_run")
			if i > 0 {
				cur += rapid.SampledFrom([]int64{1, 1, 2, 9, -1, -3, 0}).Draw(t, side+"_step") - 1
			}
		}
		cur++
		off[i] = cur
		left--
	}
	lo, hi := int64(0), int64(0)
	if n > 0 {
		lo = slices.Min(off)
		hi = slices.Max(off) - lo
	}
	base := rapid.Int64Range(0, 1<<16).Draw(t, side+"_base")
	if high && rapid.IntRange(0, 4).Draw(t, side+"_high") == 4 {
		base = math.MaxInt64 - hi - rapid.Int64Range(0, 2).Draw(t, side+"_below_max")
	}
	for i := range off {
		off[i] += base - lo
	}
	return off
}

func groupInvalid(t *rapid.T) Bad[spec.TransferGroupContiguousInput] {
	n := rapid.IntRange(1, 30).Draw(t, "n")
	src, dst := pairedIDs(t, n)
	switch rapid.IntRange(0, 2).Draw(t, "violation") {
	case 0:
		m := rapid.IntRange(1, 40).Filter(func(m int) bool { return m != n }).Draw(t, "dst_len")
		return Bad[spec.TransferGroupContiguousInput]{spec.TransferGroupContiguousInput{Src: src, Dst: pageWalk(t, m, "dst2", true)}, spec.ErrLengthMismatch}
	case 1:
		src[rapid.IntRange(0, n-1).Draw(t, "at")] = rapid.Int64Range(math.MinInt64, -1).Draw(t, "negative")
	default:
		dst[rapid.IntRange(0, n-1).Draw(t, "at")] = rapid.Int64Range(math.MinInt64, -1).Draw(t, "negative")
	}
	// A negative id is rejected even with the other side empty.
	switch rapid.IntRange(0, 3).Draw(t, "drop_side") {
	case 2:
		if slices.ContainsFunc(src, func(v int64) bool { return v < 0 }) {
			dst = nil
		}
	case 3:
		if slices.ContainsFunc(dst, func(v int64) bool { return v < 0 }) {
			src = nil
		}
	}
	return Bad[spec.TransferGroupContiguousInput]{spec.TransferGroupContiguousInput{Src: src, Dst: dst}, spec.ErrNegative}
}

// groupBoundary: empty and one-sided inputs, one and two pairs, breaks on
// one side only, ids at MaxInt64 (where +1 does not exist, and wrapping +1
// is negative), runs of every length 1..9, a run of 1024 and 1024 runs of
// one; plus the spec's worked examples.
func groupBoundary() []Case[spec.TransferGroupContiguousInput] {
	type in = spec.TransferGroupContiguousInput
	const top = math.MaxInt64
	alternating := make([]int64, 1024)
	for i := range alternating {
		alternating[i] = int64(2 * i)
	}
	// Runs of 1, 2, …, 9 pairs, each starting 10 pages on: run lengths on
	// both sides of every small multiple a scanner might step by.
	var growing []int64
	for l := int64(1); l <= 9; l++ {
		for j := range l {
			growing = append(growing, 10*l+j)
		}
	}
	return []Case[spec.TransferGroupContiguousInput]{
		{"spec-two-runs-src-jump", in{Src: []int64{1, 2, 3, 7, 8}, Dst: []int64{10, 11, 12, 13, 14}}},
		{"spec-dst-jump", in{Src: []int64{1, 2, 3}, Dst: []int64{5, 6, 9}}},
		{"spec-descending-breaks", in{Src: []int64{4, 3}, Dst: []int64{1, 2}}},
		{"spec-duplicate-breaks", in{Src: []int64{5, 5}, Dst: []int64{1, 2}}},
		{"spec-empty", in{Src: []int64{}, Dst: []int64{}}},
		{"null-lists", in{}},
		{"src-only", in{Src: []int64{1, 2}}},
		{"dst-only", in{Dst: []int64{1, 2, 3}}},
		{"one-pair", in{Src: []int64{0}, Dst: []int64{0}}},
		{"two-pairs-one-run", in{Src: []int64{8, 9}, Dst: []int64{0, 1}}},
		{"two-pairs-dst-duplicate", in{Src: []int64{8, 9}, Dst: []int64{4, 4}}},
		{"src-run-dst-descending", in{Src: []int64{1, 2, 3}, Dst: []int64{3, 2, 1}}},
		{"run-ending-at-max-int64", in{Src: []int64{top - 2, top - 1, top}, Dst: []int64{0, 1, 2}}},
		{"max-int64-then-zero", in{Src: []int64{top, 0}, Dst: []int64{top - 1, top}}},
		// Rejected: MinInt64 is MaxInt64+1 in wrapping arithmetic, so a
		// twin that only checks where runs start would miss it.
		{"negative-after-max-int64", in{Src: []int64{top, math.MinInt64}, Dst: []int64{0, 1}}},
		{"runs-of-1-to-9-pairs", in{Src: growing, Dst: run(0, len(growing))}},
		{"four-pairs-one-run", in{Src: run(3, 4), Dst: run(9, 4)}},
		{"five-pairs-break-last", in{Src: []int64{3, 4, 5, 6, 8}, Dst: run(9, 5)}},
		{"1024-pairs-one-run", in{Src: run(100, 1024), Dst: run(7000, 1024)}},
		{"1024-pairs-1024-runs", in{Src: alternating, Dst: run(0, 1024)}},
	}
}

// groupRegressions: §2's buggy variant accepted unequal lengths and grouped
// by src alone; [1,2,3] / [5,6] came back as one silently misaligned run.
func groupRegressions() []Case[spec.TransferGroupContiguousInput] {
	return []Case[spec.TransferGroupContiguousInput]{
		{"group-length-mismatch", spec.TransferGroupContiguousInput{Src: []int64{1, 2, 3}, Dst: []int64{5, 6}}},
	}
}

// grouped reports whether §2 groups the input at all (both sides non-empty).
func grouped(in spec.TransferGroupContiguousInput) bool { return len(in.Src) > 0 && len(in.Dst) > 0 }

// groupConcat is §2 "concat(srcRuns) == src and concat(dstRuns) == dst":
// each run expands to SrcStart+j / DstStart+j, and the expansions
// concatenate to the input on both sides; nothing when a side is empty.
func groupConcat(_ spec.Limits, in spec.TransferGroupContiguousInput, out spec.TransferGroupContiguousOutput) error {
	var src, dst []int64
	for _, r := range out.Runs {
		if r.Count < 0 || int64(len(src))+r.Count > int64(len(in.Src)) {
			return fmt.Errorf("run %+v reaches past the %d input pairs", r, len(in.Src))
		}
		for j := range r.Count {
			src, dst = append(src, r.SrcStart+j), append(dst, r.DstStart+j)
		}
	}
	if !grouped(in) {
		if len(out.Runs) != 0 {
			return fmt.Errorf("one side empty but %d runs", len(out.Runs))
		}
		return nil
	}
	if !slices.Equal(src, in.Src) || !slices.Equal(dst, in.Dst) {
		return fmt.Errorf("runs expand to %v / %v, input is %v / %v", src, dst, in.Src, in.Dst)
	}
	return nil
}

// groupEqualLengths is §2 "len(srcRuns[k]) == len(dstRuns[k])". In the
// triple form one Count serves both sides, so what can still go wrong is a
// run that is empty (np.split never yields one) or a count total that
// differs from either side's length.
func groupEqualLengths(_ spec.Limits, in spec.TransferGroupContiguousInput, out spec.TransferGroupContiguousOutput) error {
	total := int64(0)
	for k, r := range out.Runs {
		if r.Count < 1 {
			return fmt.Errorf("run %d has count %d", k, r.Count)
		}
		total += r.Count
	}
	if grouped(in) && (total != int64(len(in.Src)) || total != int64(len(in.Dst))) {
		return fmt.Errorf("runs cover %d pairs of src %d / dst %d", total, len(in.Src), len(in.Dst))
	}
	return nil
}

// runOffsets returns each run's starting index in the input.
func runOffsets(out spec.TransferGroupContiguousOutput) []int64 {
	offs := make([]int64, len(out.Runs))
	at := int64(0)
	for k, r := range out.Runs {
		offs[k], at = at, at+r.Count
	}
	return offs
}

// groupContiguity is §2 "every run is +1-contiguous on both sides", read
// from the input segment each run covers rather than from its start fields.
func groupContiguity(_ spec.Limits, in spec.TransferGroupContiguousInput, out spec.TransferGroupContiguousOutput) error {
	if !grouped(in) {
		return nil
	}
	for k, off := range runOffsets(out) {
		for i := off + 1; i < off+out.Runs[k].Count && i < int64(len(in.Src)); i++ {
			if in.Src[i] != in.Src[i-1]+1 || in.Dst[i] != in.Dst[i-1]+1 {
				return fmt.Errorf("run %d steps from (%d,%d) to (%d,%d) at %d", k, in.Src[i-1], in.Dst[i-1], in.Src[i], in.Dst[i], i)
			}
		}
	}
	return nil
}

// groupMaximal is §2 maximality: between runs k and k+1 at least one side
// of the input does not step by +1.
func groupMaximal(_ spec.Limits, in spec.TransferGroupContiguousInput, out spec.TransferGroupContiguousOutput) error {
	if !grouped(in) {
		return nil
	}
	for k, off := range runOffsets(out) {
		if k == 0 || off >= int64(len(in.Src)) {
			continue
		}
		if in.Src[off] == in.Src[off-1]+1 && in.Dst[off] == in.Dst[off-1]+1 {
			return fmt.Errorf("runs %d and %d join at %d: (%d,%d) then (%d,%d)", k-1, k, off, in.Src[off-1], in.Dst[off-1], in.Src[off], in.Dst[off])
		}
	}
	return nil
}

// groupBreakCount is §2 "#runs == 1 + #breaks (0 for empty input)", the
// breaks counted here straight from the definition.
func groupBreakCount(_ spec.Limits, in spec.TransferGroupContiguousInput, out spec.TransferGroupContiguousOutput) error {
	want := 0
	if grouped(in) {
		want = 1
		for i := 1; i < len(in.Src); i++ {
			if in.Src[i]-in.Src[i-1] != 1 || in.Dst[i]-in.Dst[i-1] != 1 {
				want++
			}
		}
	}
	if len(out.Runs) != want {
		return fmt.Errorf("%d runs, want 1 + #breaks = %d", len(out.Runs), want)
	}
	return nil
}

// groupSingleRun is §2 "regrouping a single run gives that same run": every
// output run, expanded and grouped again, is exactly itself.
func groupSingleRun(lim spec.Limits, _ spec.TransferGroupContiguousInput, out spec.TransferGroupContiguousOutput) error {
	for k, r := range out.Runs {
		if r.Count < 1 || spec.AddOverflows(r.SrcStart, r.Count-1) || spec.AddOverflows(r.DstStart, r.Count-1) {
			return fmt.Errorf("run %d (%+v) is not a run of valid ids", k, r)
		}
		again, err := ref.TransferGroupContiguous(lim, spec.TransferGroupContiguousInput{Src: run(r.SrcStart, int(r.Count)), Dst: run(r.DstStart, int(r.Count))})
		if err != nil {
			return fmt.Errorf("regrouping run %d: %v", k, err)
		}
		if len(again.Runs) != 1 || again.Runs[0] != r {
			return fmt.Errorf("run %d (%+v) regroups to %+v", k, r, again.Runs)
		}
	}
	return nil
}
