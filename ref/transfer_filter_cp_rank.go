package ref

import (
	"slices"

	"github.com/kvtwin/kvtwin/spec"
)

// RankPageBounds returns rank's half-open share [ls, le) of total pages split
// over size ranks, the first total%size ranks taking one extra (docs/spec/transfer.md §1.2 step 3).
// Preconditions: total >= 0, 0 <= rank < size.
func RankPageBounds(total int64, rank, size int) (int64, int64) {
	base, rem := total/int64(size), total%int64(size)
	r := int64(rank)
	ls := r*base + min(r, rem)
	le := ls + base
	if r < rem {
		le++
	}
	return ls, le
}

// TransferFilterCPRank returns the pages CP rank cpRank sends for one chunk and their
// absolute request positions (docs/spec/transfer.md §1). The ValueRange policy is the
// old np.isin form kept verbatim, as the notes' differential test kept it:
// build the range mask, collect the masked values, then re-mask by membership.
func TransferFilterCPRank(_ spec.Limits, in spec.TransferFilterCPRankInput) (spec.TransferFilterCPRankOutput, error) {
	policy, total, err := validateFilterCPRank(in)
	if err != nil {
		return spec.TransferFilterCPRankOutput{}, err
	}
	kv, s, n := in.KV, in.ChunkPageStart, int64(len(in.KV))
	if policy == spec.PositionRange {
		ls, le := RankPageBounds(total, in.CPRank, in.CPSize)
		first, last := max(ls, s)-s, min(le, s+n)-s
		if first >= last {
			return emptyFilter(), nil
		}
		return spanOf(kv, s, first, last), nil
	}
	if in.CPSize == 1 {
		return spanOf(kv, s, 0, n), nil
	}
	if n == 0 {
		return emptyFilter(), nil
	}
	ls, le := RankPageBounds(total, in.CPRank, in.CPSize)
	// The spec's lo = m+ls <= v < hi = m+le, written on v-m (>= 0) so that
	// ids near MaxInt64 cannot overflow the bounds.
	m := slices.Min(kv)
	mask := make([]bool, n)
	for i, v := range kv {
		mask[i] = ls <= v-m && v-m < le
	}
	// np.isin(kv, kv[mask]): sorted unique rank values, then membership.
	var rankVals []int64
	for i, v := range kv {
		if mask[i] {
			rankVals = append(rankVals, v)
		}
	}
	slices.Sort(rankVals)
	rankVals = slices.Compact(rankVals)
	mask2 := make([]bool, n)
	for i, v := range kv {
		_, mask2[i] = slices.BinarySearch(rankVals, v)
	}
	first, last := int64(-1), int64(-1)
	for i, in := range mask2 {
		if in {
			if first < 0 {
				first = int64(i)
			}
			last = int64(i) + 1
		}
	}
	if first < 0 {
		return emptyFilter(), nil
	}
	return spanOf(kv, s, first, last), nil
}

func emptyFilter() spec.TransferFilterCPRankOutput {
	return spec.TransferFilterCPRankOutput{Owned: []int64{}, Positions: []int64{}}
}

// spanOf copies kv[first:last] and numbers it from absolute position s+first.
func spanOf(kv []int64, s, first, last int64) spec.TransferFilterCPRankOutput {
	out := spec.TransferFilterCPRankOutput{Owned: make([]int64, 0, last-first), Positions: make([]int64, 0, last-first)}
	for i := first; i < last; i++ {
		out.Owned = append(out.Owned, kv[i])
		out.Positions = append(out.Positions, s+i)
	}
	return out
}
