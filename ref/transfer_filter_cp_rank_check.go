package ref

import (
	"fmt"
	"math"
)

// Validation for transfer.filter_cp_rank (docs/spec/transfer.md §1.1): the input and its scalars.

// validateFilterCPRank checks in against docs/spec/transfer.md §1.5 and returns the
// effective policy and total page count. The scalar checks come first and the
// scan of kv last, so a twin that folds the scan into its own pass reports
// the same first error.
func validateFilterCPRank(in TransferFilterCPRankInput) (OwnershipPolicy, int64, error) {
	policy, total, err := CheckFilterCPRankScalars(in)
	if err != nil {
		return "", 0, err
	}
	if err := CheckNonNegative("kv", in.KV); err != nil {
		return "", 0, err
	}
	return policy, total, nil
}

// CheckFilterCPRankScalars is validateFilterCPRank without the scan of kv.
func CheckFilterCPRankScalars(in TransferFilterCPRankInput) (OwnershipPolicy, int64, error) {
	if in.CPSize < 1 {
		return "", 0, Reject(ErrBadCPSize, "cp_size", in.CPSize, ">= 1")
	}
	if in.CPRank < 0 || in.CPRank >= in.CPSize {
		return "", 0, Reject(ErrBadCPRank, "cp_rank", in.CPRank, fmt.Sprintf("in [0, cp_size=%d)", in.CPSize))
	}
	if in.ChunkPageStart < 0 {
		return "", 0, Reject(ErrNegative, "chunk_page_start", in.ChunkPageStart, ">= 0")
	}
	if in.TotalPages != nil && *in.TotalPages < 0 {
		return "", 0, Reject(ErrNegative, "total_pages", *in.TotalPages, ">= 0")
	}
	n := int64(len(in.KV))
	if AddOverflows(in.ChunkPageStart, n) {
		return "", 0, Reject(ErrOverflow, "chunk_page_start", in.ChunkPageStart,
			fmt.Sprintf("<= %d - len(kv) (%d)", int64(math.MaxInt64), n))
	}
	policy := in.Policy
	if policy == "" {
		policy = ValueRange
	}
	switch policy {
	case ValueRange:
		if in.TotalPages == nil {
			return policy, n, nil
		}
		return policy, *in.TotalPages, nil
	case PositionRange:
		if in.TotalPages == nil {
			return "", 0, Reject(ErrTotalPagesRequired, "total_pages", nil, "the request's page count under position_range")
		}
		if end := in.ChunkPageStart + n; end > *in.TotalPages {
			return "", 0, Reject(ErrChunkOutOfRange, "chunk_page_start", in.ChunkPageStart,
				fmt.Sprintf("chunk [%d, %d) inside [0, total_pages=%d)", in.ChunkPageStart, end, *in.TotalPages))
		}
		return policy, *in.TotalPages, nil
	default:
		return "", 0, Reject(ErrBadEnum, "policy", string(in.Policy), `"value_range" or "position_range"`)
	}
}
