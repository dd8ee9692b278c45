package ref

import (
	"fmt"

	"github.com/kvtwin/kvtwin/spec"
)

// ValidateTransferGroupContiguous checks in against docs/spec/transfer.md §2 in the contract's
// order: unequal non-empty lengths first, then negative ids, every src id
// before any dst id. Exactly one empty side is not an error (newer upstream
// returns "nothing to transfer").
func ValidateTransferGroupContiguous(in spec.TransferGroupContiguousInput) error {
	if n, m := len(in.Src), len(in.Dst); n > 0 && m > 0 && n != m {
		return spec.Reject(spec.ErrLengthMismatch, "dst", m, fmt.Sprintf("== len(src) (%d)", n))
	}
	if err := CheckNonNegative("src", in.Src); err != nil {
		return err
	}
	return CheckNonNegative("dst", in.Dst)
}

// TransferGroupContiguous merges page pairs into the fewest runs contiguous on both
// sides (docs/spec/transfer.md §2). A break falls before i exactly when src or dst does
// not step by +1; runs are the maximal segments between breaks.
func TransferGroupContiguous(_ spec.Limits, in spec.TransferGroupContiguousInput) (spec.TransferGroupContiguousOutput, error) {
	if err := ValidateTransferGroupContiguous(in); err != nil {
		return spec.TransferGroupContiguousOutput{}, err
	}
	if len(in.Src) == 0 || len(in.Dst) == 0 {
		return spec.TransferGroupContiguousOutput{Runs: []spec.Run{}}, nil
	}
	return spec.TransferGroupContiguousOutput{Runs: groupRuns(in.Src, in.Dst)}, nil
}

// groupRuns is §2's grouping in upstream's numpy form: diff both sides, take
// the break positions where either diff is not 1, split both lists there, and
// describe each (srcRun, dstRun) pair as a Run.
// Preconditions: len(src) == len(dst) and no id is negative (so that no diff
// overflows). An empty input yields an empty, non-nil list.
func groupRuns(src, dst []int64) []spec.Run {
	if len(src) == 0 {
		return []spec.Run{}
	}
	srcDiff, dstDiff := diff(src), diff(dst)
	var breaks []int
	for i := range srcDiff {
		if srcDiff[i] != 1 || dstDiff[i] != 1 {
			breaks = append(breaks, i+1)
		}
	}
	srcRuns, dstRuns := split(src, breaks), split(dst, breaks)
	runs := make([]spec.Run, len(srcRuns))
	for k := range srcRuns {
		runs[k] = spec.Run{SrcStart: srcRuns[k][0], DstStart: dstRuns[k][0], Count: int64(len(srcRuns[k]))}
	}
	return runs
}

// diff is np.diff: out[i] = xs[i+1] - xs[i].
func diff(xs []int64) []int64 {
	out := make([]int64, len(xs)-1)
	for i := range out {
		out[i] = xs[i+1] - xs[i]
	}
	return out
}

// split is np.split: the segments of xs between consecutive break indices.
func split(xs []int64, breaks []int) [][]int64 {
	var parts [][]int64
	start := 0
	for _, b := range breaks {
		parts = append(parts, xs[start:b])
		start = b
	}
	return append(parts, xs[start:])
}
