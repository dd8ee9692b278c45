package spec

// Run is one run of page pairs contiguous on both sides (docs/spec/transfer.md §0, §2):
// source pages SrcStart … SrcStart+Count-1 pair with destination pages
// DstStart … DstStart+Count-1. It is the triple form of one (srcRun, dstRun)
// pair of §2, so both sides have the same length by construction.
type Run struct {
	// SrcStart is the first source page of the run.
	SrcStart int64 `json:"src_start"`
	// DstStart is the first destination page of the run.
	DstStart int64 `json:"dst_start"`
	// Count is the number of pages in the run, >= 1.
	Count int64 `json:"count"`
}

// TransferGroupContiguousInput is the input of transfer.group_contiguous (docs/spec/transfer.md §2).
type TransferGroupContiguousInput struct {
	// Src holds the source page ids, in transfer order.
	Src []int64 `json:"src"`
	// Dst holds the destination page ids; Dst[i] receives Src[i].
	Dst []int64 `json:"dst"`
}

// TransferGroupContiguousOutput is the list of maximal double-contiguous runs, in
// input order (docs/spec/transfer.md §2).
type TransferGroupContiguousOutput struct {
	// Runs are the maximal runs; empty (never null) when either side is empty.
	Runs []Run `json:"runs"`
}
