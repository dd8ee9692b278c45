package mutants

import (
	"fmt"
	"slices"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// PrebuiltSliceFromZero is docs/spec/transfer.md §5's historic bug: the prebuilt
// chunk was sliced from the start of the row (row[:extend_len]), so with a
// decode-side cache hit the cached prefix's slots were copied into the
// suffix chunk. A wrapper around fast.TransferPrebuiltSlice: each row is given to
// it with row[:extend_len] moved to where the suffix is read.
func PrebuiltSliceFromZero() equiv.Killable {
	return &equiv.Mutant[spec.TransferPrebuiltSliceInput, spec.TransferPrebuiltSliceOutput]{
		Spec:    equiv.TransferPrebuiltSlice(),
		ID:      "prebuilt-slice-from-zero",
		Section: "transfer.md §5",
		About:   "slices row[:extend_len]: a cache-hit request's prefix slots land in the prebuilt suffix chunk",
		Fn:      prebuiltFromZero,
	}
}

// prebuiltFromZero runs fast.TransferPrebuiltSlice on copies of the rows whose
// suffix row[prefix_len:prefix_len+extend_len] holds row[:extend_len]. The
// lengths are unchanged, so every length check, seq_len and prefix_len is
// production's; a negative slot is named where the buggy slice read it.
func prebuiltFromZero(lim spec.Limits, in spec.TransferPrebuiltSliceInput) (spec.TransferPrebuiltSliceOutput, error) {
	if _, err := ref.CheckPrebuiltSliceLengths(lim, in); err != nil {
		return spec.TransferPrebuiltSliceOutput{}, err
	}
	moved := in
	moved.Requests = slices.Clone(in.Requests)
	for i, r := range moved.Requests {
		row := slices.Clone(r.Row)
		copy(row[r.PrefixLen:], r.Row[:r.ExtendLen]) // the bug: from 0, not prefix_len
		moved.Requests[i].Row = row
	}
	out, err := fast.TransferPrebuiltSlice(lim, moved)
	if ie, ok := spec.AsInputError(err); ok && ie.Err == spec.ErrNegative {
		var i int
		var k int64
		if _, serr := fmt.Sscanf(ie.Field, "requests[%d].row[%d]", &i, &k); serr == nil {
			ie.Field = spec.Idx(spec.Idx("requests", i)+".row", int(k-in.Requests[i].PrefixLen))
		}
	}
	return out, err
}
