package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// CPSplit registers cp.split (docs/spec/cp-layout.md §1).
func CPSplit() *Op[spec.CPSplitInput, spec.CPSplitOutput] {
	return &Op[spec.CPSplitInput, spec.CPSplitOutput]{
		OpName:  "cp.split",
		SpecRef: "cp-layout.md §1",
		Summary: "zigzag split of a batch's rows into every CP rank's lane-slot rows (padding filled), with position ids",
		Ref:     ref.CPSplit,
		Fast:    fast.CPSplit,
		CUDA:    cuda.CPSplit,
		Sample: spec.CPSplitInput{Layout: cpSampleLayout(), X: patternRows(2, 12), Pad: []byte{0xEE, 0xEE},
			Prefix: []int64{0, 5}},
		Shapes: []Shape[spec.CPSplitInput]{
			// bs=10, cp=8, 128K compute rows of 656 B out: the output is the yardstick.
			{Name: "bs10-cp8-128K-rows-656B", CopyBytes: 128 << 10 * mlaRowBytes, Make: func() spec.CPSplitInput {
				sp := cpBenchLayout(units128K)
				lay := mustBuild(sp)
				return spec.CPSplitInput{Layout: sp, X: patternRows(mlaRowBytes, lay.TotalValid()),
					Pad: make([]byte, mlaRowBytes), Prefix: make([]int64, lay.B())}
			}},
		},
	}
}
