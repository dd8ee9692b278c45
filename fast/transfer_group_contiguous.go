package fast

import (
	"math/bits"
	"runtime"
	"sync"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TransferGroupContiguous is the Run-emitter twin of ref.TransferGroupContiguous
// (docs/spec/transfer.md §2 "fast"): no diff or break arrays. A counting pass sizes
// the output exactly and an emitting pass fills it (see groupRuns for why
// not a single pass). Below parallelMinPairs pairs the output is the only
// allocation; from there both passes are split across cores, adding a few
// constant-size allocations (the segment plan and goroutine closures).
func TransferGroupContiguous(_ spec.Limits, in spec.TransferGroupContiguousInput) (spec.TransferGroupContiguousOutput, error) {
	src, dst := in.Src, in.Dst
	if len(src) == 0 || len(dst) == 0 || len(src) != len(dst) {
		if err := ref.ValidateTransferGroupContiguous(in); err != nil {
			return spec.TransferGroupContiguousOutput{}, err
		}
		return spec.TransferGroupContiguousOutput{Runs: []spec.Run{}}, nil
	}
	runs, ok := groupRuns(src, dst, segmentsFor(len(src)))
	if !ok {
		return spec.TransferGroupContiguousOutput{}, ref.ValidateTransferGroupContiguous(in)
	}
	return spec.TransferGroupContiguousOutput{Runs: runs}, nil
}

// parallelMinPairs is the input size from which TransferGroupContiguous splits the
// work across cores: both passes are memory-bound (one core streams the
// 16 MiB of 1M pairs in ~0.9 ms here), and below ~128K pairs the goroutine
// hand-off costs more than the second core saves.
const parallelMinPairs = 1 << 17

// maxSegments caps the goroutines one TransferGroupContiguous call uses.
const maxSegments = 8

// segmentsFor returns how many segments to split n pairs into: one per
// available core, each at least parallelMinPairs/2 pairs, at most maxSegments.
func segmentsFor(n int) int {
	if n < parallelMinPairs {
		return 1
	}
	return max(1, min(runtime.GOMAXPROCS(0), maxSegments, n/(parallelMinPairs/2)))
}

// groupRuns returns the §2 runs of two equal-length, non-empty lists, or
// ok = false when some id is negative (the caller reports which).
//
// It counts the runs first and allocates the exact output rather than
// appending in one pass to a len(src)-capacity buffer: at 1M pairs in runs
// of 1..64 the bound is 24 MiB of fresh memory against 0.75 MiB, and the
// one-pass form measured slower (see fast/transfer_group_contiguous_test.go).
func groupRuns(src, dst []int64, segs int) (runs []spec.Run, ok bool) {
	if segs > 1 {
		return groupRunsParallel(src, dst, segs)
	}
	runs = make([]spec.Run, countStarts(src, dst, 0, len(src)))
	return runs, fillRuns(runs, src, dst, 0, len(src)) >= 0
}

// segmentPlan is the state of one groupRunsParallel call, one allocation.
type segmentPlan struct {
	src, dst []int64
	runs     []spec.Run
	bounds   [maxSegments + 1]int // segment k is pairs [bounds[k], bounds[k+1])
	starts   [maxSegments + 1]int // starts[k]: index in runs of segment k's first run
	signs    [maxSegments]int64   // OR of the ids each segment checked
	wg       sync.WaitGroup
}

// groupRunsParallel cuts the pairs into segs segments counted and then
// filled concurrently: a run belongs to the segment holding its first pair
// and is filled by that segment's goroutine, even when it extends into the
// next segment. Beyond the output it allocates the segmentPlan and one
// closure per extra goroutine and phase: constant size, independent of the
// input. The goroutines end before it returns.
func groupRunsParallel(src, dst []int64, segs int) ([]spec.Run, bool) {
	p := &segmentPlan{src: src, dst: dst}
	for k := range segs + 1 {
		p.bounds[k] = k * len(src) / segs
	}
	p.each(segs, false)
	for k := range segs {
		p.starts[k+1] += p.starts[k]
	}
	p.runs = make([]spec.Run, p.starts[segs])
	p.each(segs, true)
	for _, sg := range p.signs[:segs] {
		if sg < 0 {
			return nil, false
		}
	}
	return p.runs, true
}

// each runs segment 0 here and the others on their own goroutines, counting
// runs (fill = false) or filling them, and returns when all have finished.
func (p *segmentPlan) each(segs int, fill bool) {
	for k := 1; k < segs; k++ {
		p.wg.Go(func() { p.segment(k, fill) })
	}
	p.segment(0, fill)
	p.wg.Wait()
}

func (p *segmentPlan) segment(k int, fill bool) {
	lo, hi := p.bounds[k], p.bounds[k+1]
	if fill {
		p.signs[k] = fillRuns(p.runs[p.starts[k]:p.starts[k+1]], p.src, p.dst, lo, hi)
	} else {
		p.starts[k+1] = countStarts(p.src, p.dst, lo, hi)
	}
}

// step is zero exactly when both sides step by +1 from (ps, pd) to (s, d).
// For non-negative ids neither subtraction overflows; negative ids are
// caught per run by fillRuns, and both passes use this same predicate, so
// they agree on the run count whatever the ids.
func step(ps, pd, s, d int64) int64 { return (s - ps - 1) | (d - pd - 1) }

// countStarts counts the runs that start in [lo, hi): pair 0, and every
// pair where src or dst does not step by +1 from its predecessor.
// Preconditions: len(src) == len(dst) > 0, 0 <= lo <= hi <= len(src).
func countStarts(src, dst []int64, lo, hi int) int {
	dst = dst[:len(src)]
	starts := 0
	if lo == 0 && hi > 0 {
		starts, lo = 1, 1
	}
	for i := lo; i < hi; i++ {
		if step(src[i-1], dst[i-1], src[i], dst[i]) != 0 {
			starts++
		}
	}
	return starts
}

// fillRuns writes the runs starting in [lo, hi) into runs, whose length is
// their count from countStarts, and returns the OR of the ids it checked:
// negative exactly when some id is. Checking each run's first and last ids
// suffices: inside a run each id is the previous plus one (wrapping), so a
// negative id inside a run that starts non-negative means a wrap past
// MaxInt64, and then the last id is negative too.
func fillRuns(runs []spec.Run, src, dst []int64, lo, hi int) int64 {
	dst = dst[:len(src)]
	start := lo
	if lo > 0 { // skip the tail of the run the previous segment fills
		start = runEnd(src, dst, lo)
	}
	var signs int64
	for k := 0; start < hi; k++ {
		end := runEnd(src, dst, start+1)
		signs |= src[start] | dst[start] | src[end-1] | dst[end-1]
		runs[k] = spec.Run{SrcStart: src[start], DstStart: dst[start], Count: int64(end - start)}
		start = end
	}
	return signs
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
