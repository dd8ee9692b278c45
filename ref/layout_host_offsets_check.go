package ref

import (
	"fmt"
	"math"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for layout.host_offsets (docs/spec/transfer.md §7.1, §7.2): layout, pool, sizes and each query.

// checkHostLayout rejects a layout string that is not one of §7.1's four.
func checkHostLayout(field string, x spec.HostLayout) error {
	switch x {
	case spec.LayerFirst, spec.PageFirst, spec.PageFirstDirect, spec.LayerPageFirst:
		return nil
	}
	return spec.Reject(spec.ErrUnsupportedLayout, field, string(x),
		`"layer_first", "page_first", "page_first_direct" or "layer_page_first"`)
}

// checkHostPool rejects a pool that is neither "mla" nor "mha".
func checkHostPool(p spec.HostPool) error {
	if p == spec.HostPoolMLA || p == spec.HostPoolMHA {
		return nil
	}
	return spec.Reject(spec.ErrBadEnum, "pool", string(p), `"mla" or "mha"`)
}

// checkLPFPool rejects layer_page_first on an MHA pool (§7.1: unsupported).
func checkLPFPool(field string, x spec.HostLayout, p spec.HostPool) error {
	if x == spec.LayerPageFirst && p == spec.HostPoolMHA {
		return spec.Reject(spec.ErrLPFUnsupportedPool, field, string(x), `a layout other than "layer_page_first" for pool "mha"`)
	}
	return nil
}

// checkSize rejects a geometry size below 1: ErrNegative below zero,
// ErrZeroSize at zero.
func checkSize(field string, v int64) error {
	switch {
	case v < 0:
		return spec.Reject(spec.ErrNegative, field, v, ">= 1")
	case v == 0:
		return spec.Reject(spec.ErrZeroSize, field, v, ">= 1")
	}
	return nil
}

// checkHostSizes validates layers, pages, page_size and token_bytes (in that
// order) and that planes×L×NP×P×tb fits in int64, and returns the geometry.
// Preconditions: layout and pool already checked (checkHostLayout,
// checkHostPool, checkLPFPool).
func checkHostSizes(layout spec.HostLayout, pool spec.HostPool, layers, pages, pageSize, tokenBytes int64) (spec.HostGeometry, error) {
	for _, f := range []struct {
		name string
		v    int64
	}{{"layers", layers}, {"pages", pages}, {"page_size", pageSize}, {"token_bytes", tokenBytes}} {
		if err := checkSize(f.name, f.v); err != nil {
			return spec.HostGeometry{}, err
		}
	}
	g := spec.HostGeometry{Layout: layout, Pool: pool, L: layers, NP: pages, P: pageSize, TB: tokenBytes}
	if err := checkGeometryFits(g); err != nil {
		return spec.HostGeometry{}, err
	}
	return g, nil
}

// checkGeometryFits multiplies the arena size out one factor at a time and
// names the factor whose product first overflows.
func checkGeometryFits(g spec.HostGeometry) error {
	const most = int64(math.MaxInt64)
	bound := func(expr string) string { return fmt.Sprintf("%s <= %d", expr, most) }
	if spec.MulOverflows(g.NP, g.P) {
		return spec.Reject(spec.ErrOverflow, "page_size", g.P, bound("pages×page_size"))
	}
	if spec.MulOverflows(g.L, g.S()) {
		return spec.Reject(spec.ErrOverflow, "layers", g.L, bound("layers×pages×page_size"))
	}
	if spec.MulOverflows(g.L*g.S(), g.TB) {
		return spec.Reject(spec.ErrOverflow, "token_bytes", g.TB, bound("layers×pages×page_size×token_bytes"))
	}
	if spec.MulOverflows(g.PlaneBytes(), g.Planes()) {
		return spec.Reject(spec.ErrOverflow, "pool", string(g.Pool), bound("2×layers×pages×page_size×token_bytes"))
	}
	return nil
}

// validateHostOffsets checks in against docs/spec/transfer.md §7.1 in this order:
// the geometry (CheckHostOffsetsGeometry), every point (kv, layer, token,
// byte of points[0], then points[1], …), every span query (kv, layer,
// page), and last the size of the spans output (CheckSpansOutput). It
// returns the validated geometry.
func validateHostOffsets(lim spec.Limits, in spec.LayoutHostOffsetsInput) (spec.HostGeometry, error) {
	g, err := CheckHostOffsetsGeometry(in)
	if err != nil {
		return spec.HostGeometry{}, err
	}
	for i, pt := range in.Points {
		if err := CheckPoint(g, i, pt); err != nil {
			return spec.HostGeometry{}, err
		}
	}
	for i, q := range in.Spans {
		if err := CheckPageQuery(g, i, q); err != nil {
			return spec.HostGeometry{}, err
		}
	}
	return g, CheckSpansOutput(lim, g, len(in.Spans))
}

// CheckHostOffsetsGeometry checks layout, pool, LPF-on-MHA, then the sizes
// and their product, and returns the geometry.
func CheckHostOffsetsGeometry(in spec.LayoutHostOffsetsInput) (spec.HostGeometry, error) {
	if err := checkHostLayout("layout", in.Layout); err != nil {
		return spec.HostGeometry{}, err
	}
	if err := checkHostPool(in.Pool); err != nil {
		return spec.HostGeometry{}, err
	}
	if err := checkLPFPool("layout", in.Layout, in.Pool); err != nil {
		return spec.HostGeometry{}, err
	}
	return checkHostSizes(in.Layout, in.Pool, in.Layers, in.Pages, in.PageSize, in.TokenBytes)
}

// CheckSpansOutput bounds the answer to n span queries: n ranges, or n×P
// under PF, of 16 bytes each.
func CheckSpansOutput(lim spec.Limits, g spec.HostGeometry, n int) error {
	count, per := int64(n), g.RangesPerPage()
	if spec.MulOverflows(count, per) {
		return spec.Reject(spec.ErrOverflow, "spans", count, fmt.Sprintf("len(spans)×page_size <= %d", int64(math.MaxInt64)))
	}
	return lim.CheckOutput("spans", count*per, 16)
}

// coord is one query coordinate and its bound, for the range checks.
type coord struct {
	name  string // field name within the query, e.g. "layer"
	v, n  int64  // the value, which must lie in [0, n)
	bound string // the bound's name, e.g. "layers"
	s     *spec.Sentinel
}

// CheckPoint checks points[i]'s kv, layer, token and byte, in that order:
// each in [0, planes / layers / pages×page_size / token_bytes).
func CheckPoint(g spec.HostGeometry, i int, pt spec.HostPoint) error {
	return checkCoords("points", i, [4]coord{
		{"kv", pt.KV, g.Planes(), "planes", spec.ErrIndexOutOfRange},
		{"layer", pt.Layer, g.L, "layers", spec.ErrIndexOutOfRange},
		{"token", pt.Token, g.S(), "pages×page_size", spec.ErrIndexOutOfRange},
		{"byte", pt.Byte, g.TB, "token_bytes", spec.ErrIndexOutOfRange},
	})
}

// CheckPageQuery checks spans[i]'s kv, layer and page, in that order; a
// page past the arena is ErrPageOutOfRange.
func CheckPageQuery(g spec.HostGeometry, i int, q spec.HostPageQuery) error {
	return checkCoords("spans", i, [4]coord{
		{"kv", q.KV, g.Planes(), "planes", spec.ErrIndexOutOfRange},
		{"layer", q.Layer, g.L, "layers", spec.ErrIndexOutOfRange},
		{"page", q.Page, g.NP, "pages", spec.ErrPageOutOfRange},
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
func checkCoord(field string, v, n int64, name string, s *spec.Sentinel) error {
	if v < 0 {
		return spec.Reject(spec.ErrNegative, field, v, ">= 0")
	}
	if v >= n {
		return spec.Reject(s, field, v, fmt.Sprintf("in [0, %s=%d)", name, n))
	}
	return nil
}
