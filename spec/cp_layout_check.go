package spec

import (
	"fmt"
	"math"
)

// CP-layout sentinels (docs/spec/cp-layout.md §0.5, §1.5, §2.4, §3.5).
var (
	// ErrInvalidCPSize: cp outside [2, MaxCP].
	ErrInvalidCPSize = NewSentinel("invalid_cp_size", "CP size outside the supported range")
	// ErrEmptyBatch: a batch of no requests.
	ErrEmptyBatch = NewSentinel("empty_batch", "batch has no requests")
	// ErrBadLength: an extend length below 1.
	ErrBadLength = NewSentinel("bad_length", "extend length must be >= 1")
	// ErrTooShortForZigzag: an unpadded request shorter than 2·cp tokens.
	ErrTooShortForZigzag = NewSentinel("too_short_for_zigzag", "request shorter than 2*cp cannot be zigzag-split unpadded")
	// ErrInvalidGranule: a padding granule below 1.
	ErrInvalidGranule = NewSentinel("invalid_granule", "granule must be >= 1")
	// ErrRank: a rank outside [0, cp).
	ErrRank = NewSentinel("rank", "rank outside [0, cp)")
	// ErrRowCount: a row buffer whose row count or width disagrees with the layout.
	ErrRowCount = NewSentinel("row_count", "row buffer size disagrees with the layout")
	// ErrRowContract: rows given under the wrong contract (e.g. not CP-local compute-padded).
	ErrRowContract = NewSentinel("row_contract", "rows do not follow the required contract")
	// ErrLayoutMismatch: an explicit layout that breaks the §0.2 invariants.
	ErrLayoutMismatch = NewSentinel("layout_mismatch", "layout breaks its invariants")
	// ErrStride: a gathered stride M below the largest rank payload.
	ErrStride = NewSentinel("stride", "all-gather stride below the largest rank payload")
)

// MaxCP bounds the CP size: the layout holds B × 2·cp sizes, so cp is an
// allocation-sizing input and must be bounded.
const MaxCP = 1024

// MaxLayoutRows is the CUDA bound on row counts (int32 row indices, §0.1).
const MaxLayoutRows = math.MaxInt32

// check applies Build's checks (§1.5), in its order, without allocating
// the layout.
func (sp LayoutSpec) check() error {
	if sp.Granule == 0 {
		return checkUnpadded(sp.CP, sp.Lens)
	}
	return checkPadded(sp.CP, sp.Lens, sp.Granule)
}

// checkBatch applies the checks both builders share (§1.5), in order: cp,
// batch size, lengths.
func checkBatch(cp int, lens []int) error {
	if cp < 2 || cp > MaxCP {
		return Reject(ErrInvalidCPSize, "cp", cp, fmt.Sprintf("in [2, %d]", MaxCP))
	}
	if len(lens) == 0 {
		return Reject(ErrEmptyBatch, "lens", 0, ">= 1 request")
	}
	for i, l := range lens {
		if l < 1 {
			return Reject(ErrBadLength, Idx("lens", i), l, ">= 1")
		}
	}
	return nil
}

// CheckLayoutRows rejects a batch whose compute rows reach 2^31 (§1.5). A
// request whose valid length alone exceeds the bound is named first (its
// compute rows include its valid ones): that keeps every length computeRows
// sees below 2^31, so its arithmetic and the running total stay exact
// instead of wrapping past the bound.
func CheckLayoutRows(field string, lens []int, computeRows func(l int) int64) error {
	var total int64
	for i, l := range lens {
		if l > MaxLayoutRows {
			return Reject(ErrTooLarge, Idx(field, i), l, fmt.Sprintf("<= %d rows (a request's compute rows include its valid rows)", int64(MaxLayoutRows)))
		}
		total += computeRows(l)
		if total > MaxLayoutRows {
			return Reject(ErrTooLarge, field, total, fmt.Sprintf("total compute rows <= %d", int64(MaxLayoutRows)))
		}
	}
	return nil
}

// checkUnpadded applies BuildLayoutUnpadded's checks (§1.5), in order:
// the batch, each length's 2·cp minimum, the compute rows.
func checkUnpadded(cp int, lens []int) error {
	if err := checkBatch(cp, lens); err != nil {
		return err
	}
	ns := 2 * cp
	for i, l := range lens {
		if l < ns {
			return Reject(ErrTooShortForZigzag, Idx("lens", i), l, fmt.Sprintf(">= 2*cp (%d)", ns))
		}
	}
	return CheckLayoutRows("lens", lens, func(l int) int64 { return int64(l) })
}

// checkPadded applies BuildLayoutPadded's checks (§1.5), in order: the
// batch, the granule, the compute rows.
func checkPadded(cp int, lens []int, g int) error {
	if err := checkBatch(cp, lens); err != nil {
		return err
	}
	if g < 1 {
		return Reject(ErrInvalidGranule, "granule", g, ">= 1")
	}
	ns := 2 * cp
	// Every request has 2·cp segments of at least one granule, so a granule
	// past MaxLayoutRows/(2·cp) is too large whatever the lengths. Bounding
	// it here, and each length in CheckLayoutRows, keeps seg below 2^32: formed
	// from unbounded numbers, (l+g−1)/g and 2·cp·u·g wrapped to small or
	// negative totals that passed the row bound (a granule of 2^61 at cp=4
	// made 2^64 rows, i.e. 0).
	if g > MaxLayoutRows/ns {
		return Reject(ErrTooLarge, "granule", g,
			fmt.Sprintf("<= %d: 2*cp (%d) segments of at least one granule are compute rows, %d at most", MaxLayoutRows/ns, ns, int64(MaxLayoutRows)))
	}
	return CheckLayoutRows("lens", lens, func(l int) int64 { return int64(ns) * paddedSegment(l, g, ns) })
}

// Validate checks the §0.2 invariants of an explicit layout: cp in range,
// at least one request, 2·cp non-negative sizes per request, total compute
// rows below 2^31, and V[i][k] == clamp(L[i] − SegStart(i,k), 0, S[i][k])
// (so Σ_k V[i][k] == L[i] and valid rows are a prefix of each request).
func (lay Layout) Validate() error {
	if err := checkBatch(lay.CP, lay.L); err != nil {
		return err
	}
	ns := 2 * lay.CP
	if len(lay.S) != len(lay.L) || len(lay.V) != len(lay.L) {
		return Reject(ErrLayoutMismatch, "s", len(lay.S), fmt.Sprintf("len(s) == len(v) == len(l) (%d)", len(lay.L)))
	}
	var total int64
	for i := range lay.L {
		if len(lay.S[i]) != ns || len(lay.V[i]) != ns {
			return Reject(ErrLayoutMismatch, Idx("s", i), len(lay.S[i]), fmt.Sprintf("2*cp (%d) sizes in s[i] and v[i]", ns))
		}
		start := 0
		for k := range ns {
			s := lay.S[i][k]
			if s < 0 || s > MaxLayoutRows {
				return Reject(ErrLayoutMismatch, fmt.Sprintf("s[%d][%d]", i, k), s, fmt.Sprintf("in [0, %d]", int64(MaxLayoutRows)))
			}
			if total += int64(s); total > MaxLayoutRows {
				return Reject(ErrTooLarge, "s", total, fmt.Sprintf("total compute rows <= %d", int64(MaxLayoutRows)))
			}
			if want := min(max(lay.L[i]-start, 0), s); lay.V[i][k] != want {
				return Reject(ErrLayoutMismatch, fmt.Sprintf("v[%d][%d]", i, k), lay.V[i][k], fmt.Sprintf("== clamp(l - seg_start, 0, s) (%d)", want))
			}
			start += s
		}
		if start < lay.L[i] {
			return Reject(ErrLayoutMismatch, Idx("l", i), lay.L[i], fmt.Sprintf("<= compute length (%d)", start))
		}
	}
	return nil
}

// CheckRank rejects a rank outside [0, cp) with ErrRank naming field.
func (lay Layout) CheckRank(field string, r int) error {
	if r < 0 || r >= lay.CP {
		return Reject(ErrRank, field, r, fmt.Sprintf("in [0, cp=%d)", lay.CP))
	}
	return nil
}
