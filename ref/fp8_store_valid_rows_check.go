package ref

import (
	"fmt"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for fp8.store_valid_rows (docs/spec/cp-layout.md §7.4 StoreValidRows).

// ValidateFP8StoreValidRows checks an fp8.store_valid_rows input in the
// order both twins report: the pool; the layout; the rank (ErrRank); one
// req_to_token list and one prefix length per request (ErrLengthMismatch);
// each P_i >= 0 (ErrNegative) and each list long enough for P_i + L_i
// tokens (ErrLengthMismatch); x's shape and width (ErrRowCount,
// ErrUnsupportedDims) and its contract, R(r) rows (ErrRowContract); then
// each valid local row in local order: its slot in [0, numSlots)
// (ErrSlotOutOfRange), not named before in this call (ErrDuplicateSlot),
// its values finite (ErrNonFinite, "x[p]…" with p the local row). Padding
// rows are not checked: they never reach the pool.
func ValidateFP8StoreValidRows(lim spec.Limits, in spec.FP8StoreValidRowsInput) (spec.FP8StoreValidPlan, error) {
	n, err := CheckFP8Pool("pool", in.Pool)
	if err != nil {
		return spec.FP8StoreValidPlan{}, err
	}
	lay, err := BuildLayoutAt(lim, "layout", in.Layout)
	if err != nil {
		return spec.FP8StoreValidPlan{}, err
	}
	r := in.Rank
	if err := lay.CheckRank("rank", r); err != nil {
		return spec.FP8StoreValidPlan{}, err
	}
	b := lay.B()
	if len(in.ReqToToken) != b {
		return spec.FP8StoreValidPlan{}, spec.Reject(spec.ErrLengthMismatch, "req_to_token", len(in.ReqToToken), fmt.Sprintf("B = %d lists", b))
	}
	if len(in.PrefixLens) != b {
		return spec.FP8StoreValidPlan{}, spec.Reject(spec.ErrLengthMismatch, "prefix_lens", len(in.PrefixLens), fmt.Sprintf("B = %d lengths", b))
	}
	for i, p := range in.PrefixLens {
		if p < 0 {
			return spec.FP8StoreValidPlan{}, spec.Reject(spec.ErrNegative, spec.Idx("prefix_lens", i), p, ">= 0")
		}
		// Compared as len − L_i < P_i so that a huge P_i cannot overflow.
		if len(in.ReqToToken[i])-lay.L[i] < p {
			return spec.FP8StoreValidPlan{}, spec.Reject(spec.ErrLengthMismatch, spec.Idx("req_to_token", i), len(in.ReqToToken[i]), fmt.Sprintf(">= P_%d + L_%d = %d + %d entries", i, i, p, lay.L[i]))
		}
	}
	if err := CheckFP8Width("x", in.X, spec.MLABF16RowBytes); err != nil {
		return spec.FP8StoreValidPlan{}, err
	}
	if err := CheckLocalRows(lay, r, "x", in.X); err != nil {
		return spec.FP8StoreValidPlan{}, err
	}
	toks := LocalTokenIDs(lay, r)
	// Sized by the rank's own valid rows, which the input holds.
	plan := spec.FP8StoreValidPlan{Lay: lay, Local: make([]int, 0, len(toks)), Locs: make([]int64, 0, len(toks))}
	e := 0
	seen := make(map[int64]int, len(toks))
	for p, valid := range ValidMask(lay, r) {
		if !valid {
			continue
		}
		tok := toks[e]
		e++
		j := in.PrefixLens[tok.Req] + tok.T
		loc := in.ReqToToken[tok.Req][j]
		if loc < 0 || loc >= n {
			return spec.FP8StoreValidPlan{}, spec.Reject(spec.ErrSlotOutOfRange, fmt.Sprintf("req_to_token[%d][%d]", tok.Req, j), loc, fmt.Sprintf("in [0, numSlots=%d)", n))
		}
		if first, dup := seen[loc]; dup {
			return spec.FP8StoreValidPlan{}, spec.Reject(spec.ErrDuplicateSlot, fmt.Sprintf("req_to_token[%d][%d]", tok.Req, j), loc, fmt.Sprintf("distinct (also the slot of local row %d)", first))
		}
		seen[loc] = p
		if err := FirstNonFiniteRow656(p, in.X.Row(p)); err != nil {
			return spec.FP8StoreValidPlan{}, err
		}
		plan.Local = append(plan.Local, p)
		plan.Locs = append(plan.Locs, loc)
	}
	return plan, nil
}
