package catalog

import (
	"math/rand/v2"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TransferGroupContiguous registers transfer.group_contiguous (docs/spec/transfer.md §2).
func TransferGroupContiguous() *Op[spec.TransferGroupContiguousInput, spec.TransferGroupContiguousOutput] {
	return &Op[spec.TransferGroupContiguousInput, spec.TransferGroupContiguousOutput]{
		OpName:  "transfer.group_contiguous",
		SpecRef: "transfer.md §2",
		Summary: "merge (src page, dst page) pairs into maximal runs contiguous on both sides",
		Ref:     ref.TransferGroupContiguous,
		Fast:    fast.TransferGroupContiguous,
		Sample:  spec.TransferGroupContiguousInput{Src: []int64{1, 2, 3, 7, 8}, Dst: []int64{10, 11, 12, 13, 14}},
		Shapes: []Shape[spec.TransferGroupContiguousInput]{
			{Name: "1M-pairs-runs-1-64", Make: func() spec.TransferGroupContiguousInput {
				src, dst := pagePairs(1<<20, 64, rand.New(rand.NewPCG(3, 4)))
				return spec.TransferGroupContiguousInput{Src: src, Dst: dst}
			}},
			{Name: "1024-pairs-4-runs", Make: func() spec.TransferGroupContiguousInput {
				src, dst := pagePairs(1024, 256, rand.New(rand.NewPCG(5, 6)))
				return spec.TransferGroupContiguousInput{Src: src, Dst: dst}
			}},
			{Name: "1M-pairs-one-run", Make: func() spec.TransferGroupContiguousInput {
				return spec.TransferGroupContiguousInput{Src: contiguousPages(5000, 1<<20), Dst: contiguousPages(90000, 1<<20)}
			}},
		},
	}
}

// pagePairs builds n (prefill, decode) page pairs the way a fragmented pool
// hands them out: runs of 1..maxRun pages (exactly maxRun when maxRun > 64,
// for the few-runs chunk shape), each run starting at a fresh place on both
// sides; decode pages stay distinct.
func pagePairs(n, maxRun int, rng *rand.Rand) (src, dst []int64) {
	src, dst = make([]int64, 0, n), make([]int64, 0, n)
	s, d := int64(1000), int64(50000)
	for len(src) < n {
		l := maxRun
		if maxRun <= 64 {
			l = 1 + rng.IntN(maxRun)
		}
		l = min(l, n-len(src))
		s += 1 + rng.Int64N(4096)
		d += 1 + rng.Int64N(64)
		for i := range l {
			src, dst = append(src, s+int64(i)), append(dst, d+int64(i))
		}
		s, d = s+int64(l), d+int64(l)
	}
	return src, dst
}
