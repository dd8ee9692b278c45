package spec

// OwnershipPolicy selects how a CP rank's share of a chunk's pages is chosen
// (docs/spec/transfer.md §1.3, E4).
type OwnershipPolicy string

const (
	// ValueRange is the fork's rule: the rank's range is shifted into page-id
	// space by min(kv) and the span of matching ids is sent. It can leave
	// pages unsent when ids are not a contiguous ascending run (E4).
	ValueRange OwnershipPolicy = "value_range"
	// PositionRange is the safe rule of newer upstream: rank bounds over the
	// request's total pages, intersected with the chunk's positions.
	PositionRange OwnershipPolicy = "position_range"
)

// TransferFilterCPRankInput is the input of transfer.filter_cp_rank (docs/spec/transfer.md §1.1).
type TransferFilterCPRankInput struct {
	// KV holds this chunk's prefill page ids, in request order.
	KV []int64 `json:"kv"`
	// ChunkPageStart is the absolute position of KV[0] in the request's page list.
	ChunkPageStart int64 `json:"chunk_page_start"`
	// TotalPages is the page count the rank split is computed over; nil means
	// len(KV) under ValueRange and is an error under PositionRange.
	TotalPages *int64 `json:"total_pages,omitempty"`
	// CPRank is this rank, in [0, CPSize).
	CPRank int `json:"cp_rank"`
	// CPSize is the number of CP ranks, >= 1.
	CPSize int `json:"cp_size"`
	// Policy is ValueRange (default when empty) or PositionRange.
	Policy OwnershipPolicy `json:"policy,omitempty"`
}

// TransferFilterCPRankOutput is the rank's share: Owned[i] is sent to the decode page
// at absolute request position Positions[i] (docs/spec/transfer.md §1.1).
type TransferFilterCPRankOutput struct {
	// Owned is the page ids this rank sends.
	Owned []int64 `json:"owned"`
	// Positions are the absolute request page positions of Owned, ascending by 1.
	Positions []int64 `json:"positions"`
}
