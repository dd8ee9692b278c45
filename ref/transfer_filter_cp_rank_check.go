package ref

import (
	"fmt"
	"math"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for transfer.filter_cp_rank (docs/spec/transfer.md §1.1): the input and its scalars.

// validateFilterCPRank checks in against docs/spec/transfer.md §1.5 and returns the
// effective policy and total page count. The scalar checks come first and the
// scan of kv last, so a twin that folds the scan into its own pass reports
// the same first error.
func validateFilterCPRank(in spec.TransferFilterCPRankInput) (spec.OwnershipPolicy, int64, error) {
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
func CheckFilterCPRankScalars(in spec.TransferFilterCPRankInput) (spec.OwnershipPolicy, int64, error) {
	if in.CPSize < 1 {
		return "", 0, spec.Reject(spec.ErrBadCPSize, "cp_size", in.CPSize, ">= 1")
	}
	if in.CPRank < 0 || in.CPRank >= in.CPSize {
		return "", 0, spec.Reject(spec.ErrBadCPRank, "cp_rank", in.CPRank, fmt.Sprintf("in [0, cp_size=%d)", in.CPSize))
	}
	if in.ChunkPageStart < 0 {
		return "", 0, spec.Reject(spec.ErrNegative, "chunk_page_start", in.ChunkPageStart, ">= 0")
	}
	if in.TotalPages != nil && *in.TotalPages < 0 {
		return "", 0, spec.Reject(spec.ErrNegative, "total_pages", *in.TotalPages, ">= 0")
	}
	n := int64(len(in.KV))
	if spec.AddOverflows(in.ChunkPageStart, n) {
		return "", 0, spec.Reject(spec.ErrOverflow, "chunk_page_start", in.ChunkPageStart,
			fmt.Sprintf("<= %d - len(kv) (%d)", int64(math.MaxInt64), n))
	}
	policy := in.Policy
	if policy == "" {
		policy = spec.ValueRange
	}
	switch policy {
	case spec.ValueRange:
		if in.TotalPages == nil {
			return policy, n, nil
		}
		return policy, *in.TotalPages, nil
	case spec.PositionRange:
		if in.TotalPages == nil {
			return "", 0, spec.Reject(spec.ErrTotalPagesRequired, "total_pages", nil, "the request's page count under position_range")
		}
		if end := in.ChunkPageStart + n; end > *in.TotalPages {
			return "", 0, spec.Reject(spec.ErrChunkOutOfRange, "chunk_page_start", in.ChunkPageStart,
				fmt.Sprintf("chunk [%d, %d) inside [0, total_pages=%d)", in.ChunkPageStart, end, *in.TotalPages))
		}
		return policy, *in.TotalPages, nil
	default:
		return "", 0, spec.Reject(spec.ErrBadEnum, "policy", string(in.Policy), `"value_range" or "position_range"`)
	}
}
