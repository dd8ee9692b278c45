package fast

import (
	"math/bits"

	"github.com/kvtwin/kvtwin/ref"
)

// GroupContiguous is the Run-emitter twin of ref.GroupContiguous
// (transfer.md §2 "fast"): no diff or break arrays and exactly one
// allocation, the output. A branch-free counting pass sizes it exactly and
// an emitting pass fills it (see groupRuns for why not a single pass).
func GroupContiguous(_ ref.Limits, in ref.GroupContiguousInput) (ref.GroupContiguousOutput, error) {
	src, dst := in.Src, in.Dst
	if len(src) == 0 || len(dst) == 0 || len(src) != len(dst) {
		if err := ref.ValidateGroupContiguous(in); err != nil {
			return ref.GroupContiguousOutput{}, err
		}
		return ref.GroupContiguousOutput{Runs: []ref.Run{}}, nil
	}
	runs, ok := groupRuns(src, dst)
	if !ok {
		return ref.GroupContiguousOutput{}, ref.ValidateGroupContiguous(in)
	}
	return ref.GroupContiguousOutput{Runs: runs}, nil
}

// groupRuns returns the §2 runs of two equal-length, non-empty lists, or
// ok = false when some id is negative (the caller reports which).
//
// It counts the breaks first and allocates the exact output rather than
// appending in one pass to a len(src)-capacity buffer: at 1M pairs in runs
// of 1..64 the bound is 24 MiB of fresh memory against 0.75 MiB, and the
// one-pass form measured slower (see fast/group_test.go).
func groupRuns(src, dst []int64) (runs []ref.Run, ok bool) {
	runs = make([]ref.Run, countBreaks(src, dst)+1)
	if !fillRuns(runs, src, dst) {
		return nil, false
	}
	return runs, true
}

// step is zero exactly when both sides step by +1 from (ps, pd) to (s, d).
// For non-negative ids neither subtraction overflows; negative ids are
// caught per run by fillRuns, and both passes use this same predicate, so
// they agree on the run count whatever the ids.
func step(ps, pd, s, d int64) int64 { return (s - ps - 1) | (d - pd - 1) }

// countBreaks counts the positions where src or dst does not step by +1.
// Preconditions: len(src) == len(dst) > 0.
func countBreaks(src, dst []int64) int {
	dst = dst[:len(src)]
	breaks := 0
	ps, pd := src[0], dst[0]
	for i := 1; i < len(src); i++ {
		s, d := src[i], dst[i]
		if step(ps, pd, s, d) != 0 {
			breaks++
		}
		ps, pd = s, d
	}
	return breaks
}

// fillRuns writes the runs of src/dst into runs, whose length is the run
// count from countBreaks, and reports whether every id is non-negative.
// Checking each run's first and last ids suffices: inside a run each id is
// the previous plus one (wrapping), so a negative id inside a run that
// starts non-negative means a wrap past MaxInt64, and then the last id is
// negative too.
func fillRuns(runs []ref.Run, src, dst []int64) bool {
	dst = dst[:len(src)]
	var signs int64
	for k, start := 0, 0; start < len(src); k++ {
		end := runEnd(src, dst, start+1)
		signs |= src[start] | dst[start] | src[end-1] | dst[end-1]
		runs[k] = ref.Run{SrcStart: src[start], DstStart: dst[start], Count: int64(end - start)}
		start = end
	}
	return signs >= 0
}

// runEnd returns the first index >= i where src or dst breaks, or
// len(src). It tests four steps per branch (runs average tens of pages) and
// locates the break inside the group that has one without branching, so a
// run costs one mispredicted branch, not two.
func runEnd(src, dst []int64, i int) int {
	dst = dst[:len(src)]
	for ; i+3 < len(src); i += 4 {
		s, d := src[i-1:i+4], dst[i-1:i+4]
		z0, z1 := step(s[0], d[0], s[1], d[1]), step(s[1], d[1], s[2], d[2])
		z2, z3 := step(s[2], d[2], s[3], d[3]), step(s[3], d[3], s[4], d[4])
		if z0|z1|z2|z3 != 0 {
			mask := nonZero(z0) | nonZero(z1)<<1 | nonZero(z2)<<2 | nonZero(z3)<<3
			return i + bits.TrailingZeros8(mask)
		}
	}
	for i < len(src) && step(src[i-1], dst[i-1], src[i], dst[i]) == 0 {
		i++
	}
	return i
}

// nonZero is 1 when z != 0, else 0, without a branch.
func nonZero(z int64) uint8 { return uint8(uint64(z|-z) >> 63) }
