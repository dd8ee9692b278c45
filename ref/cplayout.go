package ref

import (
	"fmt"
	"math"
)

// This file holds the CP token layout every docs/spec/cp-layout.md op shares (§0.2,
// §0.3) and its two builders (§1.2): integer metadata both twins compute
// with these functions, so the layout itself is never a point of
// disagreement.

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

// Lane is a rank's half of its rows (§0.3).
type Lane string

// The two lanes of a rank.
const (
	// LanePrev holds segment r of every request.
	LanePrev Lane = "prev"
	// LaneMirror holds segment 2·cp−1−r of every request.
	LaneMirror Lane = "mirror"
)

// LayoutSpec is how op inputs name a layout: the CP size, the valid extend
// lengths and the padding granule (0 = unpadded, upstream's split; ≥ 1 =
// the fork's compute padding with that granule).
type LayoutSpec struct {
	// CP is the context-parallel size, in [2, MaxCP].
	CP int `json:"cp"`
	// Lens are the valid extend lengths L_i, each >= 1.
	Lens []int `json:"lens"`
	// Granule is the padding granule g in tokens; 0 builds the unpadded layout.
	Granule int `json:"granule,omitzero"`
}

// Layout is the CP token layout of a batch (docs/spec/cp-layout.md §0.2): per request
// i and segment k in [0, 2·cp), the compute size S[i][k] and the valid size
// V[i][k]. Valid rows are a prefix of each request's compute sequence.
type Layout struct {
	// CP is the context-parallel size.
	CP int `json:"cp"`
	// L are the valid extend lengths.
	L []int `json:"l"`
	// S are the compute sizes S[i][k].
	S [][]int `json:"s"`
	// V are the valid sizes V[i][k].
	V [][]int `json:"v"`
}

// Build builds the layout the spec names (BuildLayoutUnpadded when Granule
// is 0, else BuildLayoutPadded). It does not bound the layout's own size,
// which cp multiplies: for specs the caller trusts (tests, benchmark
// shapes); an op's input goes through BuildWithin.
func (sp LayoutSpec) Build() (Layout, error) {
	if sp.Granule == 0 {
		return BuildLayoutUnpadded(sp.CP, sp.Lens)
	}
	return BuildLayoutPadded(sp.CP, sp.Lens, sp.Granule)
}

// BuildWithin is Build with the layout's own size checked against lim
// after the §1.5 checks and before it is allocated: S and V hold 2·B·2·cp
// sizes, and cp (up to MaxCP) multiplies the batch, so 1M one-token
// requests at cp = 1024 — a 2 MB request — would be 32 GB of sizes. The
// sizes are counted as an output of B·4·cp 8-byte elements, field "cp"
// (BuildSplitLayout's bound), so the layout of a batch a request may ask
// for is never more than the output it may have.
func (sp LayoutSpec) BuildWithin(lim Limits) (Layout, error) {
	if err := sp.Check(); err != nil {
		return Layout{}, err
	}
	if err := lim.CheckOutput("cp", int64(len(sp.Lens))*4*int64(sp.CP), 8); err != nil {
		return Layout{}, err
	}
	return sp.Build()
}

// Check applies Build's checks (§1.5), in its order, without allocating
// the layout.
func (sp LayoutSpec) Check() error {
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

// checkRows rejects a batch whose compute rows reach 2^31 (§1.5). A
// request whose valid length alone exceeds the bound is named first (its
// compute rows include its valid ones): that keeps every length computeRows
// sees below 2^31, so its arithmetic and the running total stay exact
// instead of wrapping past the bound.
func checkRows(field string, lens []int, computeRows func(l int) int64) error {
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

// BuildLayoutUnpadded is upstream's zigzag split (docs/spec/cp-layout.md §1.2): each
// request's L_i tokens in 2·cp segments of q or q+1 rows (the first L_i mod
// 2·cp segments one longer), no padding. Every L_i must be >= 2·cp.
func BuildLayoutUnpadded(cp int, lens []int) (Layout, error) {
	if err := checkUnpadded(cp, lens); err != nil {
		return Layout{}, err
	}
	ns := 2 * cp
	lay := newLayout(cp, lens)
	for i, l := range lens {
		q, rem := l/ns, l%ns
		for k := range ns {
			lay.S[i][k] = q
			if k < rem {
				lay.S[i][k]++
			}
			lay.V[i][k] = lay.S[i][k]
		}
	}
	return lay, nil
}

// BuildLayoutPadded is the fork's compute-padded split (docs/spec/cp-layout.md §1.2):
// every segment of request i has u_i·g rows with u_i = max(1, ceil(ceil(L_i/g)
// / 2·cp)), and the valid rows are the first L_i of the request, so padding
// sits at its tail.
func BuildLayoutPadded(cp int, lens []int, g int) (Layout, error) {
	if err := checkPadded(cp, lens, g); err != nil {
		return Layout{}, err
	}
	ns := 2 * cp
	lay := newLayout(cp, lens)
	for i, l := range lens {
		s := int(paddedSegment(l, g, ns))
		for k := range ns {
			lay.S[i][k] = s
			lay.V[i][k] = min(max(l-k*s, 0), s)
		}
	}
	return lay, nil
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
	return checkRows("lens", lens, func(l int) int64 { return int64(l) })
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
	// it here, and each length in checkRows, keeps seg below 2^32: formed
	// from unbounded numbers, (l+g−1)/g and 2·cp·u·g wrapped to small or
	// negative totals that passed the row bound (a granule of 2^61 at cp=4
	// made 2^64 rows, i.e. 0).
	if g > MaxLayoutRows/ns {
		return Reject(ErrTooLarge, "granule", g,
			fmt.Sprintf("<= %d: 2*cp (%d) segments of at least one granule are compute rows, %d at most", MaxLayoutRows/ns, ns, int64(MaxLayoutRows)))
	}
	return checkRows("lens", lens, func(l int) int64 { return int64(ns) * paddedSegment(l, g, ns) })
}

// paddedSegment is u·g, the rows of each of the ns segments of a request of
// l tokens padded to granule g (§1.2). Exact for the l and g checkPadded
// admits (below 2^31): ceil is taken without forming l+g−1.
func paddedSegment(l, g, ns int) int64 {
	units := CeilDiv(int64(l), int64(g))
	return max(1, CeilDiv(units, int64(ns))) * int64(g)
}

func newLayout(cp int, lens []int) Layout {
	lay := Layout{CP: cp, L: append([]int{}, lens...), S: make([][]int, len(lens)), V: make([][]int, len(lens))}
	for i := range lens {
		lay.S[i], lay.V[i] = make([]int, 2*cp), make([]int, 2*cp)
	}
	return lay
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

// NS is the number of segments per request, 2·cp.
func (lay Layout) NS() int { return 2 * lay.CP }

// B is the number of requests.
func (lay Layout) B() int { return len(lay.L) }

// Mirror is m(r) = 2·cp − 1 − r, the segment paired with segment r.
func (lay Layout) Mirror(r int) int { return 2*lay.CP - 1 - r }

// Owner is the rank computing segment k: k for k < cp, else 2·cp − 1 − k.
func (lay Layout) Owner(k int) int {
	if k < lay.CP {
		return k
	}
	return 2*lay.CP - 1 - k
}

// LaneOf is the lane segment k lives in on its owner.
func (lay Layout) LaneOf(k int) Lane {
	if k < lay.CP {
		return LanePrev
	}
	return LaneMirror
}

// SegStart is the compute position where segment k of request i starts.
func (lay Layout) SegStart(i, k int) int {
	s := 0
	for _, x := range lay.S[i][:k] {
		s += x
	}
	return s
}

// ComputeLen is C_i, request i's compute length.
func (lay Layout) ComputeLen(i int) int { return lay.SegStart(i, lay.NS()) }

// R is the number of compute rows rank r holds.
func (lay Layout) R(r int) int {
	n := 0
	for i := range lay.L {
		n += lay.S[i][r] + lay.S[i][lay.Mirror(r)]
	}
	return n
}

// Rv is the number of valid rows rank r holds.
func (lay Layout) Rv(r int) int {
	n := 0
	for i := range lay.L {
		n += lay.V[i][r] + lay.V[i][lay.Mirror(r)]
	}
	return n
}

// OutBase is the first row of request i in global valid order.
func (lay Layout) OutBase(i int) int {
	n := 0
	for _, l := range lay.L[:i] {
		n += l
	}
	return n
}

// TotalValid is Σ L_i.
func (lay Layout) TotalValid() int { return lay.OutBase(lay.B()) }

// SlotOff is the offset of lane slot (r, lane, i) in rank r's local rows
// (docs/spec/cp-layout.md §0.3): the PREV lane holds segment r of every request, then
// the MIRROR lane segment m(r) of every request.
func (lay Layout) SlotOff(r int, lane Lane, i int) int {
	off := 0
	if lane == LaneMirror {
		for j := range lay.L {
			off += lay.S[j][r]
		}
		for j := range i {
			off += lay.S[j][lay.Mirror(r)]
		}
		return off
	}
	for j := range i {
		off += lay.S[j][r]
	}
	return off
}

// CheckRank rejects a rank outside [0, cp) with ErrRank naming field.
func (lay Layout) CheckRank(field string, r int) error {
	if r < 0 || r >= lay.CP {
		return Reject(ErrRank, field, r, fmt.Sprintf("in [0, cp=%d)", lay.CP))
	}
	return nil
}
