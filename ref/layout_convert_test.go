package ref_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// seq returns the arena [0, 1, …, n-1], so every byte names its own offset.
func seq(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

func convert(t *testing.T, in spec.LayoutConvertInput) spec.LayoutConvertOutput {
	t.Helper()
	out, err := ref.LayoutConvert(spec.DefaultLimits(), in)
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
		to          spec.HostLayout
		want        []byte
		descriptors int64
	}{
		{spec.LayerPageFirst, []byte{0, 1, 2, 3, 4, 5, 6, 7}, 1},
		{spec.LayerFirst, []byte{0, 1, 2, 3, 4, 5, 6, 7}, 1},
		{spec.PageFirst, []byte{0, 4, 1, 5, 2, 6, 3, 7}, 8},
		{spec.PageFirstDirect, []byte{0, 1, 4, 5, 2, 3, 6, 7}, 4},
	}
	for _, c := range cases {
		in := spec.LayoutConvertInput{Mode: spec.ConvertRelayout, Layout: spec.LayerFirst, To: c.to, Pool: spec.HostPoolMLA,
			Layers: 2, Pages: 2, PageSize: 2, TokenBytes: 1, Host: seq(8)}
		got := convert(t, in)
		if d := cmp.Diff(spec.LayoutConvertOutput{Arena: c.want, Descriptors: c.descriptors}, got); d != "" {
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
		layout      spec.HostLayout
		hostOff     []int // host offsets of layer 1's pages 0 and 1
		descriptors int64
	}{
		{spec.LayerPageFirst, []int{(1*NP + 0) * pb, (1*NP + 1) * pb}, 1},
		{spec.PageFirstDirect, []int{(0*L + 1) * pb, (1*L + 1) * pb}, 2},
	} {
		in := spec.LayoutConvertInput{Mode: spec.ConvertLoad, Layout: c.layout, Pool: spec.HostPoolMLA,
			Layers: L, Pages: NP, PageSize: P, TokenBytes: tb, Layer: &layer, DevicePages: devPages,
			HostIndices: []int64{0, 1, 2, 3}, DeviceIndices: []int64{10, 11, 12, 13},
			Host: seq(L * NP * pb), Device: make([]byte, L*devPages*pb)}
		got := convert(t, in)
		want := make([]byte, L*devPages*pb)
		devOff := (1*devPages + 5) * pb // layer 1, device page 5
		copy(want[devOff:], in.Host[c.hostOff[0]:c.hostOff[0]+pb])
		copy(want[devOff+pb:], in.Host[c.hostOff[1]:c.hostOff[1]+pb])
		if d := cmp.Diff(spec.LayoutConvertOutput{Arena: want, Descriptors: c.descriptors}, got); d != "" {
			t.Errorf("%s load (-want +got):\n%s", c.layout, d)
		}
	}
}

// TestLayerFirstSortsHostPagesOnlyOnTheDirectPath pins §7.2's index order:
// LF on the direct backend sorts hp=[1,0], dp=[6,5] into the single run
// hp=[0,1], dp=[5,6]; PFD and LF on the kernel backend keep caller order
// (two runs). The bytes are the same either way.
func TestLayerFirstSortsHostPagesOnlyOnTheDirectPath(t *testing.T) {
	base := spec.LayoutConvertInput{Mode: spec.ConvertBackup, Pool: spec.HostPoolMLA,
		Layers: 1, Pages: 2, PageSize: 1, TokenBytes: 2, DevicePages: 7,
		HostIndices: []int64{1, 0}, DeviceIndices: []int64{6, 5}, Host: make([]byte, 4), Device: seq(14)}
	var arenas [][]byte
	for _, c := range []struct {
		layout      spec.HostLayout
		io          spec.IOBackend
		descriptors int64
	}{
		{spec.LayerFirst, "", 1},
		{spec.LayerFirst, spec.IOBackendKernel, 2},
		{spec.PageFirstDirect, spec.IOBackendDirect, 2},
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
	in := spec.LayoutConvertInput{Mode: spec.ConvertPageGet, Layout: spec.LayerPageFirst, Pool: spec.HostPoolMLA,
		Layers: 2, Pages: 2, PageSize: 1, TokenBytes: 1, HostIndices: []int64{0}, Host: []byte{l0p0, l0p1, l1p0, l1p1}}
	_, err := ref.LayoutConvert(spec.DefaultLimits(), in)
	if ie, ok := spec.AsInputError(err); !ok || !errors.Is(err, spec.ErrLPFStorageUnsupported) || ie.Field != "mode" {
		t.Fatalf("page_get on LPF: got %v, want lpf_storage_unsupported on mode", err)
	}
	in.Layout = spec.LayerFirst
	if d := cmp.Diff(spec.LayoutConvertOutput{Arena: []byte{l0p0, l1p0}, Descriptors: 2}, convert(t, in)); d != "" {
		t.Errorf("LF page 0 (-want +got):\n%s", d)
	}
	in.Layout, in.Host = spec.PageFirstDirect, []byte{l0p0, l1p0, l0p1, l1p1}
	if d := cmp.Diff(spec.LayoutConvertOutput{Arena: []byte{l0p0, l1p0}, Descriptors: 1}, convert(t, in)); d != "" {
		t.Errorf("PFD page 0 (-want +got):\n%s", d)
	}
}

// TestAllLayerBackupIsALoopOfLayerBackups pins §7.2: backing up every layer
// gives the bytes of backing up each layer in turn, and L times the
// descriptors of one layer, K and V planes counted apart.
func TestAllLayerBackupIsALoopOfLayerBackups(t *testing.T) {
	in := spec.LayoutConvertInput{Mode: spec.ConvertBackup, Layout: spec.PageFirstDirect, Pool: spec.HostPoolMHA,
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
	load := func() spec.LayoutConvertInput {
		return spec.LayoutConvertInput{Mode: spec.ConvertLoad, Layout: spec.LayerPageFirst, Pool: spec.HostPoolMLA,
			Layers: 2, Pages: 2, PageSize: 2, TokenBytes: 1, DevicePages: 3,
			HostIndices: []int64{0, 1}, DeviceIndices: []int64{4, 5}, Host: make([]byte, 8), Device: make([]byte, 12)}
	}
	with := func(f func(*spec.LayoutConvertInput)) spec.LayoutConvertInput { in := load(); f(&in); return in }
	cases := []struct {
		in    spec.LayoutConvertInput
		want  *spec.Sentinel
		field string
	}{
		{with(func(in *spec.LayoutConvertInput) { in.Mode = "copy" }), spec.ErrBadEnum, "mode"},
		{with(func(in *spec.LayoutConvertInput) { in.Layout = "layer_major" }), spec.ErrUnsupportedLayout, "layout"},
		{with(func(in *spec.LayoutConvertInput) { in.Mode, in.To = spec.ConvertRelayout, "" }), spec.ErrUnsupportedLayout, "to"},
		{with(func(in *spec.LayoutConvertInput) { in.Pool = spec.HostPoolMHA }), spec.ErrLPFUnsupportedPool, "layout"},
		{with(func(in *spec.LayoutConvertInput) { in.IOBackend = "dma" }), spec.ErrBadEnum, "io_backend"},
		{with(func(in *spec.LayoutConvertInput) { in.IOBackend = spec.IOBackendKernel }), spec.ErrLPFRequiresDirect, "io_backend"},
		{with(func(in *spec.LayoutConvertInput) { in.StorageBackend = "mooncake" }), spec.ErrLPFStorageUnsupported, "storage_backend"},
		{with(func(in *spec.LayoutConvertInput) { in.LPFKernelUnavailable = true }), spec.ErrLPFKernelUnavailable, "lpf_kernel_unavailable"},
		{with(func(in *spec.LayoutConvertInput) { in.IndexDevice = spec.IndexOnCUDA }), spec.ErrDeviceIndices, "index_device"},
		{with(func(in *spec.LayoutConvertInput) { in.IndexDType = spec.IndexInt32 }), spec.ErrIndexDType, "index_dtype"},
		{with(func(in *spec.LayoutConvertInput) { in.To = spec.LayerFirst }), spec.ErrFieldNotInMode, "to"},
		{with(func(in *spec.LayoutConvertInput) { in.Mode = spec.ConvertPageGet; in.Layout = spec.LayerFirst }), spec.ErrFieldNotInMode, "device_pages"},
		{with(func(in *spec.LayoutConvertInput) { in.PageSize = 0 }), spec.ErrZeroSize, "page_size"},
		{with(func(in *spec.LayoutConvertInput) { in.Host = in.Host[:7] }), spec.ErrArenaSize, "host"},
		{with(func(in *spec.LayoutConvertInput) { in.DevicePages = 1 << 62 }), spec.ErrOverflow, "device_pages"},
		{with(func(in *spec.LayoutConvertInput) { in.Device = nil }), spec.ErrArenaSize, "device"},
		{with(func(in *spec.LayoutConvertInput) { l := int64(2); in.Layer = &l }), spec.ErrIndexOutOfRange, "layer"},
		{with(func(in *spec.LayoutConvertInput) { in.DeviceIndices = []int64{4} }), spec.ErrLengthMismatch, "device_indices"},
		{with(func(in *spec.LayoutConvertInput) { in.HostIndices, in.DeviceIndices = []int64{0}, []int64{4} }), spec.ErrIncompletePageSpan, "host_indices"},
		{with(func(in *spec.LayoutConvertInput) { in.HostIndices = []int64{1, 2} }), spec.ErrIncompletePageSpan, "host_indices[0]"},
		{with(func(in *spec.LayoutConvertInput) { in.DeviceIndices = []int64{4, 6} }), spec.ErrIncompletePageSpan, "device_indices[1]"},
		{with(func(in *spec.LayoutConvertInput) { in.HostIndices = []int64{-2, -1} }), spec.ErrNegative, "host_indices[0]"},
		{with(func(in *spec.LayoutConvertInput) { in.DeviceIndices = []int64{6, 7} }), spec.ErrPageOutOfRange, "device_indices[0]"},
		{with(func(in *spec.LayoutConvertInput) {
			in.HostIndices, in.DeviceIndices = []int64{0, 1, 2, 3}, []int64{4, 5, 4, 5}
		}), spec.ErrDuplicateDevicePage, "device_indices[2]"},
		{with(func(in *spec.LayoutConvertInput) {
			in.Mode, in.Layer = spec.ConvertBackup, &one
			in.HostIndices, in.DeviceIndices = []int64{2, 3, 2, 3}, []int64{0, 1, 2, 3}
		}), spec.ErrDuplicateHostPage, "host_indices[2]"},
	}
	for _, c := range cases {
		_, err := ref.LayoutConvert(spec.DefaultLimits(), c.in)
		ie, ok := spec.AsInputError(err)
		if !ok || !errors.Is(err, c.want) || ie.Field != c.field || ie.Bound == "" {
			t.Errorf("%s/%s: got %v, want %s on field %s with a bound", c.in.Mode, c.in.Layout, err, c.want.Code(), c.field)
		}
	}
}

// TestLayoutConvertChecksTheOutputAgainstTheLimits: the destination arena
// is only allocated after lim.CheckOutput accepts its size.
func TestLayoutConvertChecksTheOutputAgainstTheLimits(t *testing.T) {
	in := spec.LayoutConvertInput{Mode: spec.ConvertRelayout, Layout: spec.LayerFirst, To: spec.PageFirst, Pool: spec.HostPoolMLA,
		Layers: 2, Pages: 2, PageSize: 2, TokenBytes: 1, Host: seq(8)}
	_, err := ref.LayoutConvert(spec.Limits{MaxOutputBytes: 7}, in)
	if ie, ok := spec.AsInputError(err); !ok || !errors.Is(err, spec.ErrTooLarge) || ie.Field != "host" {
		t.Errorf("got %v, want too_large on host", err)
	}
}
