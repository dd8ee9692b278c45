//go:build cuda

package cuda

import (
	"math"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TransferFilterCPRank is the CUDA twin of ref.TransferFilterCPRank (docs/spec/transfer.md §1.2 "Fast
// path"), for large page lists: the page ids are uploaded once; one kernel
// folds min(kv) (which is also the negative-id check), one finds the first
// and last in-range index under value_range, one writes the positions; the
// owned span is read back from the uploaded ids. Validation is ref's.
func TransferFilterCPRank(_ spec.Limits, in spec.TransferFilterCPRankInput) (spec.TransferFilterCPRankOutput, error) {
	policy, total, err := ref.CheckFilterCPRankScalars(in)
	if err != nil {
		return spec.TransferFilterCPRankOutput{}, err
	}
	var out spec.TransferFilterCPRankOutput
	negative := false
	err = run("transfer.filter_cp_rank", func(c *call) error {
		var ok bool
		out, ok, err = filterOnDevice(c, in, policy, total)
		negative = !ok
		return err
	})
	if err != nil {
		return spec.TransferFilterCPRankOutput{}, err
	}
	if negative {
		return spec.TransferFilterCPRankOutput{}, ref.CheckNonNegative("kv", in.KV)
	}
	return out, nil
}

// filterOnDevice returns the rank's span, or ok=false when some id is negative.
func filterOnDevice(c *call, in spec.TransferFilterCPRankInput, policy spec.OwnershipPolicy, total int64) (spec.TransferFilterCPRankOutput, bool, error) {
	kv, s, n := in.KV, in.ChunkPageStart, int64(len(in.KV))
	dkv, err := c.uploadInt64s(kv)
	if err != nil {
		return spec.TransferFilterCPRankOutput{}, false, err
	}
	// st = {min id, first in-range index, last in-range index}
	st := []int64{math.MaxInt64, n, -1}
	dst, err := c.uploadInt64s(st)
	if err != nil {
		return spec.TransferFilterCPRankOutput{}, false, err
	}
	if err := c.launch("filter_cp_rank_min", n, dkv, n, dst); err != nil {
		return spec.TransferFilterCPRankOutput{}, false, err
	}
	if err := c.downloadInt64s(st[:1], dst); err != nil {
		return spec.TransferFilterCPRankOutput{}, false, err
	}
	m := st[0]
	if n > 0 && m < 0 {
		return spec.TransferFilterCPRankOutput{}, false, nil
	}
	var first, last int64
	switch {
	case policy == spec.PositionRange:
		ls, le := ref.RankPageBounds(total, in.CPRank, in.CPSize)
		first, last = max(ls, s)-s, min(le, s+n)-s
	case in.CPSize == 1:
		first, last = 0, n
	case n == 0:
	default:
		ls, le := ref.RankPageBounds(total, in.CPRank, in.CPSize)
		if ls > 0 && m > math.MaxInt64-ls {
			break // lo = m+ls is beyond every representable id
		}
		if err := c.launch("filter_cp_rank_bounds", n, dkv, n, m+ls, uint64(le-ls), dst); err != nil {
			return spec.TransferFilterCPRankOutput{}, false, err
		}
		if err := c.downloadInt64s(st, dst); err != nil {
			return spec.TransferFilterCPRankOutput{}, false, err
		}
		if st[2] >= 0 {
			first, last = st[1], st[2]+1
		}
	}
	out, err := span(c, dkv, s, first, last)
	return out, true, err
}

// span reads kv[first:last] back from the device copy dkv and has the
// device write its absolute positions s+first.. .
func span(c *call, dkv devicePtr, s, first, last int64) (spec.TransferFilterCPRankOutput, error) {
	if first >= last {
		return spec.TransferFilterCPRankOutput{Owned: []int64{}, Positions: []int64{}}, nil
	}
	count := last - first
	out := spec.TransferFilterCPRankOutput{Owned: make([]int64, count), Positions: make([]int64, count)}
	dpos, err := c.alloc(count * 8)
	if err != nil {
		return spec.TransferFilterCPRankOutput{}, err
	}
	if err := c.launch("filter_cp_rank_positions", count, dpos, count, s+first); err != nil {
		return spec.TransferFilterCPRankOutput{}, err
	}
	if err := c.downloadInt64s(out.Positions, dpos); err != nil {
		return spec.TransferFilterCPRankOutput{}, err
	}
	if err := c.downloadInt64s(out.Owned, dkv+devicePtr(first*8)); err != nil {
		return spec.TransferFilterCPRankOutput{}, err
	}
	return out, nil
}
