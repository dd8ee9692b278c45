package fast

import (
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// strides is a layout's §7.1 offset formula with its products hoisted out
// of the per-query work: the offset of (plane kv, layer l, page p, token o
// of the page, byte b) is kv×plane + l×layer + p×page + o×tok + b.
type strides struct{ plane, layer, page, tok int64 }

// HostStrides returns g's byte strides per plane, layer, page and token:
// the §7.1 offset of (kv, l, p, o, b) is kv×plane + l×layer + p×page +
// o×tok + b (docs/spec/transfer.md §7.1). g must be valid (spec.HostGeometry.Validate).
func HostStrides(g spec.HostGeometry) (plane, layer, page, tok int64) {
	s := stridesOf(g)
	return s.plane, s.layer, s.page, s.tok
}

// stridesOf expands each row of the §7.1 table into strides:
// LF/LPF (l×S+t)×tb → layer S×tb, page pb, token tb;
// PF (t×L+l)×tb → layer tb, page L×pb, token L×tb;
// PFD ((p×L+l)×P+o)×tb → layer pb, page L×pb, token tb.
func stridesOf(g spec.HostGeometry) strides {
	s := strides{plane: g.PlaneBytes()}
	switch g.Layout {
	case spec.PageFirst:
		s.layer, s.page, s.tok = g.TB, g.L*g.PB(), g.L*g.TB
	case spec.PageFirstDirect:
		s.layer, s.page, s.tok = g.PB(), g.L*g.PB(), g.TB
	default: // LayerFirst, LayerPageFirst
		s.layer, s.page, s.tok = g.S()*g.TB, g.PB(), g.TB
	}
	return s
}

// LayoutHostOffsets is the strided twin of ref.LayoutHostOffsets (docs/spec/transfer.md §7.1):
// the per-layout strides are computed once, a token's page and in-page
// position collapse into one multiply wherever page = P×token stride (all
// but PFD), every span's ranges live in one exact-size backing slice, and
// the range checks ride along in the same pass (one unsigned compare per
// coordinate), deferring to ref's checks only to word the first rejection.
func LayoutHostOffsets(lim spec.Limits, in spec.LayoutHostOffsetsInput) (spec.LayoutHostOffsetsOutput, error) {
	g, err := ref.CheckHostOffsetsGeometry(in)
	if err != nil {
		return spec.LayoutHostOffsetsOutput{}, err
	}
	offsets, err := pointOffsets(g, in.Points)
	if err != nil {
		return spec.LayoutHostOffsetsOutput{}, err
	}
	planes, L, NP := uint64(g.Planes()), uint64(g.L), uint64(g.NP)
	for i, q := range in.Spans {
		if uint64(q.KV) >= planes || uint64(q.Layer) >= L || uint64(q.Page) >= NP {
			return spec.LayoutHostOffsetsOutput{}, ref.CheckPageQuery(g, i, q)
		}
	}
	if err := ref.CheckSpansOutput(lim, g, len(in.Spans)); err != nil {
		return spec.LayoutHostOffsetsOutput{}, err
	}
	return spec.LayoutHostOffsetsOutput{
		Offsets:                    offsets,
		Spans:                      pageSpans(g, stridesOf(g), in.Spans),
		TotalBytes:                 g.TotalBytes(),
		PageContiguousAcrossLayers: g.PageContiguousAcrossLayers(),
	}, nil
}

// pointOffsets checks and places every point in one pass; a negative
// coordinate is a huge unsigned one, so one compare per coordinate bounds
// it on both sides.
func pointOffsets(g spec.HostGeometry, pts []spec.HostPoint) ([]int64, error) {
	s, P := stridesOf(g), g.P
	planes, L, S, tb := uint64(g.Planes()), uint64(g.L), uint64(g.S()), uint64(g.TB)
	linear := s.page == P*s.tok // every layout but PFD: p×page + o×tok = t×tok
	offsets := make([]int64, len(pts))
	for i, pt := range pts {
		if uint64(pt.KV) >= planes || uint64(pt.Layer) >= L || uint64(pt.Token) >= S || uint64(pt.Byte) >= tb {
			return nil, ref.CheckPoint(g, i, pt)
		}
		off := pt.KV*s.plane + pt.Layer*s.layer + pt.Byte
		if linear {
			off += pt.Token * s.tok
		} else {
			off += pt.Token/P*s.page + pt.Token%P*s.tok
		}
		offsets[i] = off
	}
	return offsets, nil
}

// pageSpans answers the page queries: one pb range per query, or under PF
// P ranges of tb bytes a token stride apart, carved from one allocation.
func pageSpans(g spec.HostGeometry, s strides, qs []spec.HostPageQuery) [][]spec.ByteRange {
	per := g.RangesPerPage()
	backing := make([]spec.ByteRange, int64(len(qs))*per)
	spans := make([][]spec.ByteRange, len(qs))
	for i, q := range qs {
		lo := int64(i) * per
		rs := backing[lo : lo+per : lo+per]
		base := q.KV*s.plane + q.Layer*s.layer + q.Page*s.page
		if per == 1 {
			rs[0] = spec.ByteRange{Offset: base, Len: g.PB()}
		} else {
			for o := range rs {
				rs[o] = spec.ByteRange{Offset: base + int64(o)*s.tok, Len: g.TB}
			}
		}
		spans[i] = rs
	}
	return spans
}
