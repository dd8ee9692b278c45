package ref_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// workedPoints are the eight (l, t) of docs/spec/transfer.md §7.1's worked table
// (L=2, NP=2, P=2, tb=1), in the table's column order.
func workedPoints() []spec.HostPoint {
	var pts []spec.HostPoint
	for l := range int64(2) {
		for t := range int64(4) {
			pts = append(pts, spec.HostPoint{Layer: l, Token: t})
		}
	}
	return pts
}

// TestLayoutHostOffsetsMatchTheWorkedTable pins every cell of §7.1's worked table.
func TestLayoutHostOffsetsMatchTheWorkedTable(t *testing.T) {
	want := map[spec.HostLayout][]int64{
		spec.LayerFirst:      {0, 1, 2, 3, 4, 5, 6, 7},
		spec.LayerPageFirst:  {0, 1, 2, 3, 4, 5, 6, 7},
		spec.PageFirst:       {0, 2, 4, 6, 1, 3, 5, 7},
		spec.PageFirstDirect: {0, 1, 4, 5, 2, 3, 6, 7},
	}
	for layout, offs := range want {
		in := spec.LayoutHostOffsetsInput{Layout: layout, Pool: spec.HostPoolMLA, Layers: 2, Pages: 2, PageSize: 2, TokenBytes: 1, Points: workedPoints()}
		got, err := ref.LayoutHostOffsets(spec.DefaultLimits(), in)
		if err != nil {
			t.Fatalf("%s: %v", layout, err)
		}
		if d := cmp.Diff(offs, got.Offsets); d != "" {
			t.Errorf("%s offsets (-want +got):\n%s", layout, d)
		}
		if got.TotalBytes != 8 {
			t.Errorf("%s: total_bytes %d, want 8", layout, got.TotalBytes)
		}
	}
}

// TestPageSpansFollowTheContiguityFacts pins §7.1's contiguity facts on a
// geometry with L=2, NP=3, P=2, tb=3 (pb=6): LF/LPF a layer's pages are
// adjacent pb ranges; PFD a layer's page is one pb range, pages L×pb apart;
// PF a layer's page is P ranges of tb, L×tb apart.
func TestPageSpansFollowTheContiguityFacts(t *testing.T) {
	q := []spec.HostPageQuery{{Layer: 1, Page: 1}, {Layer: 1, Page: 2}}
	cases := []struct {
		layout spec.HostLayout
		want   [][]spec.ByteRange
		onePtr bool
	}{
		{spec.LayerFirst, [][]spec.ByteRange{{{Offset: 24, Len: 6}}, {{Offset: 30, Len: 6}}}, false},
		{spec.LayerPageFirst, [][]spec.ByteRange{{{Offset: 24, Len: 6}}, {{Offset: 30, Len: 6}}}, false},
		{spec.PageFirstDirect, [][]spec.ByteRange{{{Offset: 18, Len: 6}}, {{Offset: 30, Len: 6}}}, true},
		{spec.PageFirst, [][]spec.ByteRange{
			{{Offset: 15, Len: 3}, {Offset: 21, Len: 3}},
			{{Offset: 27, Len: 3}, {Offset: 33, Len: 3}},
		}, true},
	}
	for _, c := range cases {
		in := spec.LayoutHostOffsetsInput{Layout: c.layout, Pool: spec.HostPoolMLA, Layers: 2, Pages: 3, PageSize: 2, TokenBytes: 3, Spans: q}
		got, err := ref.LayoutHostOffsets(spec.DefaultLimits(), in)
		if err != nil {
			t.Fatalf("%s: %v", c.layout, err)
		}
		if d := cmp.Diff(c.want, got.Spans); d != "" {
			t.Errorf("%s spans (-want +got):\n%s", c.layout, d)
		}
		if got.PageContiguousAcrossLayers != c.onePtr {
			t.Errorf("%s: page_contiguous_across_layers %v, want %v", c.layout, got.PageContiguousAcrossLayers, c.onePtr)
		}
	}
}

// TestMHAVPlaneStartsAfterTheKPlane pins the MHA column of §7.1: the V
// plane (kv=1) is offset by one plane, L×S×tb.
func TestMHAVPlaneStartsAfterTheKPlane(t *testing.T) {
	for _, layout := range []spec.HostLayout{spec.LayerFirst, spec.PageFirst, spec.PageFirstDirect} {
		in := spec.LayoutHostOffsetsInput{Layout: layout, Pool: spec.HostPoolMHA, Layers: 2, Pages: 2, PageSize: 2, TokenBytes: 1,
			Points: []spec.HostPoint{{KV: 0, Layer: 1, Token: 2}, {KV: 1, Layer: 1, Token: 2}}}
		got, err := ref.LayoutHostOffsets(spec.DefaultLimits(), in)
		if err != nil {
			t.Fatalf("%s: %v", layout, err)
		}
		if got.TotalBytes != 16 || got.Offsets[1] != got.Offsets[0]+8 {
			t.Errorf("%s: offsets %v total %d, want V = K+8 and total 16", layout, got.Offsets, got.TotalBytes)
		}
	}
}

// TestLayoutHostOffsetsRejectsBadInputNamingFieldAndBound pins the bad-input
// table of layout.host_offsets.
func TestLayoutHostOffsetsRejectsBadInputNamingFieldAndBound(t *testing.T) {
	ok := func() spec.LayoutHostOffsetsInput {
		return spec.LayoutHostOffsetsInput{Layout: spec.LayerFirst, Pool: spec.HostPoolMLA, Layers: 2, Pages: 2, PageSize: 2, TokenBytes: 1}
	}
	with := func(f func(*spec.LayoutHostOffsetsInput)) spec.LayoutHostOffsetsInput { in := ok(); f(&in); return in }
	cases := []struct {
		in    spec.LayoutHostOffsetsInput
		want  *spec.Sentinel
		field string
	}{
		{with(func(in *spec.LayoutHostOffsetsInput) { in.Layout = "page_major" }), spec.ErrUnsupportedLayout, "layout"},
		{with(func(in *spec.LayoutHostOffsetsInput) { in.Pool = "gqa" }), spec.ErrBadEnum, "pool"},
		{with(func(in *spec.LayoutHostOffsetsInput) { in.Layout, in.Pool = spec.LayerPageFirst, spec.HostPoolMHA }), spec.ErrLPFUnsupportedPool, "layout"},
		{with(func(in *spec.LayoutHostOffsetsInput) { in.Layers = 0 }), spec.ErrZeroSize, "layers"},
		{with(func(in *spec.LayoutHostOffsetsInput) { in.Pages = -1 }), spec.ErrNegative, "pages"},
		{with(func(in *spec.LayoutHostOffsetsInput) { in.TokenBytes = 0 }), spec.ErrZeroSize, "token_bytes"},
		{with(func(in *spec.LayoutHostOffsetsInput) { in.Pages, in.PageSize = 1<<32, 1<<31 }), spec.ErrOverflow, "page_size"},
		{with(func(in *spec.LayoutHostOffsetsInput) { in.Layers, in.Pages = 1<<40, 1<<30 }), spec.ErrOverflow, "layers"},
		{with(func(in *spec.LayoutHostOffsetsInput) { in.TokenBytes = 1 << 61 }), spec.ErrOverflow, "token_bytes"},
		{with(func(in *spec.LayoutHostOffsetsInput) { in.Pool, in.TokenBytes = spec.HostPoolMHA, 1<<59 }), spec.ErrOverflow, "pool"},
		{with(func(in *spec.LayoutHostOffsetsInput) { in.Points = []spec.HostPoint{{}, {KV: 1}} }), spec.ErrIndexOutOfRange, "points[1].kv"},
		{with(func(in *spec.LayoutHostOffsetsInput) { in.Points = []spec.HostPoint{{Layer: -1}} }), spec.ErrNegative, "points[0].layer"},
		{with(func(in *spec.LayoutHostOffsetsInput) { in.Points = []spec.HostPoint{{Token: 4}} }), spec.ErrIndexOutOfRange, "points[0].token"},
		{with(func(in *spec.LayoutHostOffsetsInput) { in.Points = []spec.HostPoint{{Byte: 1}} }), spec.ErrIndexOutOfRange, "points[0].byte"},
		{with(func(in *spec.LayoutHostOffsetsInput) { in.Spans = []spec.HostPageQuery{{Page: 2}} }), spec.ErrPageOutOfRange, "spans[0].page"},
		{with(func(in *spec.LayoutHostOffsetsInput) { in.Spans = []spec.HostPageQuery{{Layer: 2}} }), spec.ErrIndexOutOfRange, "spans[0].layer"},
		{with(func(in *spec.LayoutHostOffsetsInput) {
			in.Layout, in.Pages, in.PageSize = spec.PageFirst, 1, 1<<40
			in.Spans = []spec.HostPageQuery{{}}
		}), spec.ErrTooLarge, "spans"},
	}
	for _, c := range cases {
		_, err := ref.LayoutHostOffsets(spec.DefaultLimits(), c.in)
		ie, ok := spec.AsInputError(err)
		if !ok || !errors.Is(err, c.want) || ie.Field != c.field || ie.Bound == "" {
			t.Errorf("%+v: got %v, want %s on field %s with a bound", c.in, err, c.want.Code(), c.field)
		}
	}
}
