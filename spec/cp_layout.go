package spec

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
// shapes); an op's input goes through buildWithin.
func (sp LayoutSpec) Build() (Layout, error) {
	if sp.Granule == 0 {
		return BuildLayoutUnpadded(sp.CP, sp.Lens)
	}
	return BuildLayoutPadded(sp.CP, sp.Lens, sp.Granule)
}

// buildWithin is Build with the layout's own size checked against lim
// after the §1.5 checks and before it is allocated: S and V hold 2·B·2·cp
// sizes, and cp (up to MaxCP) multiplies the batch, so 1M one-token
// requests at cp = 1024 — a 2 MB request — would be 32 GB of sizes. The
// sizes are counted as an output of B·4·cp 8-byte elements, field "cp"
// (BuildSplitLayout's bound), so the layout of a batch a request may ask
// for is never more than the output it may have.
func (sp LayoutSpec) BuildWithin(lim Limits) (Layout, error) {
	if err := sp.check(); err != nil {
		return Layout{}, err
	}
	if err := lim.CheckOutput("cp", int64(len(sp.Lens))*4*int64(sp.CP), 8); err != nil {
		return Layout{}, err
	}
	return sp.Build()
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
