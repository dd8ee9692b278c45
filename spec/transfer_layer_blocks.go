package spec

// Block is one contiguous RDMA write of Len bytes from Src to Dst (docs/spec/transfer.md §0).
type Block struct {
	// Src is the source device address.
	Src uint64 `json:"src"`
	// Dst is the destination device address.
	Dst uint64 `json:"dst"`
	// Len is the number of bytes.
	Len uint64 `json:"len"`
}

// TransferLayerBlocksInput is the input of transfer.layer_blocks (docs/spec/transfer.md §3.1,
// §3.2): the CP-filtered page pairs of one chunk and both sides' per-entry
// buffers.
type TransferLayerBlocksInput struct {
	// IsMLA selects MLA pointer selection (one entry per layer); false is MHA
	// (K entries of every layer, then V entries).
	IsMLA bool `json:"is_mla"`
	// Owned holds the prefill page ids this rank sends, in request order.
	Owned []int64 `json:"owned"`
	// DstPages holds the decode page ids; DstPages[i] receives Owned[i]. They must be distinct.
	DstPages []int64 `json:"dst_pages"`
	// SrcPtrs are the prefill buffers' device addresses, one per transfer entry.
	SrcPtrs []uint64 `json:"src_ptrs"`
	// DstPtrs are the decode buffers' device addresses; with pipeline
	// parallelism they cover more layers than SrcPtrs and are sliced at StartLayer.
	DstPtrs []uint64 `json:"dst_ptrs"`
	// ItemLens are the bytes per page of each source entry (same length as SrcPtrs).
	ItemLens []uint64 `json:"item_lens"`
	// StartLayer is the first decode layer of this prefill PP stage; used
	// only when the entry counts of the two sides differ.
	StartLayer int64 `json:"start_layer"`
	// SrcDataLens, when non-empty, are the byte sizes of the SrcPtrs buffers (one per entry).
	SrcDataLens []uint64 `json:"src_data_lens,omitempty"`
	// DstDataLens, when non-empty, are the byte sizes of the DstPtrs buffers (one per pointer).
	DstDataLens []uint64 `json:"dst_data_lens,omitempty"`
}

// TransferLayerBlocksOutput is the monolithic batch of docs/spec/transfer.md §3.3.
type TransferLayerBlocksOutput struct {
	// Runs are the §2 runs of (Owned, DstPages), shared by every entry.
	Runs []Run `json:"runs"`
	// Blocks is concat over entries of that entry's blocks: entry-major, run-minor.
	Blocks []Block `json:"blocks"`
	// BlocksPerEntry is len(Runs): entry e's blocks are Blocks[e*BlocksPerEntry:(e+1)*BlocksPerEntry].
	BlocksPerEntry int64 `json:"blocks_per_entry"`
}

// LayerGeometry is the validated pointer selection of a layer_blocks input
// (docs/spec/transfer.md §3.2).
type LayerGeometry struct {
	// Entries is the number of transfer entries, len(src_ptrs).
	Entries int
	// Half is the number of layers per half: len(src_ptrs)/2 for MHA, len(src_ptrs) for MLA.
	Half int
	// DstHalf is the same count on the decode side.
	DstHalf int
	// DstOffset is start_layer when the counts differ (PP slicing), else 0.
	DstOffset int
}

// LayerEntry is one transfer entry's buffers and page size (docs/spec/transfer.md §3.1).
type LayerEntry struct {
	// SrcIdx is the entry's index in src_ptrs (and item_lens, src_data_lens).
	SrcIdx int
	// DstIdx is the index in dst_ptrs (and dst_data_lens) it writes to.
	DstIdx int
	// SrcBase is src_ptrs[SrcIdx].
	SrcBase uint64
	// DstBase is dst_ptrs[DstIdx].
	DstBase uint64
	// ItemLen is the bytes per page on both sides: the source entry's item len.
	ItemLen uint64
}

// EntryAt returns transfer entry e of in under g. MLA entry e is layer e and
// writes dst_ptrs[offset+e]; MHA entries are K_0…K_{n-1}, V_0…V_{n-1}, and
// V_l writes dst_ptrs[D+offset+l]. MHA uses the entry's own item_lens[e]
// (upstream's per-layer form); MLA's are all equal once validated.
// Preconditions: g came from CheckLayerPointers(in) and 0 <= e < g.Entries.
func (g LayerGeometry) EntryAt(in TransferLayerBlocksInput, e int) LayerEntry {
	dst := g.DstOffset + e
	if e >= g.Half {
		dst = g.DstHalf + g.DstOffset + (e - g.Half)
	}
	return LayerEntry{SrcIdx: e, DstIdx: dst, SrcBase: in.SrcPtrs[e], DstBase: in.DstPtrs[dst], ItemLen: in.ItemLens[e]}
}
