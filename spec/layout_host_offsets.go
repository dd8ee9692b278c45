package spec

// HostLayout names how a HiCache host (L2) arena orders its bytes
// (docs/spec/transfer.md §7.1).
type HostLayout string

const (
	// LayerFirst (LF) stores each layer's tokens contiguously, layer after layer.
	LayerFirst HostLayout = "layer_first"
	// PageFirst (PF) stores each token's layers contiguously, token after token.
	PageFirst HostLayout = "page_first"
	// PageFirstDirect (PFD) stores each page's layers contiguously, each
	// layer's slice of the page being one contiguous block.
	PageFirstDirect HostLayout = "page_first_direct"
	// LayerPageFirst (LPF) stores each layer's pages contiguously; it is the
	// fork's layout for per-layer CP HiCache transfers, MLA-only and
	// numerically equal to LayerFirst for one MLA buffer.
	LayerPageFirst HostLayout = "layer_page_first"
)

// HostPool is the kind of host KV pool (docs/spec/transfer.md §7.1): one MLA buffer,
// or an MHA pool of two planes (K then V).
type HostPool string

const (
	// HostPoolMLA is a single latent buffer per layer.
	HostPoolMLA HostPool = "mla"
	// HostPoolMHA holds a K plane and a V plane, each L×S×tb bytes.
	HostPoolMHA HostPool = "mha"
)

// HostGeometry is a validated host arena geometry in §7.1's notation. Build
// it with checkHostSizes after checking the layout and pool; every product
// its methods form is then known not to overflow int64.
type HostGeometry struct {
	// Layout is the arena's byte order.
	Layout HostLayout
	// Pool is MLA (one plane) or MHA (two planes).
	Pool HostPool
	// L is the number of layers.
	L int64
	// NP is the number of pages.
	NP int64
	// P is the page size in tokens.
	P int64
	// TB is the bytes per token per layer (per plane).
	TB int64
}

// Planes is 1 for MLA and 2 (K, V) for MHA.
func (g HostGeometry) Planes() int64 {
	if g.Pool == HostPoolMHA {
		return 2
	}
	return 1
}

// S is the number of token slots, NP×P.
func (g HostGeometry) S() int64 { return g.NP * g.P }

// PB is the bytes of one layer's page, P×tb.
func (g HostGeometry) PB() int64 { return g.P * g.TB }

// PlaneBytes is the size of one plane, L×S×tb.
func (g HostGeometry) PlaneBytes() int64 { return g.L * g.S() * g.TB }

// TotalBytes is the arena size: planes × L×S×tb.
func (g HostGeometry) TotalBytes() int64 { return g.Planes() * g.PlaneBytes() }

// PageContiguousAcrossLayers is §7.1's "one pointer per page" fact: all
// layers of a page form one contiguous span under PF and PFD, not under LF
// and LPF. It is a property of the layout, whatever L is.
func (g HostGeometry) PageContiguousAcrossLayers() bool {
	return g.Layout == PageFirst || g.Layout == PageFirstDirect
}

// offset is the byte offset of (plane kv, layer l, token t, byte b), the
// §7.1 table written out term by term. Preconditions: g is validated and
// every coordinate is inside it.
func (g HostGeometry) Offset(kv, l, t, b int64) int64 {
	L, NP, P, S, tb := g.L, g.NP, g.P, g.S(), g.TB
	p, o := t/P, t%P
	plane := kv * L * S * tb
	switch g.Layout {
	case LayerFirst:
		return plane + (l*S+t)*tb + b
	case PageFirst:
		return plane + (t*L+l)*tb + b
	case PageFirstDirect:
		return plane + ((p*L+l)*P+o)*tb + b
	default: // LayerPageFirst
		return plane + ((l*NP+p)*P+o)*tb + b
	}
}

// coords inverts offset: the (plane, layer, token, byte) stored at byte off.
// Precondition: 0 <= off < g.TotalBytes().
func (g HostGeometry) Coords(off int64) (kv, l, t, b int64) {
	L, NP, P, S, tb := g.L, g.NP, g.P, g.S(), g.TB
	kv, r := off/(L*S*tb), off%(L*S*tb)
	switch g.Layout {
	case LayerFirst:
		l, r = r/(S*tb), r%(S*tb)
		return kv, l, r / tb, r % tb
	case PageFirst:
		t, r = r/(L*tb), r%(L*tb)
		return kv, r / tb, t, r % tb
	case PageFirstDirect:
		p := r / (L * P * tb)
		r %= L * P * tb
		l, r = r/(P*tb), r%(P*tb)
		return kv, l, p*P + r/tb, r % tb
	default: // LayerPageFirst
		l, r = r/(NP*P*tb), r%(NP*P*tb)
		p := r / (P * tb)
		r %= P * tb
		return kv, l, p*P + r/tb, r % tb
	}
}

// PageRanges returns the contiguous byte ranges holding layer l's page p in
// plane kv, in ascending offset order (§7.1 contiguity facts): one range of
// pb bytes under LF, LPF and PFD; P ranges of tb bytes, L×tb apart, under PF.
func (g HostGeometry) PageRanges(kv, l, p int64) []ByteRange {
	if g.Layout != PageFirst {
		return []ByteRange{{Offset: g.Offset(kv, l, p*g.P, 0), Len: g.PB()}}
	}
	rs := make([]ByteRange, 0, g.P)
	for o := range g.P {
		rs = append(rs, ByteRange{Offset: g.Offset(kv, l, p*g.P+o, 0), Len: g.TB})
	}
	return rs
}

// RangesPerPage is how many ranges PageRanges returns: P under PF, else 1.
func (g HostGeometry) RangesPerPage() int64 {
	if g.Layout == PageFirst {
		return g.P
	}
	return 1
}

// HostPoint asks for the byte offset of one (plane, layer, token, byte).
type HostPoint struct {
	// KV is the plane: 0 for MLA; 0 (K) or 1 (V) for MHA.
	KV int64 `json:"kv"`
	// Layer is the layer, in [0, layers).
	Layer int64 `json:"layer"`
	// Token is the token slot, in [0, pages×page_size).
	Token int64 `json:"token"`
	// Byte is the byte within the token's layer slice, in [0, token_bytes).
	Byte int64 `json:"byte"`
}

// HostPageQuery asks for the byte ranges holding one layer's page.
type HostPageQuery struct {
	// KV is the plane: 0 for MLA; 0 (K) or 1 (V) for MHA.
	KV int64 `json:"kv"`
	// Layer is the layer, in [0, layers).
	Layer int64 `json:"layer"`
	// Page is the page, in [0, pages).
	Page int64 `json:"page"`
}

// ByteRange is a contiguous run of arena bytes.
type ByteRange struct {
	// Offset is the first byte's offset in the arena.
	Offset int64 `json:"offset"`
	// Len is the number of bytes.
	Len int64 `json:"len"`
}

// LayoutHostOffsetsInput is the input of layout.host_offsets (docs/spec/transfer.md §7.1):
// an arena geometry and the addresses asked of it.
type LayoutHostOffsetsInput struct {
	// Layout is the arena's layout.
	Layout HostLayout `json:"layout"`
	// Pool is "mla" or "mha"; "mha" with "layer_page_first" is rejected.
	Pool HostPool `json:"pool"`
	// Layers is L, >= 1.
	Layers int64 `json:"layers"`
	// Pages is NP, >= 1.
	Pages int64 `json:"pages"`
	// PageSize is P in tokens, >= 1.
	PageSize int64 `json:"page_size"`
	// TokenBytes is tb, the bytes per token per layer per plane, >= 1.
	TokenBytes int64 `json:"token_bytes"`
	// Points are the byte coordinates whose offsets are wanted.
	Points []HostPoint `json:"points"`
	// Spans are the layer pages whose byte ranges are wanted.
	Spans []HostPageQuery `json:"spans"`
}

// LayoutHostOffsetsOutput answers a LayoutHostOffsetsInput.
type LayoutHostOffsetsOutput struct {
	// Offsets[i] is the byte offset of Points[i].
	Offsets []int64 `json:"offsets"`
	// Spans[i] are the ranges holding Spans[i]'s layer page, ascending:
	// one range under LF, LPF and PFD, page_size ranges under PF.
	Spans [][]ByteRange `json:"spans"`
	// TotalBytes is the arena size.
	TotalBytes int64 `json:"total_bytes"`
	// PageContiguousAcrossLayers is the layout's "one pointer per page" fact.
	PageContiguousAcrossLayers bool `json:"page_contiguous_across_layers"`
}
