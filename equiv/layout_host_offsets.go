package equiv

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// LayoutHostOffsets is the differential spec of layout.host_offsets (docs/spec/transfer.md §7.1).
func LayoutHostOffsets() *Spec[spec.LayoutHostOffsetsInput, spec.LayoutHostOffsetsOutput] {
	return &Spec[spec.LayoutHostOffsetsInput, spec.LayoutHostOffsetsOutput]{
		Op:       catalog.LayoutHostOffsets(),
		Valid:    rapid.Custom(hostValid),
		Invalid:  rapid.Custom(hostInvalid),
		Boundary: hostBoundary(),
		Rejects:  map[string]*spec.Sentinel{"page-first-spans-overflow-int64": spec.ErrOverflow},
		Props: []Prop[spec.LayoutHostOffsetsInput, spec.LayoutHostOffsetsOutput]{
			{"worked-table", hostWorkedTable},
			{"total-bytes", hostTotalBytes},
			{"offsets-injective-into-arena", hostInjective},
			{"v-plane-follows-k-plane", hostVPlane},
			{"contiguity-facts", hostContiguityFacts},
			{"spans-hold-exactly-the-page", hostSpansHoldThePage},
			{"one-pointer-per-page", hostOnePointerPerPage},
			{"lpf-equals-lf-for-mla", hostLPFEqualsLF},
		},
	}
}

var allLayouts = []spec.HostLayout{spec.LayerFirst, spec.PageFirst, spec.PageFirstDirect, spec.LayerPageFirst}

// drawLayout draws a pool and a layout valid for it.
func drawLayout(t *rapid.T, label string) (spec.HostPool, spec.HostLayout) {
	pool := rapid.SampledFrom([]spec.HostPool{spec.HostPoolMLA, spec.HostPoolMHA}).Draw(t, "pool")
	if pool == spec.HostPoolMHA {
		return pool, rapid.SampledFrom(allLayouts[:3]).Draw(t, label)
	}
	return pool, rapid.SampledFrom(allLayouts).Draw(t, label)
}

func geometryOf(in spec.LayoutHostOffsetsInput) spec.HostGeometry {
	return spec.HostGeometry{Layout: in.Layout, Pool: in.Pool, L: in.Layers, NP: in.Pages, P: in.PageSize, TB: in.TokenBytes}
}

// hostValid draws small geometries (sometimes every coordinate of one as
// the point list, to witness the bijection) and now and then a production
// one (61 layers, 2^20 pages of 64 tokens, 1152 B) with random queries.
func hostValid(t *rapid.T) spec.LayoutHostOffsetsInput {
	pool, layout := drawLayout(t, "layout")
	in := spec.LayoutHostOffsetsInput{Layout: layout, Pool: pool}
	if rapid.IntRange(0, 9).Draw(t, "big") == 0 {
		in.Layers = rapid.Int64Range(1, 128).Draw(t, "layers")
		in.Pages = rapid.Int64Range(1, 1<<32).Draw(t, "pages")
		in.PageSize = rapid.SampledFrom([]int64{1, 16, 32, 64, 128}).Draw(t, "page_size")
		in.TokenBytes = rapid.SampledFrom([]int64{1, 656, 1152, 2048, 4096}).Draw(t, "token_bytes")
	} else {
		in.Layers = rapid.Int64Range(1, 4).Draw(t, "layers")
		in.Pages = rapid.Int64Range(1, 5).Draw(t, "pages")
		in.PageSize = rapid.Int64Range(1, 4).Draw(t, "page_size")
		in.TokenBytes = rapid.Int64Range(1, 4).Draw(t, "token_bytes")
	}
	g := geometryOf(in)
	if g.TotalBytes() <= 512 && rapid.IntRange(0, 3).Draw(t, "enumerate") == 0 {
		in.Points = everyPoint(g)
	} else {
		in.Points = make([]spec.HostPoint, rapid.IntRange(0, 12).Draw(t, "n_points"))
		for i := range in.Points {
			in.Points[i] = spec.HostPoint{
				KV:    rapid.Int64Range(0, g.Planes()-1).Draw(t, "kv"),
				Layer: rapid.Int64Range(0, g.L-1).Draw(t, "layer"),
				Token: rapid.Int64Range(0, g.S()-1).Draw(t, "token"),
				Byte:  rapid.Int64Range(0, g.TB-1).Draw(t, "byte"),
			}
		}
	}
	in.Spans = make([]spec.HostPageQuery, rapid.IntRange(0, 8).Draw(t, "n_spans"))
	for i := range in.Spans {
		in.Spans[i] = spec.HostPageQuery{
			KV:    rapid.Int64Range(0, g.Planes()-1).Draw(t, "span_kv"),
			Layer: rapid.Int64Range(0, g.L-1).Draw(t, "span_layer"),
			Page:  rapid.Int64Range(0, g.NP-1).Draw(t, "span_page"),
		}
	}
	return in
}

// everyPoint lists every (kv, layer, token, byte) of g.
func everyPoint(g spec.HostGeometry) []spec.HostPoint {
	pts := make([]spec.HostPoint, 0, g.TotalBytes())
	for kv := range g.Planes() {
		for l := range g.L {
			for t := range g.S() {
				for b := range g.TB {
					pts = append(pts, spec.HostPoint{KV: kv, Layer: l, Token: t, Byte: b})
				}
			}
		}
	}
	return pts
}

func hostInvalid(t *rapid.T) Bad[spec.LayoutHostOffsetsInput] {
	in := hostValid(t)
	g := geometryOf(in)
	sizes := []*int64{&in.Layers, &in.Pages, &in.PageSize, &in.TokenBytes}
	switch rapid.IntRange(0, 9).Draw(t, "violation") {
	case 0:
		in.Layout = spec.HostLayout(rapid.SampledFrom([]string{"", "layer_major", "PAGE_FIRST", "lpf"}).Draw(t, "bad_layout"))
		return Bad[spec.LayoutHostOffsetsInput]{in, spec.ErrUnsupportedLayout}
	case 1:
		in.Pool = spec.HostPool(rapid.SampledFrom([]string{"", "gqa", "MLA"}).Draw(t, "bad_pool"))
		return Bad[spec.LayoutHostOffsetsInput]{in, spec.ErrBadEnum}
	case 2:
		in.Layout, in.Pool = spec.LayerPageFirst, spec.HostPoolMHA
		return Bad[spec.LayoutHostOffsetsInput]{in, spec.ErrLPFUnsupportedPool}
	case 3:
		*sizes[rapid.IntRange(0, 3).Draw(t, "zero_size")] = 0
		return Bad[spec.LayoutHostOffsetsInput]{in, spec.ErrZeroSize}
	case 4:
		*sizes[rapid.IntRange(0, 3).Draw(t, "negative_size")] = rapid.Int64Range(math.MinInt64, -1).Draw(t, "negative")
		return Bad[spec.LayoutHostOffsetsInput]{in, spec.ErrNegative}
	case 5:
		// One size above MaxInt64/2 and another >= 2: the product overflows.
		i := rapid.IntRange(0, 3).Draw(t, "huge_size")
		*sizes[i] = rapid.Int64Range(math.MaxInt64/2+1, math.MaxInt64).Draw(t, "huge")
		j := (i + rapid.IntRange(1, 3).Draw(t, "other_size")) % 4
		*sizes[j] = max(*sizes[j], 2)
		return Bad[spec.LayoutHostOffsetsInput]{in, spec.ErrOverflow}
	case 6, 7:
		if len(in.Points) == 0 {
			in.Points = []spec.HostPoint{{}}
		}
		i := rapid.IntRange(0, len(in.Points)-1).Draw(t, "bad_point")
		pt := &in.Points[i]
		coords := []struct {
			v     *int64
			bound int64
		}{{&pt.KV, g.Planes()}, {&pt.Layer, g.L}, {&pt.Token, g.S()}, {&pt.Byte, g.TB}}
		c := coords[rapid.IntRange(0, 3).Draw(t, "bad_coord")]
		if rapid.Bool().Draw(t, "below") {
			*c.v = rapid.Int64Range(math.MinInt64, -1).Draw(t, "negative_coord")
			return Bad[spec.LayoutHostOffsetsInput]{in, spec.ErrNegative}
		}
		*c.v = rapid.Int64Range(c.bound, c.bound+3).Draw(t, "past_coord")
		return Bad[spec.LayoutHostOffsetsInput]{in, spec.ErrIndexOutOfRange}
	case 8:
		in.Spans = append(in.Spans, spec.HostPageQuery{})
		q := &in.Spans[rapid.IntRange(0, len(in.Spans)-1).Draw(t, "bad_span")]
		switch rapid.IntRange(0, 2).Draw(t, "bad_span_field") {
		case 0:
			q.KV = g.Planes()
			return Bad[spec.LayoutHostOffsetsInput]{in, spec.ErrIndexOutOfRange}
		case 1:
			q.Layer = -1
			return Bad[spec.LayoutHostOffsetsInput]{in, spec.ErrNegative}
		default:
			q.Page = rapid.Int64Range(g.NP, g.NP+3).Draw(t, "past_page")
			return Bad[spec.LayoutHostOffsetsInput]{in, spec.ErrPageOutOfRange}
		}
	default:
		// PF answers a page with page_size ranges: 2^27 of them are 2 GiB.
		in = spec.LayoutHostOffsetsInput{Layout: spec.PageFirst, Pool: in.Pool, Layers: 1, Pages: 1, PageSize: 1 << 27, TokenBytes: 1,
			Spans: []spec.HostPageQuery{{}}}
		return Bad[spec.LayoutHostOffsetsInput]{in, spec.ErrTooLarge}
	}
}

// hostBoundary: §7.1's worked geometry in every layout and pool, every
// point of geometries straddling one page, one layer and one token per
// page, and a production-size and an int64-filling geometry.
func hostBoundary() []Case[spec.LayoutHostOffsetsInput] {
	var cs []Case[spec.LayoutHostOffsetsInput]
	for _, pool := range []spec.HostPool{spec.HostPoolMLA, spec.HostPoolMHA} {
		for _, layout := range allLayouts {
			if pool == spec.HostPoolMHA && layout == spec.LayerPageFirst {
				continue
			}
			for _, dims := range [][4]int64{{2, 2, 2, 1}, {1, 1, 1, 1}, {1, 3, 2, 2}, {3, 1, 3, 1}, {2, 2, 1, 3}, {2, 3, 3, 2}} {
				g := spec.HostGeometry{Layout: layout, Pool: pool, L: dims[0], NP: dims[1], P: dims[2], TB: dims[3]}
				cs = append(cs, Case[spec.LayoutHostOffsetsInput]{
					fmt.Sprintf("%s-%s-L%d-NP%d-P%d-tb%d", pool, layout, g.L, g.NP, g.P, g.TB),
					spec.LayoutHostOffsetsInput{Layout: layout, Pool: pool, Layers: g.L, Pages: g.NP, PageSize: g.P, TokenBytes: g.TB,
						Points: everyPoint(g), Spans: everyPage(g)},
				})
			}
			last := func(L, NP, P, tb int64) spec.LayoutHostOffsetsInput {
				g := spec.HostGeometry{Layout: layout, Pool: pool, L: L, NP: NP, P: P, TB: tb}
				kv := g.Planes() - 1
				return spec.LayoutHostOffsetsInput{Layout: layout, Pool: pool, Layers: L, Pages: NP, PageSize: P, TokenBytes: tb,
					Points: []spec.HostPoint{{}, {KV: kv, Layer: L - 1, Token: g.S() - 1, Byte: tb - 1}},
					Spans:  []spec.HostPageQuery{{KV: kv, Layer: L - 1, Page: NP - 1}}}
			}
			cs = append(cs,
				Case[spec.LayoutHostOffsetsInput]{fmt.Sprintf("%s-%s-deepseek-last-byte", pool, layout), last(61, 1<<20, 64, 1152)},
				Case[spec.LayoutHostOffsetsInput]{fmt.Sprintf("%s-%s-int64-last-byte", pool, layout), last(1, 1, 1, math.MaxInt64/2)},
			)
		}
	}
	// Under page_first a page is page_size ranges: two span queries on a
	// 2^62-token page ask for 2^63 ranges, past int64 (CheckSpansOutput).
	return append(cs, Case[spec.LayoutHostOffsetsInput]{"page-first-spans-overflow-int64",
		spec.LayoutHostOffsetsInput{Layout: spec.PageFirst, Pool: spec.HostPoolMLA, Layers: 1, Pages: 1, PageSize: 1 << 62, TokenBytes: 1,
			Spans: []spec.HostPageQuery{{}, {}}}})
}

// everyPage lists every (kv, layer, page) of g.
func everyPage(g spec.HostGeometry) []spec.HostPageQuery {
	var qs []spec.HostPageQuery
	for kv := range g.Planes() {
		for l := range g.L {
			for p := range g.NP {
				qs = append(qs, spec.HostPageQuery{KV: kv, Layer: l, Page: p})
			}
		}
	}
	return qs
}

// hostWorkedTable is §7.1's worked table (L=2, NP=2, P=2, tb=1, MLA): each
// point's offset is the table's cell for its (l, t).
func hostWorkedTable(_ spec.Limits, in spec.LayoutHostOffsetsInput, out spec.LayoutHostOffsetsOutput) error {
	if in.Pool != spec.HostPoolMLA || in.Layers != 2 || in.Pages != 2 || in.PageSize != 2 || in.TokenBytes != 1 {
		return nil
	}
	table := map[spec.HostLayout][2][4]int64{
		spec.LayerFirst:      {{0, 1, 2, 3}, {4, 5, 6, 7}},
		spec.LayerPageFirst:  {{0, 1, 2, 3}, {4, 5, 6, 7}},
		spec.PageFirst:       {{0, 2, 4, 6}, {1, 3, 5, 7}},
		spec.PageFirstDirect: {{0, 1, 4, 5}, {2, 3, 6, 7}},
	}[in.Layout]
	for i, pt := range in.Points {
		if want := table[pt.Layer][pt.Token]; out.Offsets[i] != want {
			return fmt.Errorf("%s (l=%d, t=%d): offset %d, table says %d", in.Layout, pt.Layer, pt.Token, out.Offsets[i], want)
		}
	}
	return nil
}

// hostTotalBytes: the arena is planes × L × NP × P × tb bytes (§7.1 notation).
func hostTotalBytes(_ spec.Limits, in spec.LayoutHostOffsetsInput, out spec.LayoutHostOffsetsOutput) error {
	planes := int64(1)
	if in.Pool == spec.HostPoolMHA {
		planes = 2
	}
	if want := planes * in.Layers * in.Pages * in.PageSize * in.TokenBytes; out.TotalBytes != want {
		return fmt.Errorf("total_bytes %d, want %d", out.TotalBytes, want)
	}
	return nil
}

// hostInjective is the address half of §7.2's "relayout is a bijection":
// every offset lies in [0, total) and distinct coordinates get distinct
// offsets; a point list naming every coordinate is thus a bijection.
func hostInjective(_ spec.Limits, in spec.LayoutHostOffsetsInput, out spec.LayoutHostOffsetsOutput) error {
	if len(out.Offsets) != len(in.Points) {
		return fmt.Errorf("%d offsets for %d points", len(out.Offsets), len(in.Points))
	}
	at := make(map[int64]spec.HostPoint, len(in.Points))
	for i, off := range out.Offsets {
		pt := in.Points[i]
		if off < 0 || off >= out.TotalBytes {
			return fmt.Errorf("point %+v at %d, outside [0, %d)", pt, off, out.TotalBytes)
		}
		if prev, ok := at[off]; ok && prev != pt {
			return fmt.Errorf("points %+v and %+v share offset %d", prev, pt, off)
		}
		at[off] = pt
	}
	return nil
}

// hostVPlane is the MHA column of §7.1: a V byte sits one plane (L×S×tb)
// after the same K byte, whatever the layout.
func hostVPlane(lim spec.Limits, in spec.LayoutHostOffsetsInput, out spec.LayoutHostOffsetsOutput) error {
	if in.Pool != spec.HostPoolMHA {
		return nil
	}
	plane := in.Layers * in.Pages * in.PageSize * in.TokenBytes
	k := in
	k.Points, k.Spans = slices.Clone(in.Points), nil
	for i := range k.Points {
		k.Points[i].KV = 0
	}
	kout, err := ref.LayoutHostOffsets(lim, k)
	if err != nil {
		return fmt.Errorf("ref on the K plane: %v", err)
	}
	for i, pt := range in.Points {
		if want := kout.Offsets[i] + pt.KV*plane; out.Offsets[i] != want {
			return fmt.Errorf("point %+v at %d, want K offset %d + %d×plane", pt, out.Offsets[i], kout.Offsets[i], pt.KV)
		}
	}
	return nil
}

// hostContiguityFacts are §7.1's contiguity bullets, on each span answer:
// LF/LPF layer l's page p is [(l×S+p×P)×tb, +pb); PFD it is layer l's pb
// slice of the page's all-layer block [p×L×pb, +L×pb); PF it is P ranges of
// tb, one per token, L×tb apart, inside the page's block [p×L×pb, +L×pb).
func hostContiguityFacts(_ spec.Limits, in spec.LayoutHostOffsetsInput, out spec.LayoutHostOffsetsOutput) error {
	L, S, P, tb := in.Layers, in.Pages*in.PageSize, in.PageSize, in.TokenBytes
	pb, plane := P*tb, in.Layers*in.Pages*in.PageSize*in.TokenBytes
	if len(out.Spans) != len(in.Spans) {
		return fmt.Errorf("%d span answers for %d queries", len(out.Spans), len(in.Spans))
	}
	for i, q := range in.Spans {
		base := q.KV * plane
		var want []spec.ByteRange
		switch in.Layout {
		case spec.LayerFirst, spec.LayerPageFirst:
			want = []spec.ByteRange{{Offset: base + (q.Layer*S+q.Page*P)*tb, Len: pb}}
		case spec.PageFirstDirect:
			want = []spec.ByteRange{{Offset: base + q.Page*L*pb + q.Layer*pb, Len: pb}}
		case spec.PageFirst:
			for o := range P {
				want = append(want, spec.ByteRange{Offset: base + q.Page*L*pb + q.Layer*tb + o*L*tb, Len: tb})
			}
		}
		if !slices.Equal(want, out.Spans[i]) {
			return fmt.Errorf("%s span %+v: got %v, the contiguity facts say %v", in.Layout, q, out.Spans[i], want)
		}
	}
	return nil
}

// hostSpansHoldThePage ties the two answers together: a span answer's
// ranges, ascending and disjoint, cover exactly the point offsets of every
// (token, byte) of that layer page, as ref's point formula places them.
func hostSpansHoldThePage(lim spec.Limits, in spec.LayoutHostOffsetsInput, out spec.LayoutHostOffsetsOutput) error {
	if in.PageSize*in.TokenBytes > 4096 {
		return nil // keep the point enumeration small
	}
	for i, q := range in.Spans {
		pts := spec.LayoutHostOffsetsInput{Layout: in.Layout, Pool: in.Pool, Layers: in.Layers, Pages: in.Pages, PageSize: in.PageSize, TokenBytes: in.TokenBytes}
		for o := range in.PageSize {
			for b := range in.TokenBytes {
				pts.Points = append(pts.Points, spec.HostPoint{KV: q.KV, Layer: q.Layer, Token: q.Page*in.PageSize + o, Byte: b})
			}
		}
		r, err := ref.LayoutHostOffsets(lim, pts)
		if err != nil {
			return fmt.Errorf("ref points of span %+v: %v", q, err)
		}
		want := slices.Sorted(slices.Values(r.Offsets))
		var got []int64
		for j, rg := range out.Spans[i] {
			if j > 0 && rg.Offset < out.Spans[i][j-1].Offset+out.Spans[i][j-1].Len {
				return fmt.Errorf("span %+v: ranges %v overlap or descend", q, out.Spans[i])
			}
			for b := range rg.Len {
				got = append(got, rg.Offset+b)
			}
		}
		if !slices.Equal(want, got) {
			return fmt.Errorf("span %+v: ranges %v cover %v, the page's bytes are at %v", q, out.Spans[i], got, want)
		}
	}
	return nil
}

// hostOnePointerPerPage is §7.1's last fact: page_contiguous_across_layers
// is true exactly for PF and PFD, and then every layer of a queried page
// together is one contiguous L×pb block; LF with L, NP >= 2 is not.
func hostOnePointerPerPage(lim spec.Limits, in spec.LayoutHostOffsetsInput, out spec.LayoutHostOffsetsOutput) error {
	want := in.Layout == spec.PageFirst || in.Layout == spec.PageFirstDirect
	if out.PageContiguousAcrossLayers != want {
		return fmt.Errorf("%s: page_contiguous_across_layers %v, want %v", in.Layout, out.PageContiguousAcrossLayers, want)
	}
	if in.PageSize > 256 {
		return nil
	}
	for _, q := range in.Spans {
		all := spec.LayoutHostOffsetsInput{Layout: in.Layout, Pool: in.Pool, Layers: in.Layers, Pages: in.Pages, PageSize: in.PageSize, TokenBytes: in.TokenBytes}
		for l := range in.Layers {
			all.Spans = append(all.Spans, spec.HostPageQuery{KV: q.KV, Layer: l, Page: q.Page})
		}
		r, err := ref.LayoutHostOffsets(lim, all)
		if err != nil {
			return fmt.Errorf("ref spans of page %+v: %v", q, err)
		}
		contiguous := rangesContiguous(slices.Concat(r.Spans...))
		if want && !contiguous {
			return fmt.Errorf("%s: the layers of page %d are not one block", in.Layout, q.Page)
		}
		if !want && in.Layers >= 2 && in.Pages >= 2 && contiguous {
			return fmt.Errorf("%s: the layers of page %d form one block", in.Layout, q.Page)
		}
	}
	return nil
}

// rangesContiguous reports whether rs, in any order, tile one interval.
func rangesContiguous(rs []spec.ByteRange) bool {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b spec.ByteRange) int { return cmp.Compare(a.Offset, b.Offset) })
	for i := 1; i < len(rs); i++ {
		if rs[i].Offset != rs[i-1].Offset+rs[i-1].Len {
			return false
		}
	}
	return true
}

// hostLPFEqualsLF is §7.1: for one MLA buffer LPF offsets are numerically
// those of LF.
func hostLPFEqualsLF(lim spec.Limits, in spec.LayoutHostOffsetsInput, out spec.LayoutHostOffsetsOutput) error {
	if in.Layout != spec.LayerPageFirst {
		return nil
	}
	lf := in
	lf.Layout = spec.LayerFirst
	r, err := ref.LayoutHostOffsets(lim, lf)
	if err != nil {
		return fmt.Errorf("ref as LF: %v", err)
	}
	if !slices.Equal(r.Offsets, out.Offsets) || !slices.EqualFunc(r.Spans, out.Spans, slices.Equal) {
		return fmt.Errorf("LPF answers %v %v differ from LF's %v %v", out.Offsets, out.Spans, r.Offsets, r.Spans)
	}
	return nil
}
