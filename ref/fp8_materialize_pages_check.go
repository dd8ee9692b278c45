package ref

import "fmt"

// Validation for fp8.store_pages and fp8.materialize_pages (docs/spec/cp-layout.md §7.4): the pool and each input.

var (
	// ErrSlotOutOfRange: a pool slot (token loc) outside [0, numSlots)
	// (docs/spec/cp-layout.md §7.4, §7.5).
	ErrSlotOutOfRange = NewSentinel("slot_out_of_range", "slot outside the page-slot pool")
	// ErrDuplicateSlot: one store names the same slot twice; the GPU's write
	// order would be undefined (docs/spec/cp-layout.md §7.4).
	ErrDuplicateSlot = NewSentinel("duplicate_slot", "slot stored twice in one call")
)

// CheckFP8Rows rejects a malformed buffer (ErrRowCount) or one whose width
// is not 656 (ErrUnsupportedDims), naming field.
func CheckFP8Rows(field string, x Rows) error {
	return CheckFP8Width(field, x, FP8RowBytes)
}

// CheckFP8Pool checks a pool (docs/spec/cp-layout.md §7.4): page_size >= 1
// (ErrPagePlan), size >= 0 (ErrNegative), size+page_size without overflow,
// 656-byte rows (ErrUnsupportedDims), exactly size+page_size of them (ErrRowCount). It returns
// numSlots.
func CheckFP8Pool(field string, p FP8Pool) (int64, error) {
	if p.PageSize < 1 {
		return 0, Reject(ErrPagePlan, field+".page_size", p.PageSize, ">= 1")
	}
	if p.Size < 0 {
		return 0, Reject(ErrNegative, field+".size", p.Size, ">= 0")
	}
	if AddOverflows(p.Size, p.PageSize) {
		return 0, Reject(ErrOverflow, field+".size", p.Size, "size + page_size <= MaxInt64")
	}
	n := p.Size + p.PageSize
	if err := CheckFP8Rows(field+".rows", p.Rows); err != nil {
		return 0, err
	}
	if int64(p.Rows.N()) != n {
		return 0, Reject(ErrRowCount, field+".rows", p.Rows.N(), fmt.Sprintf("size + page_size = %d rows", n))
	}
	return n, nil
}

// ValidateFP8StorePages checks an fp8.store_pages input in the order both twins
// report: the pool, the rows' shape, one row per loc (ErrLengthMismatch),
// then each loc in order: in [0, numSlots) (ErrSlotOutOfRange), not seen
// before in this call (ErrDuplicateSlot).
func ValidateFP8StorePages(in FP8StorePagesInput) error {
	n, err := CheckFP8Pool("pool", in.Pool)
	if err != nil {
		return err
	}
	if err := CheckFP8Rows("rows", in.Rows); err != nil {
		return err
	}
	if in.Rows.N() != len(in.Locs) {
		return Reject(ErrLengthMismatch, "rows", in.Rows.N(), fmt.Sprintf("len(locs) = %d rows", len(in.Locs)))
	}
	seen := map[int64]int{}
	for e, loc := range in.Locs {
		if loc < 0 || loc >= n {
			return Reject(ErrSlotOutOfRange, Idx("locs", e), loc, fmt.Sprintf("in [0, numSlots=%d)", n))
		}
		if first, dup := seen[loc]; dup {
			return Reject(ErrDuplicateSlot, Idx("locs", e), loc, fmt.Sprintf("distinct (also locs[%d])", first))
		}
		seen[loc] = e
	}
	return nil
}

// ValidateFP8MaterializePages checks an fp8.materialize_pages input: the pool,
// then every slot in [0, numSlots) (ErrSlotOutOfRange), then the output
// bound.
func ValidateFP8MaterializePages(lim Limits, in FP8MaterializePagesInput) error {
	n, err := CheckFP8Pool("pool", in.Pool)
	if err != nil {
		return err
	}
	for i, s := range in.Slots {
		if s < 0 || s >= n {
			return Reject(ErrSlotOutOfRange, Idx("slots", i), s, fmt.Sprintf("in [0, numSlots=%d)", n))
		}
	}
	return lim.CheckOutput("slots", int64(len(in.Slots)), FP8RowBytes)
}
