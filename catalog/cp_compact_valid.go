package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/ref"
)

// CPCompactValid registers cp.compact_valid (docs/spec/cp-layout.md §4).
func CPCompactValid() *Op[ref.CPCompactValidInput, ref.CPCompactValidOutput] {
	return &Op[ref.CPCompactValidInput, ref.CPCompactValidOutput]{
		OpName:  "cp.compact_valid",
		SpecRef: "cp-layout.md §4",
		Summary: "stable compaction of a rank's valid rows before MoE (padding is interleaved, never a suffix)",
		Ref:     ref.CPCompactValid,
		Fast:    fast.CPCompactValid,
		CUDA:    cuda.CPCompactValid,
		Sample:  ref.CPCompactValidInput{Layout: cpSampleLayout(), Rank: 1, X: patternRows(2, 12)},
		Shapes: []Shape[ref.CPCompactValidInput]{
			// The headline: one rank of bs=10, cp=8 holding 128K
			// rows × 656 B; its input is the yardstick.
			{Name: "bs10-cp8-rank3-128K-rows-656B", CopyBytes: 128 << 10 * mlaRowBytes, Make: func() ref.CPCompactValidInput {
				sp, x := rankShape(3)
				return ref.CPCompactValidInput{Layout: sp, Rank: 3, X: x}
			}},
		},
	}
}

// CPRestorePadded registers cp.restore_padded (docs/spec/cp-layout.md §4).
func CPRestorePadded() *Op[ref.CPRestorePaddedInput, ref.CPRestorePaddedOutput] {
	return &Op[ref.CPRestorePaddedInput, ref.CPRestorePaddedOutput]{
		OpName:  "cp.restore_padded",
		SpecRef: "cp-layout.md §4",
		Summary: "put a rank's MoE output rows back at their valid local rows, padding rows zero",
		Ref:     ref.CPRestorePadded,
		Fast:    fast.CPRestorePadded,
		CUDA:    cuda.CPRestorePadded,
		Sample:  ref.CPRestorePaddedInput{Layout: cpSampleLayout(), Rank: 1, Y: patternRows(3, 6)},
		Shapes: []Shape[ref.CPRestorePaddedInput]{
			{Name: "bs10-cp8-rank3-128K-rows-656B", CopyBytes: 128 << 10 * mlaRowBytes, Make: func() ref.CPRestorePaddedInput {
				sp := cpBenchLayout(units1M)
				return ref.CPRestorePaddedInput{Layout: sp, Rank: 3, Y: patternRows(mlaRowBytes, mustBuild(sp).Rv(3))}
			}},
		},
	}
}
