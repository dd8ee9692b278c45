package fast

import (
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TransferPrebuiltSlice is the one-allocation twin of ref.TransferPrebuiltSlice
// (docs/spec/transfer.md §5, §10 "single preallocated output"). Everything is checked
// before anything is written: ref's length checks, then one branch-free scan
// that ORs the copied slots together (a negative slot shows in the sign bit;
// only then is ref's scan run to name it). Then one exact-size buffer backs
// all four output lists and each request's suffix is copied into place.
func TransferPrebuiltSlice(lim spec.Limits, in spec.TransferPrebuiltSliceInput) (spec.TransferPrebuiltSliceOutput, error) {
	total, err := ref.CheckPrebuiltSliceLengths(lim, in)
	if err != nil {
		return spec.TransferPrebuiltSliceOutput{}, err
	}
	if anyNegativeSlot(in.Requests) {
		return spec.TransferPrebuiltSliceOutput{}, ref.CheckPrebuiltSlots(in)
	}
	n := int64(len(in.Requests))
	buf := make([]int64, total+3*n)
	out := spec.TransferPrebuiltSliceOutput{
		OutCacheLoc:     buf[:total:total],
		SeqLens:         buf[total : total+n : total+n],
		PrefixLens:      buf[total+n : total+2*n : total+2*n],
		ExtendLens:      buf[total+2*n:],
		ExtendNumTokens: total,
	}
	off := int64(0)
	for i, r := range in.Requests {
		off += int64(copy(out.OutCacheLoc[off:], r.Row[r.PrefixLen:r.PrefixLen+r.ExtendLen]))
		out.SeqLens[i] = r.OriginLen + max(0, r.NumOutputs-1)
		out.PrefixLens[i] = r.PrefixLen
		out.ExtendLens[i] = r.ExtendLen
	}
	return out, nil
}

// anyNegativeSlot reports whether any copied slot is negative: the sign bit
// of the OR of all of them, four accumulators wide so the loads pipeline.
func anyNegativeSlot(reqs []spec.PrebuiltRequest) bool {
	var a0, a1, a2, a3 int64
	for _, r := range reqs {
		seg := r.Row[r.PrefixLen : r.PrefixLen+r.ExtendLen]
		k := 0
		for ; k+4 <= len(seg); k += 4 {
			a0 |= seg[k]
			a1 |= seg[k+1]
			a2 |= seg[k+2]
			a3 |= seg[k+3]
		}
		for ; k < len(seg); k++ {
			a0 |= seg[k]
		}
	}
	return a0|a1|a2|a3 < 0
}
