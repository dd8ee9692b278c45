package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/ref"
)

// PrebuiltSliceFromZero is docs/spec/transfer.md §5's historic bug: the prebuilt
// chunk was sliced from the start of the row (row[:extend_len]), so with a
// decode-side cache hit the cached prefix's slots were copied into the
// suffix chunk. The twin is fast.PrebuiltSlice with that one slice changed.
func PrebuiltSliceFromZero() equiv.Killable {
	return &equiv.Mutant[ref.PrebuiltSliceInput, ref.PrebuiltSliceOutput]{
		Spec:    equiv.PrebuiltSlice(),
		ID:      "prebuilt-slice-from-zero",
		Section: "transfer.md §5",
		About:   "slices row[:extend_len]: a cache-hit request's prefix slots land in the prebuilt suffix chunk",
		Fn:      prebuiltFromZero,
	}
}

func prebuiltFromZero(lim ref.Limits, in ref.PrebuiltSliceInput) (ref.PrebuiltSliceOutput, error) {
	total, err := ref.CheckPrebuiltSliceLengths(lim, in)
	if err != nil {
		return ref.PrebuiltSliceOutput{}, err
	}
	for i, r := range in.Requests {
		for k, v := range r.Row[:r.ExtendLen] {
			if v < 0 {
				return ref.PrebuiltSliceOutput{}, ref.Reject(ref.ErrNegative, ref.Idx(ref.Idx("requests", i)+".row", k), v, ">= 0 (a copied token slot)")
			}
		}
	}
	n := int64(len(in.Requests))
	buf := make([]int64, total+3*n)
	out := ref.PrebuiltSliceOutput{
		OutCacheLoc:     buf[:total:total],
		SeqLens:         buf[total : total+n : total+n],
		PrefixLens:      buf[total+n : total+2*n : total+2*n],
		ExtendLens:      buf[total+2*n:],
		ExtendNumTokens: total,
	}
	off := int64(0)
	for i, r := range in.Requests {
		off += int64(copy(out.OutCacheLoc[off:], r.Row[:r.ExtendLen])) // the bug: from 0, not prefix_len
		out.SeqLens[i] = r.OriginLen + max(0, r.NumOutputs-1)
		out.PrefixLens[i] = r.PrefixLen
		out.ExtendLens[i] = r.ExtendLen
	}
	return out, nil
}
