package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// finiteBF16Rows builds n patterned 1152-byte bf16 rows, every value finite
// (the exponent's top bit cleared).
func finiteBF16Rows(n int) spec.Rows {
	x := patternRows(spec.MLABF16RowBytes, n)
	for i := 1; i < len(x.B); i += 2 {
		x.B[i] &= 0xBF
	}
	return x
}

// composeSlots returns request b's prefix and current slots when every
// request owns a contiguous span of p+l slots after the padding page.
func composeSlots(ps int64, b, p, l int) ([][]int64, [][]int64) {
	pre, cur := make([][]int64, b), make([][]int64, b)
	at := ps
	for i := range b {
		for range p {
			pre[i] = append(pre[i], at)
			at++
		}
		cur[i] = []int64{}
		for range l {
			cur[i] = append(cur[i], at)
			at++
		}
	}
	return pre, cur
}

// FP8ComposeCurrent registers fp8.compose_current (docs/spec/cp-layout.md §7.5).
func FP8ComposeCurrent() *Op[spec.FP8ComposeCurrentInput, spec.FP8ComposeCurrentOutput] {
	return &Op[spec.FP8ComposeCurrentInput, spec.FP8ComposeCurrentOutput]{
		OpName:  "fp8.compose_current",
		SpecRef: "cp-layout.md §7.5",
		Summary: "flattened FP8 K buffer: prefix rows from cache slots, current rows quantized from fresh k (three explicit contracts)",
		Ref:     ref.FP8ComposeCurrent,
		Fast:    fast.FP8ComposeCurrent,
		CUDA:    cuda.FP8ComposeCurrent,
		Sample: func() spec.FP8ComposeCurrentInput {
			pre, cur := composeSlots(2, 1, 2, 1)
			return spec.FP8ComposeCurrentInput{Pool: fp8Pool(2, 4), PrefixSlots: pre, CurrentSlots: cur, Lens: []int{1}, Contract: spec.ContractGlobalValid, Current: finiteBF16Rows(1)}
		}(),
		Shapes: []Shape[spec.FP8ComposeCurrentInput]{
			// bs=4: 8K prefix rows and 1K current rows each, global valid.
			{Name: "bs4-prefix8K-current1K-ps64", Make: func() spec.FP8ComposeCurrentInput {
				pre, cur := composeSlots(64, 4, 8192, 1024)
				return spec.FP8ComposeCurrentInput{Pool: fp8Pool(64, 4*9216), PrefixSlots: pre, CurrentSlots: cur, Lens: []int{1024, 1024, 1024, 1024}, Contract: spec.ContractGlobalValid, Current: finiteBF16Rows(4096)}
			}},
		},
	}
}
