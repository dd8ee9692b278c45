package ref_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/ref"
)

// workedPoints are the eight (l, t) of docs/spec/transfer.md §7.1's worked table
// (L=2, NP=2, P=2, tb=1), in the table's column order.
func workedPoints() []ref.HostPoint {
	var pts []ref.HostPoint
	for l := range int64(2) {
		for t := range int64(4) {
			pts = append(pts, ref.HostPoint{Layer: l, Token: t})
		}
	}
	return pts
}

// TestLayoutHostOffsetsMatchTheWorkedTable pins every cell of §7.1's worked table.
func TestLayoutHostOffsetsMatchTheWorkedTable(t *testing.T) {
	want := map[ref.HostLayout][]int64{
		ref.LayerFirst:      {0, 1, 2, 3, 4, 5, 6, 7},
		ref.LayerPageFirst:  {0, 1, 2, 3, 4, 5, 6, 7},
		ref.PageFirst:       {0, 2, 4, 6, 1, 3, 5, 7},
		ref.PageFirstDirect: {0, 1, 4, 5, 2, 3, 6, 7},
	}
	for layout, offs := range want {
		in := ref.LayoutHostOffsetsInput{Layout: layout, Pool: ref.HostPoolMLA, Layers: 2, Pages: 2, PageSize: 2, TokenBytes: 1, Points: workedPoints()}
		got, err := ref.LayoutHostOffsets(ref.DefaultLimits(), in)
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
	q := []ref.HostPageQuery{{Layer: 1, Page: 1}, {Layer: 1, Page: 2}}
	cases := []struct {
		layout ref.HostLayout
		want   [][]ref.ByteRange
		onePtr bool
	}{
		{ref.LayerFirst, [][]ref.ByteRange{{{Offset: 24, Len: 6}}, {{Offset: 30, Len: 6}}}, false},
		{ref.LayerPageFirst, [][]ref.ByteRange{{{Offset: 24, Len: 6}}, {{Offset: 30, Len: 6}}}, false},
		{ref.PageFirstDirect, [][]ref.ByteRange{{{Offset: 18, Len: 6}}, {{Offset: 30, Len: 6}}}, true},
		{ref.PageFirst, [][]ref.ByteRange{
			{{Offset: 15, Len: 3}, {Offset: 21, Len: 3}},
			{{Offset: 27, Len: 3}, {Offset: 33, Len: 3}},
		}, true},
	}
	for _, c := range cases {
		in := ref.LayoutHostOffsetsInput{Layout: c.layout, Pool: ref.HostPoolMLA, Layers: 2, Pages: 3, PageSize: 2, TokenBytes: 3, Spans: q}
		got, err := ref.LayoutHostOffsets(ref.DefaultLimits(), in)
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
	for _, layout := range []ref.HostLayout{ref.LayerFirst, ref.PageFirst, ref.PageFirstDirect} {
		in := ref.LayoutHostOffsetsInput{Layout: layout, Pool: ref.HostPoolMHA, Layers: 2, Pages: 2, PageSize: 2, TokenBytes: 1,
			Points: []ref.HostPoint{{KV: 0, Layer: 1, Token: 2}, {KV: 1, Layer: 1, Token: 2}}}
		got, err := ref.LayoutHostOffsets(ref.DefaultLimits(), in)
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
	ok := func() ref.LayoutHostOffsetsInput {
		return ref.LayoutHostOffsetsInput{Layout: ref.LayerFirst, Pool: ref.HostPoolMLA, Layers: 2, Pages: 2, PageSize: 2, TokenBytes: 1}
	}
	with := func(f func(*ref.LayoutHostOffsetsInput)) ref.LayoutHostOffsetsInput { in := ok(); f(&in); return in }
	cases := []struct {
		in    ref.LayoutHostOffsetsInput
		want  *ref.Sentinel
		field string
	}{
		{with(func(in *ref.LayoutHostOffsetsInput) { in.Layout = "page_major" }), ref.ErrUnsupportedLayout, "layout"},
		{with(func(in *ref.LayoutHostOffsetsInput) { in.Pool = "gqa" }), ref.ErrBadEnum, "pool"},
		{with(func(in *ref.LayoutHostOffsetsInput) { in.Layout, in.Pool = ref.LayerPageFirst, ref.HostPoolMHA }), ref.ErrLPFUnsupportedPool, "layout"},
		{with(func(in *ref.LayoutHostOffsetsInput) { in.Layers = 0 }), ref.ErrZeroSize, "layers"},
		{with(func(in *ref.LayoutHostOffsetsInput) { in.Pages = -1 }), ref.ErrNegative, "pages"},
		{with(func(in *ref.LayoutHostOffsetsInput) { in.TokenBytes = 0 }), ref.ErrZeroSize, "token_bytes"},
		{with(func(in *ref.LayoutHostOffsetsInput) { in.Pages, in.PageSize = 1<<32, 1<<31 }), ref.ErrOverflow, "page_size"},
		{with(func(in *ref.LayoutHostOffsetsInput) { in.Layers, in.Pages = 1<<40, 1<<30 }), ref.ErrOverflow, "layers"},
		{with(func(in *ref.LayoutHostOffsetsInput) { in.TokenBytes = 1 << 61 }), ref.ErrOverflow, "token_bytes"},
		{with(func(in *ref.LayoutHostOffsetsInput) { in.Pool, in.TokenBytes = ref.HostPoolMHA, 1<<59 }), ref.ErrOverflow, "pool"},
		{with(func(in *ref.LayoutHostOffsetsInput) { in.Points = []ref.HostPoint{{}, {KV: 1}} }), ref.ErrIndexOutOfRange, "points[1].kv"},
		{with(func(in *ref.LayoutHostOffsetsInput) { in.Points = []ref.HostPoint{{Layer: -1}} }), ref.ErrNegative, "points[0].layer"},
		{with(func(in *ref.LayoutHostOffsetsInput) { in.Points = []ref.HostPoint{{Token: 4}} }), ref.ErrIndexOutOfRange, "points[0].token"},
		{with(func(in *ref.LayoutHostOffsetsInput) { in.Points = []ref.HostPoint{{Byte: 1}} }), ref.ErrIndexOutOfRange, "points[0].byte"},
		{with(func(in *ref.LayoutHostOffsetsInput) { in.Spans = []ref.HostPageQuery{{Page: 2}} }), ref.ErrPageOutOfRange, "spans[0].page"},
		{with(func(in *ref.LayoutHostOffsetsInput) { in.Spans = []ref.HostPageQuery{{Layer: 2}} }), ref.ErrIndexOutOfRange, "spans[0].layer"},
		{with(func(in *ref.LayoutHostOffsetsInput) {
			in.Layout, in.Pages, in.PageSize = ref.PageFirst, 1, 1<<40
			in.Spans = []ref.HostPageQuery{{}}
		}), ref.ErrTooLarge, "spans"},
	}
	for _, c := range cases {
		_, err := ref.LayoutHostOffsets(ref.DefaultLimits(), c.in)
		ie, ok := ref.AsInputError(err)
		if !ok || !errors.Is(err, c.want) || ie.Field != c.field || ie.Bound == "" {
			t.Errorf("%+v: got %v, want %s on field %s with a bound", c.in, err, c.want.Code(), c.field)
		}
	}
}
