package fast

import "github.com/kvtwin/kvtwin/ref"

// FilterCPRank is the one-pass twin of ref.FilterCPRank (transfer.md §1.2
// "Fast path"): one pass for min(kv), then a forward scan for the first and
// a backward scan for the last in-range id. No mask, no sort, no set; Owned
// aliases in.KV (a sub-slice) and only Positions is allocated.
func FilterCPRank(_ ref.Limits, in ref.FilterCPRankInput) (ref.FilterCPRankOutput, error) {
	policy, total, err := ref.CheckFilterCPRankScalars(in)
	if err != nil {
		return ref.FilterCPRankOutput{}, err
	}
	kv, s, n := in.KV, in.ChunkPageStart, int64(len(in.KV))
	if policy == ref.PositionRange || in.CPSize == 1 || n == 0 {
		if err := ref.CheckNonNegative("kv", kv); err != nil {
			return ref.FilterCPRankOutput{}, err
		}
	}
	if policy == ref.PositionRange {
		ls, le := ref.RankPageBounds(total, in.CPRank, in.CPSize)
		return span(kv, s, max(ls, s)-s, min(le, s+n)-s), nil
	}
	if in.CPSize == 1 {
		return span(kv, s, 0, n), nil
	}
	if n == 0 {
		return span(kv, s, 0, 0), nil
	}
	ls, le := ref.RankPageBounds(total, in.CPRank, in.CPSize)
	m := minOf(kv)
	if m < 0 { // the min pass doubles as the negative-id check
		return ref.FilterCPRankOutput{}, ref.CheckNonNegative("kv", kv)
	}
	// In range iff ls <= v-m < le; one unsigned compare covers both ends.
	lo, width := m+ls, uint64(le-ls)
	if ls > 0 && m > (1<<63-1)-ls {
		return span(kv, s, 0, 0), nil // lo beyond every representable id
	}
	first := int64(-1)
	for i, v := range kv {
		if uint64(v-lo) < width {
			first = int64(i)
			break
		}
	}
	if first < 0 {
		return span(kv, s, 0, 0), nil
	}
	last := first + 1
	for i := n - 1; i > first; i-- {
		if uint64(kv[i]-lo) < width {
			last = i + 1
			break
		}
	}
	return span(kv, s, first, last), nil
}

// minOf returns the minimum of a non-empty, non-negative slice, with four
// independent accumulators so the compares pipeline.
func minOf(kv []int64) int64 {
	m0, m1, m2, m3 := kv[0], kv[0], kv[0], kv[0]
	i := 0
	for ; i+4 <= len(kv); i += 4 {
		m0, m1, m2, m3 = min(m0, kv[i]), min(m1, kv[i+1]), min(m2, kv[i+2]), min(m3, kv[i+3])
	}
	for ; i < len(kv); i++ {
		m0 = min(m0, kv[i])
	}
	return min(m0, m1, m2, m3)
}

// span returns kv[first:last] (aliased) with positions s+first..s+last-1;
// an empty span yields non-nil empty slices so both twins encode "[]".
func span(kv []int64, s, first, last int64) ref.FilterCPRankOutput {
	if first >= last {
		return ref.FilterCPRankOutput{Owned: []int64{}, Positions: []int64{}}
	}
	pos := make([]int64, last-first)
	for i := range pos {
		pos[i] = s + first + int64(i)
	}
	return ref.FilterCPRankOutput{Owned: kv[first:last:last], Positions: pos}
}
