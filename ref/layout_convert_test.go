package ref_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/ref"
)

// seq returns the arena [0, 1, …, n-1], so every byte names its own offset.
func seq(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

func convert(t *testing.T, in ref.LayoutConvertInput) ref.LayoutConvertOutput {
	t.Helper()
	out, err := ref.LayoutConvert(ref.DefaultLimits(), in)
	if err != nil {
		t.Fatalf("%s %s: %v", in.Mode, in.Layout, err)
	}
	return out
}

// TestRelayoutOfTheWorkedTableMovesEachByteToItsNewOffset pins §7.2's full
// relayout on §7.1's worked geometry: an LF arena whose bytes are their LF
// offsets, rewritten into each layout, holds at each offset the LF offset
// of the same (l, t); the descriptor count is the number of maximal runs.
func TestRelayoutOfTheWorkedTableMovesEachByteToItsNewOffset(t *testing.T) {
	cases := []struct {
		to          ref.HostLayout
		want        []byte
		descriptors int64
	}{
		{ref.LayerPageFirst, []byte{0, 1, 2, 3, 4, 5, 6, 7}, 1},
		{ref.LayerFirst, []byte{0, 1, 2, 3, 4, 5, 6, 7}, 1},
		{ref.PageFirst, []byte{0, 4, 1, 5, 2, 6, 3, 7}, 8},
		{ref.PageFirstDirect, []byte{0, 1, 4, 5, 2, 3, 6, 7}, 4},
	}
	for _, c := range cases {
		in := ref.LayoutConvertInput{Mode: ref.ConvertRelayout, Layout: ref.LayerFirst, To: c.to, Pool: ref.HostPoolMLA,
			Layers: 2, Pages: 2, PageSize: 2, TokenBytes: 1, Host: seq(8)}
		got := convert(t, in)
		if d := cmp.Diff(ref.LayoutConvertOutput{Arena: c.want, Descriptors: c.descriptors}, got); d != "" {
			t.Errorf("LF→%s (-want +got):\n%s", c.to, d)
		}
	}
}

// TestLPFLoadOfARunIsOneCopy pins §7.2's example: LPF layer 1, hp=[0,1],
// dp=[5,6] is one copy of 2×pb bytes from host offset (1×NP+0)×pb to
// device offset 5×pb; under PFD the same run takes Count=2 copies.
func TestLPFLoadOfARunIsOneCopy(t *testing.T) {
	const L, NP, P, tb, devPages = 2, 2, 2, 3, 8
	pb := P * tb
	layer := int64(1)
	for _, c := range []struct {
		layout      ref.HostLayout
		hostOff     []int // host offsets of layer 1's pages 0 and 1
		descriptors int64
	}{
		{ref.LayerPageFirst, []int{(1*NP + 0) * pb, (1*NP + 1) * pb}, 1},
		{ref.PageFirstDirect, []int{(0*L + 1) * pb, (1*L + 1) * pb}, 2},
	} {
		in := ref.LayoutConvertInput{Mode: ref.ConvertLoad, Layout: c.layout, Pool: ref.HostPoolMLA,
			Layers: L, Pages: NP, PageSize: P, TokenBytes: tb, Layer: &layer, DevicePages: devPages,
			HostIndices: []int64{0, 1, 2, 3}, DeviceIndices: []int64{10, 11, 12, 13},
			Host: seq(L * NP * pb), Device: make([]byte, L*devPages*pb)}
		got := convert(t, in)
		want := make([]byte, L*devPages*pb)
		devOff := (1*devPages + 5) * pb // layer 1, device page 5
		copy(want[devOff:], in.Host[c.hostOff[0]:c.hostOff[0]+pb])
		copy(want[devOff+pb:], in.Host[c.hostOff[1]:c.hostOff[1]+pb])
		if d := cmp.Diff(ref.LayoutConvertOutput{Arena: want, Descriptors: c.descriptors}, got); d != "" {
			t.Errorf("%s load (-want +got):\n%s", c.layout, d)
		}
	}
}

// TestLayerFirstSortsHostPagesOnlyOnTheDirectPath pins §7.2's index order:
// LF on the direct backend sorts hp=[1,0], dp=[6,5] into the single run
// hp=[0,1], dp=[5,6]; PFD and LF on the kernel backend keep caller order
// (two runs). The bytes are the same either way.
func TestLayerFirstSortsHostPagesOnlyOnTheDirectPath(t *testing.T) {
	base := ref.LayoutConvertInput{Mode: ref.ConvertBackup, Pool: ref.HostPoolMLA,
		Layers: 1, Pages: 2, PageSize: 1, TokenBytes: 2, DevicePages: 7,
		HostIndices: []int64{1, 0}, DeviceIndices: []int64{6, 5}, Host: make([]byte, 4), Device: seq(14)}
	var arenas [][]byte
	for _, c := range []struct {
		layout      ref.HostLayout
		io          ref.IOBackend
		descriptors int64
	}{
		{ref.LayerFirst, "", 1},
		{ref.LayerFirst, ref.IOBackendKernel, 2},
		{ref.PageFirstDirect, ref.IOBackendDirect, 2},
	} {
		in := base
		in.Layout, in.IOBackend = c.layout, c.io
		got := convert(t, in)
		if got.Descriptors != c.descriptors {
			t.Errorf("%s/%q: %d descriptors, want %d", c.layout, c.io, got.Descriptors, c.descriptors)
		}
		arenas = append(arenas, got.Arena)
	}
	want := []byte{10, 11, 12, 13} // host page 0 ← device page 5, host page 1 ← device page 6
	for i, a := range arenas {
		if d := cmp.Diff(want, a); d != "" {
			t.Errorf("case %d host arena (-want +got):\n%s", i, d)
		}
	}
}

// TestLPFFlatPageReadIsRefusedAndLFReadGathersLayers pins §7.3's storage
// example (L=2, NP=2, P=1, tb=1, bytes [l0p0, l0p1, l1p0, l1p1]): a flat page
// read on LPF is refused, where the PF-style span would have returned
// [l0p0, l0p1]; on the same bytes as LF the read gathers [l0p0, l1p0] in two
// descriptors, and on PFD's order it is one pointer.
func TestLPFFlatPageReadIsRefusedAndLFReadGathersLayers(t *testing.T) {
	const l0p0, l0p1, l1p0, l1p1 = 0xA0, 0xA1, 0xB0, 0xB1
	in := ref.LayoutConvertInput{Mode: ref.ConvertPageGet, Layout: ref.LayerPageFirst, Pool: ref.HostPoolMLA,
		Layers: 2, Pages: 2, PageSize: 1, TokenBytes: 1, HostIndices: []int64{0}, Host: []byte{l0p0, l0p1, l1p0, l1p1}}
	_, err := ref.LayoutConvert(ref.DefaultLimits(), in)
	if ie, ok := ref.AsInputError(err); !ok || !errors.Is(err, ref.ErrLPFStorageUnsupported) || ie.Field != "mode" {
		t.Fatalf("page_get on LPF: got %v, want lpf_storage_unsupported on mode", err)
	}
	in.Layout = ref.LayerFirst
	if d := cmp.Diff(ref.LayoutConvertOutput{Arena: []byte{l0p0, l1p0}, Descriptors: 2}, convert(t, in)); d != "" {
		t.Errorf("LF page 0 (-want +got):\n%s", d)
	}
	in.Layout, in.Host = ref.PageFirstDirect, []byte{l0p0, l1p0, l0p1, l1p1}
	if d := cmp.Diff(ref.LayoutConvertOutput{Arena: []byte{l0p0, l1p0}, Descriptors: 1}, convert(t, in)); d != "" {
		t.Errorf("PFD page 0 (-want +got):\n%s", d)
	}
}

// TestAllLayerBackupIsALoopOfLayerBackups pins §7.2: backing up every layer
// gives the bytes of backing up each layer in turn, and L times the
// descriptors of one layer, K and V planes counted apart.
func TestAllLayerBackupIsALoopOfLayerBackups(t *testing.T) {
	in := ref.LayoutConvertInput{Mode: ref.ConvertBackup, Layout: ref.PageFirstDirect, Pool: ref.HostPoolMHA,
		Layers: 3, Pages: 4, PageSize: 2, TokenBytes: 2, DevicePages: 3,
		HostIndices: []int64{4, 5, 6, 7, 0, 1}, DeviceIndices: []int64{0, 1, 2, 3, 4, 5},
		Host: make([]byte, 2*3*4*2*2), Device: seq(2 * 3 * 3 * 2 * 2)}
	all := convert(t, in)
	step := in
	var perLayer int64
	for l := range in.Layers {
		step.Layer = &l
		out := convert(t, step)
		step.Host, perLayer = out.Arena, out.Descriptors
	}
	if d := cmp.Diff(step.Host, all.Arena); d != "" {
		t.Errorf("all-layer backup differs from the loop (-loop +all):\n%s", d)
	}
	// Pairs (2,0),(3,1),(0,2): runs [2,3]→[0,1] and [0]→[2]: 3 PFD copies per layer and plane.
	if perLayer != 3*2 || all.Descriptors != 3*perLayer {
		t.Errorf("descriptors: per layer %d (want 6), all %d (want 18)", perLayer, all.Descriptors)
	}
}

// TestLayoutConvertRejectsBadInputNamingFieldAndBound pins the fail-fast
// table of §7.3 and the bad-input rules of §7.2, each with its field.
func TestLayoutConvertRejectsBadInputNamingFieldAndBound(t *testing.T) {
	one := int64(1)
	load := func() ref.LayoutConvertInput {
		return ref.LayoutConvertInput{Mode: ref.ConvertLoad, Layout: ref.LayerPageFirst, Pool: ref.HostPoolMLA,
			Layers: 2, Pages: 2, PageSize: 2, TokenBytes: 1, DevicePages: 3,
			HostIndices: []int64{0, 1}, DeviceIndices: []int64{4, 5}, Host: make([]byte, 8), Device: make([]byte, 12)}
	}
	with := func(f func(*ref.LayoutConvertInput)) ref.LayoutConvertInput { in := load(); f(&in); return in }
	cases := []struct {
		in    ref.LayoutConvertInput
		want  *ref.Sentinel
		field string
	}{
		{with(func(in *ref.LayoutConvertInput) { in.Mode = "copy" }), ref.ErrBadEnum, "mode"},
		{with(func(in *ref.LayoutConvertInput) { in.Layout = "layer_major" }), ref.ErrUnsupportedLayout, "layout"},
		{with(func(in *ref.LayoutConvertInput) { in.Mode, in.To = ref.ConvertRelayout, "" }), ref.ErrUnsupportedLayout, "to"},
		{with(func(in *ref.LayoutConvertInput) { in.Pool = ref.HostPoolMHA }), ref.ErrLPFUnsupportedPool, "layout"},
		{with(func(in *ref.LayoutConvertInput) { in.IOBackend = "dma" }), ref.ErrBadEnum, "io_backend"},
		{with(func(in *ref.LayoutConvertInput) { in.IOBackend = ref.IOBackendKernel }), ref.ErrLPFRequiresDirect, "io_backend"},
		{with(func(in *ref.LayoutConvertInput) { in.StorageBackend = "mooncake" }), ref.ErrLPFStorageUnsupported, "storage_backend"},
		{with(func(in *ref.LayoutConvertInput) { in.LPFKernelUnavailable = true }), ref.ErrLPFKernelUnavailable, "lpf_kernel_unavailable"},
		{with(func(in *ref.LayoutConvertInput) { in.IndexDevice = ref.IndexOnCUDA }), ref.ErrDeviceIndices, "index_device"},
		{with(func(in *ref.LayoutConvertInput) { in.IndexDType = ref.IndexInt32 }), ref.ErrIndexDType, "index_dtype"},
		{with(func(in *ref.LayoutConvertInput) { in.To = ref.LayerFirst }), ref.ErrFieldNotInMode, "to"},
		{with(func(in *ref.LayoutConvertInput) { in.Mode = ref.ConvertPageGet; in.Layout = ref.LayerFirst }), ref.ErrFieldNotInMode, "device_pages"},
		{with(func(in *ref.LayoutConvertInput) { in.PageSize = 0 }), ref.ErrZeroSize, "page_size"},
		{with(func(in *ref.LayoutConvertInput) { in.Host = in.Host[:7] }), ref.ErrArenaSize, "host"},
		{with(func(in *ref.LayoutConvertInput) { in.DevicePages = 1 << 62 }), ref.ErrOverflow, "device_pages"},
		{with(func(in *ref.LayoutConvertInput) { in.Device = nil }), ref.ErrArenaSize, "device"},
		{with(func(in *ref.LayoutConvertInput) { l := int64(2); in.Layer = &l }), ref.ErrIndexOutOfRange, "layer"},
		{with(func(in *ref.LayoutConvertInput) { in.DeviceIndices = []int64{4} }), ref.ErrLengthMismatch, "device_indices"},
		{with(func(in *ref.LayoutConvertInput) { in.HostIndices, in.DeviceIndices = []int64{0}, []int64{4} }), ref.ErrIncompletePageSpan, "host_indices"},
		{with(func(in *ref.LayoutConvertInput) { in.HostIndices = []int64{1, 2} }), ref.ErrIncompletePageSpan, "host_indices[0]"},
		{with(func(in *ref.LayoutConvertInput) { in.DeviceIndices = []int64{4, 6} }), ref.ErrIncompletePageSpan, "device_indices[1]"},
		{with(func(in *ref.LayoutConvertInput) { in.HostIndices = []int64{-2, -1} }), ref.ErrNegative, "host_indices[0]"},
		{with(func(in *ref.LayoutConvertInput) { in.DeviceIndices = []int64{6, 7} }), ref.ErrPageOutOfRange, "device_indices[0]"},
		{with(func(in *ref.LayoutConvertInput) {
			in.HostIndices, in.DeviceIndices = []int64{0, 1, 2, 3}, []int64{4, 5, 4, 5}
		}), ref.ErrDuplicateDevicePage, "device_indices[2]"},
		{with(func(in *ref.LayoutConvertInput) {
			in.Mode, in.Layer = ref.ConvertBackup, &one
			in.HostIndices, in.DeviceIndices = []int64{2, 3, 2, 3}, []int64{0, 1, 2, 3}
		}), ref.ErrDuplicateHostPage, "host_indices[2]"},
	}
	for _, c := range cases {
		_, err := ref.LayoutConvert(ref.DefaultLimits(), c.in)
		ie, ok := ref.AsInputError(err)
		if !ok || !errors.Is(err, c.want) || ie.Field != c.field || ie.Bound == "" {
			t.Errorf("%s/%s: got %v, want %s on field %s with a bound", c.in.Mode, c.in.Layout, err, c.want.Code(), c.field)
		}
	}
}

// TestLayoutConvertChecksTheOutputAgainstTheLimits: the destination arena
// is only allocated after lim.CheckOutput accepts its size.
func TestLayoutConvertChecksTheOutputAgainstTheLimits(t *testing.T) {
	in := ref.LayoutConvertInput{Mode: ref.ConvertRelayout, Layout: ref.LayerFirst, To: ref.PageFirst, Pool: ref.HostPoolMLA,
		Layers: 2, Pages: 2, PageSize: 2, TokenBytes: 1, Host: seq(8)}
	_, err := ref.LayoutConvert(ref.Limits{MaxOutputBytes: 7}, in)
	if ie, ok := ref.AsInputError(err); !ok || !errors.Is(err, ref.ErrTooLarge) || ie.Field != "host" {
		t.Errorf("got %v, want too_large on host", err)
	}
}
