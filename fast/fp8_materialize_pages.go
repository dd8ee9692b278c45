package fast

import (
	"fmt"

	"github.com/kvtwin/kvtwin/ref"
)

// FP8StorePages is the twin of ref.FP8StorePages (docs/spec/cp-layout.md §7.4): one
// bulk copy of the pool, a bitset instead of a map for the duplicate check,
// then one row copy per loc.
func FP8StorePages(_ ref.Limits, in ref.FP8StorePagesInput) (ref.FP8StorePagesOutput, error) {
	n, err := ref.CheckFP8Pool("pool", in.Pool)
	if err != nil {
		return ref.FP8StorePagesOutput{}, err
	}
	if err := ref.CheckFP8Rows("rows", in.Rows); err != nil {
		return ref.FP8StorePagesOutput{}, err
	}
	if in.Rows.N() != len(in.Locs) {
		return ref.FP8StorePagesOutput{}, ref.Reject(ref.ErrLengthMismatch, "rows", in.Rows.N(), fmt.Sprintf("len(locs) = %d rows", len(in.Locs)))
	}
	// n rows exist in memory, so a bitset of n bits is bounded by the input.
	seen := make([]uint64, (n+63)/64)
	for e, loc := range in.Locs {
		if loc < 0 || loc >= n {
			return ref.FP8StorePagesOutput{}, ref.Reject(ref.ErrSlotOutOfRange, ref.Idx("locs", e), loc, fmt.Sprintf("in [0, numSlots=%d)", n))
		}
		if seen[loc>>6]&(1<<(loc&63)) != 0 {
			first := 0
			for i, l := range in.Locs[:e] {
				if l == loc {
					first = i
					break
				}
			}
			return ref.FP8StorePagesOutput{}, ref.Reject(ref.ErrDuplicateSlot, ref.Idx("locs", e), loc, fmt.Sprintf("distinct (also locs[%d])", first))
		}
		seen[loc>>6] |= 1 << (loc & 63)
	}
	b := make([]byte, len(in.Pool.Rows.B))
	copy(b, in.Pool.Rows.B)
	const w = ref.FP8RowBytes
	for e, loc := range in.Locs {
		copy(b[loc*w:(loc+1)*w], in.Rows.B[e*w:(e+1)*w])
	}
	return ref.FP8StorePagesOutput{Pool: ref.FP8Pool{PageSize: in.Pool.PageSize, Size: in.Pool.Size, Rows: ref.Rows{W: w, B: b}}}, nil
}

// FP8MaterializePages is the twin of ref.FP8MaterializePages (docs/spec/cp-layout.md
// §7.4): runs of consecutive slots (a page, or several adjacent pages) are
// gathered with one copy each.
func FP8MaterializePages(lim ref.Limits, in ref.FP8MaterializePagesInput) (ref.FP8MaterializePagesOutput, error) {
	if err := ref.ValidateFP8MaterializePages(lim, in); err != nil {
		return ref.FP8MaterializePagesOutput{}, err
	}
	const w = ref.FP8RowBytes
	out := make([]byte, len(in.Slots)*w)
	src := in.Pool.Rows.B
	for i, polled := 0, -ref.PollEvery; i < len(in.Slots); {
		if i-polled >= ref.PollEvery {
			if err := lim.Canceled("slots"); err != nil {
				return ref.FP8MaterializePagesOutput{}, err
			}
			polled = i
		}
		j := i + 1
		for j < len(in.Slots) && in.Slots[j] == in.Slots[j-1]+1 {
			j++
		}
		s := in.Slots[i]
		copy(out[i*w:j*w], src[s*w:(s+int64(j-i))*w])
		i = j
	}
	return ref.FP8MaterializePagesOutput{Rows: ref.Rows{W: w, B: out}}, nil
}
