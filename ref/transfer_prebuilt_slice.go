package ref

import "github.com/kvtwin/kvtwin/spec"

// TransferPrebuiltSlice builds the decode-side prebuilt batch (docs/spec/transfer.md §5): for
// each request in batch order it appends the newly transferred suffix
// row[prefix_len : prefix_len+extend_len] to out_cache_loc. Slicing from
// prefix_len, not 0, is the fix of the seed's bug: with a decode-side cache
// hit the row starts with the cached prefix's slots.
func TransferPrebuiltSlice(lim spec.Limits, in spec.TransferPrebuiltSliceInput) (spec.TransferPrebuiltSliceOutput, error) {
	total, err := validatePrebuiltSlice(lim, in)
	if err != nil {
		return spec.TransferPrebuiltSliceOutput{}, err
	}
	out := spec.TransferPrebuiltSliceOutput{OutCacheLoc: []int64{}, SeqLens: []int64{}, PrefixLens: []int64{}, ExtendLens: []int64{}, ExtendNumTokens: total}
	for _, r := range in.Requests {
		out.OutCacheLoc = append(out.OutCacheLoc, r.Row[r.PrefixLen:r.PrefixLen+r.ExtendLen]...)
		out.SeqLens = append(out.SeqLens, r.OriginLen+max(0, r.NumOutputs-1))
		out.PrefixLens = append(out.PrefixLens, r.PrefixLen)
		out.ExtendLens = append(out.ExtendLens, r.ExtendLen)
	}
	return out, nil
}
