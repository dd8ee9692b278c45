package ref

import (
	"fmt"
	"math"
)

// Validation for layout.host_offsets (docs/spec/transfer.md §7.1, §7.2): layout, pool, sizes and each query.

// Sentinels of layout.host_offsets (docs/spec/transfer.md §7.1, §7.2), shared with
// layout.convert.
var (
	// ErrUnsupportedLayout: a layout string is not one of the four §7.1 layouts (§7.3).
	ErrUnsupportedLayout = NewSentinel("unsupported_layout", "unknown host memory layout")
	// ErrLPFUnsupportedPool: layer_page_first asked of an MHA pool (§7.1).
	ErrLPFUnsupportedPool = NewSentinel("lpf_unsupported_pool", "layer_page_first supports only the MLA pool")
	// ErrZeroSize: a geometry size (layers, pages, page_size, token_bytes,
	// device_pages) is zero; an empty arena has no addresses (§0: P >= 1).
	ErrZeroSize = NewSentinel("zero_size", "a geometry size must be >= 1")
	// ErrPageOutOfRange: a page is not below the arena's page count (§7.2).
	ErrPageOutOfRange = NewSentinel("page_out_of_range", "page beyond the arena's pages")
	// ErrIndexOutOfRange: a plane, layer, token or byte coordinate is not
	// inside the arena's geometry (§7.1).
	ErrIndexOutOfRange = NewSentinel("index_out_of_range", "coordinate outside the arena's geometry")
)

// checkHostLayout rejects a layout string that is not one of §7.1's four.
func checkHostLayout(field string, x HostLayout) error {
	switch x {
	case LayerFirst, PageFirst, PageFirstDirect, LayerPageFirst:
		return nil
	}
	return Reject(ErrUnsupportedLayout, field, string(x),
		`"layer_first", "page_first", "page_first_direct" or "layer_page_first"`)
}

// checkHostPool rejects a pool that is neither "mla" nor "mha".
func checkHostPool(p HostPool) error {
	if p == HostPoolMLA || p == HostPoolMHA {
		return nil
	}
	return Reject(ErrBadEnum, "pool", string(p), `"mla" or "mha"`)
}

// checkLPFPool rejects layer_page_first on an MHA pool (§7.1: unsupported).
func checkLPFPool(field string, x HostLayout, p HostPool) error {
	if x == LayerPageFirst && p == HostPoolMHA {
		return Reject(ErrLPFUnsupportedPool, field, string(x), `a layout other than "layer_page_first" for pool "mha"`)
	}
	return nil
}

// checkSize rejects a geometry size below 1: ErrNegative below zero,
// ErrZeroSize at zero.
func checkSize(field string, v int64) error {
	switch {
	case v < 0:
		return Reject(ErrNegative, field, v, ">= 1")
	case v == 0:
		return Reject(ErrZeroSize, field, v, ">= 1")
	}
	return nil
}

// checkHostSizes validates layers, pages, page_size and token_bytes (in that
// order) and that planes×L×NP×P×tb fits in int64, and returns the geometry.
// Preconditions: layout and pool already checked (checkHostLayout,
// checkHostPool, checkLPFPool).
func checkHostSizes(layout HostLayout, pool HostPool, layers, pages, pageSize, tokenBytes int64) (HostGeometry, error) {
	for _, f := range []struct {
		name string
		v    int64
	}{{"layers", layers}, {"pages", pages}, {"page_size", pageSize}, {"token_bytes", tokenBytes}} {
		if err := checkSize(f.name, f.v); err != nil {
			return HostGeometry{}, err
		}
	}
	g := HostGeometry{Layout: layout, Pool: pool, L: layers, NP: pages, P: pageSize, TB: tokenBytes}
	if err := checkGeometryFits(g); err != nil {
		return HostGeometry{}, err
	}
	return g, nil
}

// checkGeometryFits multiplies the arena size out one factor at a time and
// names the factor whose product first overflows.
func checkGeometryFits(g HostGeometry) error {
	const most = int64(math.MaxInt64)
	bound := func(expr string) string { return fmt.Sprintf("%s <= %d", expr, most) }
	if MulOverflows(g.NP, g.P) {
		return Reject(ErrOverflow, "page_size", g.P, bound("pages×page_size"))
	}
	if MulOverflows(g.L, g.S()) {
		return Reject(ErrOverflow, "layers", g.L, bound("layers×pages×page_size"))
	}
	if MulOverflows(g.L*g.S(), g.TB) {
		return Reject(ErrOverflow, "token_bytes", g.TB, bound("layers×pages×page_size×token_bytes"))
	}
	if MulOverflows(g.PlaneBytes(), g.Planes()) {
		return Reject(ErrOverflow, "pool", string(g.Pool), bound("2×layers×pages×page_size×token_bytes"))
	}
	return nil
}

// validateHostOffsets checks in against docs/spec/transfer.md §7.1 in this order:
// the geometry (CheckHostOffsetsGeometry), every point (kv, layer, token,
// byte of points[0], then points[1], …), every span query (kv, layer,
// page), and last the size of the spans output (CheckSpansOutput). It
// returns the validated geometry.
func validateHostOffsets(lim Limits, in LayoutHostOffsetsInput) (HostGeometry, error) {
	g, err := CheckHostOffsetsGeometry(in)
	if err != nil {
		return HostGeometry{}, err
	}
	for i, pt := range in.Points {
		if err := CheckPoint(g, i, pt); err != nil {
			return HostGeometry{}, err
		}
	}
	for i, q := range in.Spans {
		if err := CheckPageQuery(g, i, q); err != nil {
			return HostGeometry{}, err
		}
	}
	return g, CheckSpansOutput(lim, g, len(in.Spans))
}

// CheckHostOffsetsGeometry checks layout, pool, LPF-on-MHA, then the sizes
// and their product, and returns the geometry.
func CheckHostOffsetsGeometry(in LayoutHostOffsetsInput) (HostGeometry, error) {
	if err := checkHostLayout("layout", in.Layout); err != nil {
		return HostGeometry{}, err
	}
	if err := checkHostPool(in.Pool); err != nil {
		return HostGeometry{}, err
	}
	if err := checkLPFPool("layout", in.Layout, in.Pool); err != nil {
		return HostGeometry{}, err
	}
	return checkHostSizes(in.Layout, in.Pool, in.Layers, in.Pages, in.PageSize, in.TokenBytes)
}

// CheckSpansOutput bounds the answer to n span queries: n ranges, or n×P
// under PF, of 16 bytes each.
func CheckSpansOutput(lim Limits, g HostGeometry, n int) error {
	count, per := int64(n), g.RangesPerPage()
	if MulOverflows(count, per) {
		return Reject(ErrOverflow, "spans", count, fmt.Sprintf("len(spans)×page_size <= %d", int64(math.MaxInt64)))
	}
	return lim.CheckOutput("spans", count*per, 16)
}

// coord is one query coordinate and its bound, for the range checks.
type coord struct {
	name  string // field name within the query, e.g. "layer"
	v, n  int64  // the value, which must lie in [0, n)
	bound string // the bound's name, e.g. "layers"
	s     *Sentinel
}

// CheckPoint checks points[i]'s kv, layer, token and byte, in that order:
// each in [0, planes / layers / pages×page_size / token_bytes).
func CheckPoint(g HostGeometry, i int, pt HostPoint) error {
	return checkCoords("points", i, [4]coord{
		{"kv", pt.KV, g.Planes(), "planes", ErrIndexOutOfRange},
		{"layer", pt.Layer, g.L, "layers", ErrIndexOutOfRange},
		{"token", pt.Token, g.S(), "pages×page_size", ErrIndexOutOfRange},
		{"byte", pt.Byte, g.TB, "token_bytes", ErrIndexOutOfRange},
	})
}

// CheckPageQuery checks spans[i]'s kv, layer and page, in that order; a
// page past the arena is ErrPageOutOfRange.
func CheckPageQuery(g HostGeometry, i int, q HostPageQuery) error {
	return checkCoords("spans", i, [4]coord{
		{"kv", q.KV, g.Planes(), "planes", ErrIndexOutOfRange},
		{"layer", q.Layer, g.L, "layers", ErrIndexOutOfRange},
		{"page", q.Page, g.NP, "pages", ErrPageOutOfRange},
	})
}

// checkCoords rejects the first coordinate outside its range, naming it
// list[i].name; the field path is only built for a rejection, so a valid
// query list costs no allocation.
func checkCoords(list string, i int, cs [4]coord) error {
	for _, c := range cs {
		if c.name == "" {
			break
		}
		if c.v < 0 || c.v >= c.n {
			return checkCoord(fmt.Sprintf("%s[%d].%s", list, i, c.name), c.v, c.n, c.bound, c.s)
		}
	}
	return nil
}

// checkCoord requires 0 <= v < n: ErrNegative below, s at or above.
func checkCoord(field string, v, n int64, name string, s *Sentinel) error {
	if v < 0 {
		return Reject(ErrNegative, field, v, ">= 0")
	}
	if v >= n {
		return Reject(s, field, v, fmt.Sprintf("in [0, %s=%d)", name, n))
	}
	return nil
}
