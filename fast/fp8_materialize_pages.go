package fast

import (
	"fmt"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// FP8StorePages is the twin of ref.FP8StorePages (docs/spec/cp-layout.md §7.4): one
// bulk copy of the pool, a bitset instead of a map for the duplicate check,
// then one row copy per loc.
func FP8StorePages(_ spec.Limits, in spec.FP8StorePagesInput) (spec.FP8StorePagesOutput, error) {
	n, err := ref.CheckFP8Pool("pool", in.Pool)
	if err != nil {
		return spec.FP8StorePagesOutput{}, err
	}
	if err := ref.CheckFP8Rows("rows", in.Rows); err != nil {
		return spec.FP8StorePagesOutput{}, err
	}
	if in.Rows.N() != len(in.Locs) {
		return spec.FP8StorePagesOutput{}, spec.Reject(spec.ErrLengthMismatch, "rows", in.Rows.N(), fmt.Sprintf("len(locs) = %d rows", len(in.Locs)))
	}
	// n rows exist in memory, so a bitset of n bits is bounded by the input.
	seen := make([]uint64, (n+63)/64)
	for e, loc := range in.Locs {
		if loc < 0 || loc >= n {
			return spec.FP8StorePagesOutput{}, spec.Reject(spec.ErrSlotOutOfRange, spec.Idx("locs", e), loc, fmt.Sprintf("in [0, numSlots=%d)", n))
		}
		if seen[loc>>6]&(1<<(loc&63)) != 0 {
			first := 0
			for i, l := range in.Locs[:e] {
				if l == loc {
					first = i
					break
				}
			}
			return spec.FP8StorePagesOutput{}, spec.Reject(spec.ErrDuplicateSlot, spec.Idx("locs", e), loc, fmt.Sprintf("distinct (also locs[%d])", first))
		}
		seen[loc>>6] |= 1 << (loc & 63)
	}
	b := make([]byte, len(in.Pool.Rows.B))
	copy(b, in.Pool.Rows.B)
	const w = spec.FP8RowBytes
	for e, loc := range in.Locs {
		copy(b[loc*w:(loc+1)*w], in.Rows.B[e*w:(e+1)*w])
	}
	return spec.FP8StorePagesOutput{Pool: spec.FP8Pool{PageSize: in.Pool.PageSize, Size: in.Pool.Size, Rows: spec.Rows{W: w, B: b}}}, nil
}

// FP8MaterializePages is the twin of ref.FP8MaterializePages (docs/spec/cp-layout.md
// §7.4): runs of consecutive slots (a page, or several adjacent pages) are
// gathered with one copy each.
func FP8MaterializePages(lim spec.Limits, in spec.FP8MaterializePagesInput) (spec.FP8MaterializePagesOutput, error) {
	if err := ref.ValidateFP8MaterializePages(lim, in); err != nil {
		return spec.FP8MaterializePagesOutput{}, err
	}
	const w = spec.FP8RowBytes
	out := make([]byte, len(in.Slots)*w)
	src := in.Pool.Rows.B
	for i, polled := 0, -spec.PollEvery; i < len(in.Slots); {
		if i-polled >= spec.PollEvery {
			if err := lim.Canceled("slots"); err != nil {
				return spec.FP8MaterializePagesOutput{}, err
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
	return spec.FP8MaterializePagesOutput{Rows: spec.Rows{W: w, B: out}}, nil
}
