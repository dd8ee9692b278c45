package ref

import (
	"fmt"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for fp8.store_pages and fp8.materialize_pages (docs/spec/cp-layout.md §7.4): the pool and each input.

// CheckFP8Rows rejects a malformed buffer (ErrRowCount) or one whose width
// is not 656 (ErrUnsupportedDims), naming field.
func CheckFP8Rows(field string, x spec.Rows) error {
	return CheckFP8Width(field, x, spec.FP8RowBytes)
}

// CheckFP8Pool checks a pool (docs/spec/cp-layout.md §7.4): page_size >= 1
// (ErrPagePlan), size >= 0 (ErrNegative), size+page_size without overflow,
// 656-byte rows (ErrUnsupportedDims), exactly size+page_size of them (ErrRowCount). It returns
// numSlots.
func CheckFP8Pool(field string, p spec.FP8Pool) (int64, error) {
	if p.PageSize < 1 {
		return 0, spec.Reject(spec.ErrPagePlan, field+".page_size", p.PageSize, ">= 1")
	}
	if p.Size < 0 {
		return 0, spec.Reject(spec.ErrNegative, field+".size", p.Size, ">= 0")
	}
	if spec.AddOverflows(p.Size, p.PageSize) {
		return 0, spec.Reject(spec.ErrOverflow, field+".size", p.Size, "size + page_size <= MaxInt64")
	}
	n := p.Size + p.PageSize
	if err := CheckFP8Rows(field+".rows", p.Rows); err != nil {
		return 0, err
	}
	if int64(p.Rows.N()) != n {
		return 0, spec.Reject(spec.ErrRowCount, field+".rows", p.Rows.N(), fmt.Sprintf("size + page_size = %d rows", n))
	}
	return n, nil
}

// ValidateFP8StorePages checks an fp8.store_pages input in the order both twins
// report: the pool, the rows' shape, one row per loc (ErrLengthMismatch),
// then each loc in order: in [0, numSlots) (ErrSlotOutOfRange), not seen
// before in this call (ErrDuplicateSlot).
func ValidateFP8StorePages(in spec.FP8StorePagesInput) error {
	n, err := CheckFP8Pool("pool", in.Pool)
	if err != nil {
		return err
	}
	if err := CheckFP8Rows("rows", in.Rows); err != nil {
		return err
	}
	if in.Rows.N() != len(in.Locs) {
		return spec.Reject(spec.ErrLengthMismatch, "rows", in.Rows.N(), fmt.Sprintf("len(locs) = %d rows", len(in.Locs)))
	}
	seen := map[int64]int{}
	for e, loc := range in.Locs {
		if loc < 0 || loc >= n {
			return spec.Reject(spec.ErrSlotOutOfRange, spec.Idx("locs", e), loc, fmt.Sprintf("in [0, numSlots=%d)", n))
		}
		if first, dup := seen[loc]; dup {
			return spec.Reject(spec.ErrDuplicateSlot, spec.Idx("locs", e), loc, fmt.Sprintf("distinct (also locs[%d])", first))
		}
		seen[loc] = e
	}
	return nil
}

// ValidateFP8MaterializePages checks an fp8.materialize_pages input: the pool,
// then every slot in [0, numSlots) (ErrSlotOutOfRange), then the output
// bound.
func ValidateFP8MaterializePages(lim spec.Limits, in spec.FP8MaterializePagesInput) error {
	n, err := CheckFP8Pool("pool", in.Pool)
	if err != nil {
		return err
	}
	for i, s := range in.Slots {
		if s < 0 || s >= n {
			return spec.Reject(spec.ErrSlotOutOfRange, spec.Idx("slots", i), s, fmt.Sprintf("in [0, numSlots=%d)", n))
		}
	}
	return lim.CheckOutput("slots", int64(len(in.Slots)), spec.FP8RowBytes)
}
