package fast

import (
	"math"
	"runtime"
	"sync"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// MQAChunkedTopK is the twin of ref.MQAChunkedTopK (docs/spec/cp-layout.md §8.3).
//
// Every row's result depends only on that row's logits, window and offset
// (P8.1: chunked == unchunked), so the rows are not walked chunk by chunk:
// each row reads its own offset by its absolute row index, which is what
// "row-addressed" means. Per row it makes a partial selection instead of a
// sort: each candidate becomes one distinct uint64 (sort key in the high
// half, inverted window position in the low half, so larger means earlier
// in §8.3's order and a smaller j wins a tie), a quickselect on a copy
// finds the topk-th largest, and one scan of the keys in j order emits
// every candidate at or above it — already ascending in j, so no sort.
//
// Memory: the output is one flat []int32 that the rows slice, and each
// worker has one scratch buffer of twice its widest window; nothing is
// allocated per row. Large inputs are split across cores by rows; the
// goroutines end before the call returns.
func MQAChunkedTopK(lim spec.Limits, in spec.MQAChunkedTopKInput) (spec.MQAChunkedTopKOutput, error) {
	if _, err := ref.ValidateMQAChunkedTopK(lim, in); err != nil {
		return spec.MQAChunkedTopKOutput{}, err
	}
	q, k := len(in.Logits), int(in.TopK)
	flat := make([]int32, q*k)
	rows := make([][]int32, q)
	for r := range rows {
		rows[r] = flat[r*k : (r+1)*k : (r+1)*k]
	}
	segs := topkSegments(in)
	if segs == 1 {
		selectRows(in, rows, 0, q)
		return spec.MQAChunkedTopKOutput{Indices: rows}, nil
	}
	var wg sync.WaitGroup
	for s := 1; s < segs; s++ {
		wg.Go(func() { selectRows(in, rows, s*q/segs, (s+1)*q/segs) })
	}
	selectRows(in, rows, 0, q/segs)
	wg.Wait()
	return spec.MQAChunkedTopKOutput{Indices: rows}, nil
}

// topkParallelMinWork is the candidate count from which the rows are split
// across cores: below it a goroutine hand-off costs more than it saves.
const topkParallelMinWork = 1 << 16

// topkSegments is how many row groups to run concurrently: one per core
// (at most 8), each with at least topkParallelMinWork/2 candidates on
// average, never more than there are rows.
func topkSegments(in spec.MQAChunkedTopKInput) int {
	var work int64
	for r := range in.KS {
		work += in.KE[r] - in.KS[r]
	}
	if work < topkParallelMinWork {
		return 1
	}
	return int(max(1, min(int64(runtime.GOMAXPROCS(0)), 8, int64(len(in.KS)), work/(topkParallelMinWork/2))))
}

// selectRows fills rows [lo, hi) with one pair of scratch buffers for all
// of them.
func selectRows(in spec.MQAChunkedTopKInput, rows [][]int32, lo, hi int) {
	k := in.TopK
	widest := int64(0)
	for r := lo; r < hi; r++ {
		if n := in.KE[r] - in.KS[r]; n > k {
			widest = max(widest, n)
		}
	}
	scratch := make([]uint64, 2*widest)
	keys, work := scratch[:widest:widest], scratch[widest:]
	for r := lo; r < hi; r++ {
		var add int32
		if len(in.Offset) > 0 {
			add = in.Offset[r] // row-addressed: the absolute row, whatever the chunk
		}
		selectRow(rows[r], in.Logits[r][in.KS[r]:in.KE[r]], add, keys, work)
	}
}

// selectRow writes one row's §8.3 result into dst (len topk) for the
// window w (w[i] is candidate j = ks + i, emitted as i + add). keys holds
// the candidates' composites in window order for the emitting scan; work
// is the copy the quickselect reorders.
func selectRow(dst []int32, w []float32, add int32, keys, work []uint64) {
	n, k := len(w), len(dst)
	if n <= k {
		for i := range n {
			dst[i] = int32(i) + add
		}
		for i := n; i < k; i++ {
			dst[i] = -1
		}
		return
	}
	keys, work = keys[:n], work[:n]
	for i, x := range w {
		keys[i] = uint64(sortKey(x))<<32 | uint64(^uint32(i))
	}
	copy(work, keys)
	t := kthLargest(work, k)
	o := 0
	for i, c := range keys {
		if c >= t {
			dst[o] = int32(i) + add
			o++
		}
	}
}

// sortKey is ref.MQATopKKey without branches on the sign: ±0 is mapped to
// +0 first, then a negative number's bits are inverted and a positive
// number's sign bit set; NaN (either sign) is 0. TestSortKeyMatchesRef
// compares the two.
func sortKey(x float32) uint32 {
	u := math.Float32bits(x)
	if u<<1 == 0 {
		u = 0 // −0 == +0
	}
	if u&0x7FFFFFFF > 0x7F800000 {
		return 0 // NaN ranks below −Inf
	}
	neg := uint32(int32(u) >> 31) // all ones for negative numbers
	return u ^ (neg | 0x80000000)
}

// kthLargest returns the k-th largest (1-based) of distinct values,
// reordering a: Hoare-partition quickselect, median-of-three pivots.
func kthLargest(a []uint64, k int) uint64 {
	lo, hi, target := 0, len(a)-1, k-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		p := median3(a[lo], a[mid], a[hi])
		i, j := lo, hi
		for i <= j {
			for a[i] > p {
				i++
			}
			for a[j] < p {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		switch {
		case target <= j:
			hi = j
		case target >= i:
			lo = i
		default:
			return a[target] // j < target < i: the pivot's own slot
		}
	}
	return a[target]
}

func median3(a, b, c uint64) uint64 {
	if a > b {
		a, b = b, a
	}
	if b > c {
		b = c
	}
	return max(a, b)
}
