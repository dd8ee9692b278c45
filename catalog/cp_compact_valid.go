package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// CPCompactValid registers cp.compact_valid (docs/spec/cp-layout.md §4).
func CPCompactValid() *Op[spec.CPCompactValidInput, spec.CPCompactValidOutput] {
	return &Op[spec.CPCompactValidInput, spec.CPCompactValidOutput]{
		OpName:  "cp.compact_valid",
		SpecRef: "cp-layout.md §4",
		Summary: "stable compaction of a rank's valid rows before MoE (padding is interleaved, never a suffix)",
		Ref:     ref.CPCompactValid,
		Fast:    fast.CPCompactValid,
		CUDA:    cuda.CPCompactValid,
		Sample:  spec.CPCompactValidInput{Layout: cpSampleLayout(), Rank: 1, X: patternRows(2, 12)},
		Shapes: []Shape[spec.CPCompactValidInput]{
			// The headline: one rank of bs=10, cp=8 holding 128K
			// rows × 656 B; its input is the yardstick.
			{Name: "bs10-cp8-rank3-128K-rows-656B", CopyBytes: 128 << 10 * mlaRowBytes, Make: func() spec.CPCompactValidInput {
				sp, x := rankShape(3)
				return spec.CPCompactValidInput{Layout: sp, Rank: 3, X: x}
			}},
		},
	}
}

// CPRestorePadded registers cp.restore_padded (docs/spec/cp-layout.md §4).
func CPRestorePadded() *Op[spec.CPRestorePaddedInput, spec.CPRestorePaddedOutput] {
	return &Op[spec.CPRestorePaddedInput, spec.CPRestorePaddedOutput]{
		OpName:  "cp.restore_padded",
		SpecRef: "cp-layout.md §4",
		Summary: "put a rank's MoE output rows back at their valid local rows, padding rows zero",
		Ref:     ref.CPRestorePadded,
		Fast:    fast.CPRestorePadded,
		CUDA:    cuda.CPRestorePadded,
		Sample:  spec.CPRestorePaddedInput{Layout: cpSampleLayout(), Rank: 1, Y: patternRows(3, 6)},
		Shapes: []Shape[spec.CPRestorePaddedInput]{
			{Name: "bs10-cp8-rank3-128K-rows-656B", CopyBytes: 128 << 10 * mlaRowBytes, Make: func() spec.CPRestorePaddedInput {
				sp := cpBenchLayout(units1M)
				return spec.CPRestorePaddedInput{Layout: sp, Rank: 3, Y: patternRows(mlaRowBytes, mustBuild(sp).Rv(3))}
			}},
		},
	}
}
