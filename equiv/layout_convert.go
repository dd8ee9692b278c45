package equiv

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// LayoutConvert is the differential spec of layout.convert (docs/spec/transfer.md §7.2, §7.3).
func LayoutConvert() *Spec[spec.LayoutConvertInput, spec.LayoutConvertOutput] {
	return &Spec[spec.LayoutConvertInput, spec.LayoutConvertOutput]{
		Op:       catalog.LayoutConvert(),
		Valid:    rapid.Custom(convertValid),
		Invalid:  rapid.Custom(convertInvalid),
		Boundary: convertBoundary(),
		Regressions: []Case[spec.LayoutConvertInput]{
			{Name: "lpf-storage-accepted", In: lpfStorageExample(spec.LayerPageFirst)},
		},
		Rejects: convertRejects(),
		Props: []Prop[spec.LayoutConvertInput, spec.LayoutConvertOutput]{
			{"relayout-follows-the-offsets", convertFollowsOffsets},
			{"relayout-round-trip", convertRoundTrip},
			{"relayout-permutes-bytes", convertPermutes},
			{"coinciding-layouts-copy-once", convertCoinciding},
			{"relayout-descriptors-symmetric", convertDescriptorsSymmetric},
			{"transfer-moves-exactly-the-listed-pages", convertMovesListedPages},
			{"transfer-order-independent", convertOrderIndependent},
			{"backup-load-round-trip", convertBackupLoadRoundTrip},
			{"transfer-descriptors-follow-the-rule", convertDescriptorRule},
			{"page-get-reads-every-layer-of-the-page", convertPageGetReadsThePage},
			{"page-get-one-pointer-per-page", convertOnePointerPerPage},
		},
	}
}

var convertModes = []spec.ConvertMode{spec.ConvertRelayout, spec.ConvertLoad, spec.ConvertBackup, spec.ConvertPageGet}

// lpfStorageExample is §7.3's storage example: L=2, NP=2, P=1, tb=1, the
// LPF bytes [l0p0, l0p1, l1p0, l1p1], and a flat read of page 0. As LPF it
// must be refused (the bug returned [l0p0, l0p1]); the same bytes as LF
// are the valid read [l0p0, l1p0].
func lpfStorageExample(layout spec.HostLayout) spec.LayoutConvertInput {
	return spec.LayoutConvertInput{Mode: spec.ConvertPageGet, Layout: layout, Pool: spec.HostPoolMLA,
		Layers: 2, Pages: 2, PageSize: 1, TokenBytes: 1, HostIndices: []int64{0}, Host: []byte{0xA0, 0xA1, 0xB0, 0xB1}}
}

func convertValid(t *rapid.T) spec.LayoutConvertInput {
	return convertOf(t, rapid.SampledFrom(convertModes).Draw(t, "mode"), "")
}

// layoutsFor lists the layouts pool supports (LPF is MLA-only).
func layoutsFor(pool spec.HostPool) []spec.HostLayout {
	if pool == spec.HostPoolMHA {
		return allLayouts[:3]
	}
	return allLayouts
}

// convertOf draws a valid input of mode; pool "" draws the pool too.
func convertOf(t *rapid.T, mode spec.ConvertMode, pool spec.HostPool) spec.LayoutConvertInput {
	if pool == "" {
		pool = rapid.SampledFrom([]spec.HostPool{spec.HostPoolMLA, spec.HostPoolMHA}).Draw(t, "pool")
	}
	in := spec.LayoutConvertInput{Mode: mode, Pool: pool}
	layouts := layoutsFor(pool)
	if mode == spec.ConvertPageGet {
		layouts = layouts[:3]
	}
	in.Layout = rapid.SampledFrom(layouts).Draw(t, "layout")
	if mode == spec.ConvertRelayout {
		in.To = rapid.SampledFrom(layoutsFor(pool)).Draw(t, "to")
	}
	in.Layers = rapid.Int64Range(1, 4).Draw(t, "layers")
	in.Pages = rapid.Int64Range(1, 5).Draw(t, "pages")
	in.PageSize = rapid.Int64Range(1, 4).Draw(t, "page_size")
	in.TokenBytes = rapid.Int64Range(1, 4).Draw(t, "token_bytes")
	drawConfig(t, &in)
	g := hostGeometry(in)
	in.Host = drawArena(t, "host", g.TotalBytes())
	switch mode {
	case spec.ConvertLoad, spec.ConvertBackup:
		drawTransfer(t, &in, g)
	case spec.ConvertPageGet:
		pages := make([]int64, rapid.IntRange(0, int(g.NP)+1).Draw(t, "n_pages"))
		for i := range pages {
			pages[i] = rapid.Int64Range(0, g.NP-1).Draw(t, "page")
		}
		in.HostIndices = tokensOf(pages, g.P)
	}
	return in
}

// drawConfig draws a §7.3 configuration the call's layouts accept.
func drawConfig(t *rapid.T, in *spec.LayoutConvertInput) {
	if ref.UsesLPF(*in) {
		in.IOBackend = rapid.SampledFrom([]spec.IOBackend{"", spec.IOBackendDirect}).Draw(t, "io_backend")
	} else {
		in.IOBackend = rapid.SampledFrom([]spec.IOBackend{"", spec.IOBackendDirect, spec.IOBackendKernel}).Draw(t, "io_backend")
		in.StorageBackend = rapid.SampledFrom([]string{"", "", "mooncake", "file"}).Draw(t, "storage_backend")
		in.LPFKernelUnavailable = rapid.IntRange(0, 3).Draw(t, "kernel_missing") == 0
	}
	devices, dtypes := []spec.IndexDevice{"", spec.IndexOnCPU, spec.IndexOnCUDA}, []spec.IndexDType{"", spec.IndexInt64, spec.IndexInt32}
	if (in.Mode == spec.ConvertLoad || in.Mode == spec.ConvertBackup) && ref.EffectiveIOBackend(*in) == spec.IOBackendDirect {
		devices, dtypes = devices[:2], dtypes[:2]
	}
	in.IndexDevice = rapid.SampledFrom(devices).Draw(t, "index_device")
	in.IndexDType = rapid.SampledFrom(dtypes).Draw(t, "index_dtype")
}

// drawTransfer draws a load or backup: a layer (or all), a device pool and
// n page pairs whose destination pages are distinct. Each side is a run
// from a start page, a shuffled set, or (source side only) pages drawn
// with repeats, so runs form and break on either side.
func drawTransfer(t *rapid.T, in *spec.LayoutConvertInput, g spec.HostGeometry) {
	in.DevicePages = rapid.Int64Range(1, 6).Draw(t, "device_pages")
	if rapid.Bool().Draw(t, "one_layer") {
		l := rapid.Int64Range(0, g.L-1).Draw(t, "layer")
		in.Layer = &l
	}
	dstPages, srcPages := in.DevicePages, g.NP
	if in.Mode == spec.ConvertBackup {
		dstPages, srcPages = g.NP, in.DevicePages
	}
	n := rapid.Int64Range(0, dstPages).Draw(t, "n_pairs")
	dst, src := distinctPagesBelow(t, n, dstPages), anyPages(t, n, srcPages)
	hp, dp := src, dst
	if in.Mode == spec.ConvertBackup {
		hp, dp = dst, src
	}
	in.HostIndices, in.DeviceIndices = tokensOf(hp, g.P), tokensOf(dp, g.P)
	dev := spec.HostGeometry{Layout: spec.LayerFirst, Pool: g.Pool, L: g.L, NP: in.DevicePages, P: g.P, TB: g.TB}
	in.Device = drawArena(t, "device", dev.TotalBytes())
}

// distinctPagesBelow draws n distinct pages in [0, total): a run or a random pick.
func distinctPagesBelow(t *rapid.T, n, total int64) []int64 {
	if rapid.Bool().Draw(t, "dst_run") {
		return run(rapid.Int64Range(0, total-n).Draw(t, "dst_start"), int(n))
	}
	return rapid.Permutation(run(0, int(total))).Draw(t, "dst_perm")[:n]
}

func anyPages(t *rapid.T, n, total int64) []int64 {
	if rapid.Bool().Draw(t, "src_run") {
		start := rapid.Int64Range(0, total-1).Draw(t, "src_start")
		ps := run(start, int(n))
		for i := range ps {
			ps[i] %= total
		}
		return ps
	}
	ps := make([]int64, n)
	for i := range ps {
		ps[i] = rapid.Int64Range(0, total-1).Draw(t, "src_page")
	}
	return ps
}

// tokensOf expands pages into their token slots, page by page.
func tokensOf(pages []int64, p int64) []int64 {
	out := make([]int64, 0, int64(len(pages))*p)
	for _, pg := range pages {
		for o := range p {
			out = append(out, pg*p+o)
		}
	}
	return out
}

// pagesOf is the inverse of tokensOf on whole-page lists.
func pagesOf(idx []int64, p int64) []int64 {
	out := make([]int64, 0, int64(len(idx))/p)
	for i := int64(0); i < int64(len(idx)); i += p {
		out = append(out, idx[i]/p)
	}
	return out
}

// drawArena fills n bytes from a drawn seed; arenas of at most 256 bytes
// hold distinct bytes, so a misplaced byte always shows.
func drawArena(t *rapid.T, label string, n int64) []byte {
	rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, label+"_seed"), 1))
	b := make([]byte, n)
	if n <= 256 {
		for i, v := range rng.Perm(256)[:n] {
			b[i] = byte(v)
		}
		return b
	}
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func hostGeometry(in spec.LayoutConvertInput) spec.HostGeometry {
	return spec.HostGeometry{Layout: in.Layout, Pool: in.Pool, L: in.Layers, NP: in.Pages, P: in.PageSize, TB: in.TokenBytes}
}

func deviceGeometry(in spec.LayoutConvertInput) spec.HostGeometry {
	return spec.HostGeometry{Layout: spec.LayerFirst, Pool: in.Pool, L: in.Layers, NP: in.DevicePages, P: in.PageSize, TB: in.TokenBytes}
}

// makeLPF turns a valid MLA input into one whose host (or, for a relayout,
// either) arena is LPF with the normal LPF configuration.
func makeLPF(t *rapid.T, in *spec.LayoutConvertInput) {
	if in.Mode == spec.ConvertRelayout && rapid.Bool().Draw(t, "lpf_target") {
		in.To = spec.LayerPageFirst
	} else {
		in.Layout = spec.LayerPageFirst
	}
	in.IOBackend = rapid.SampledFrom([]spec.IOBackend{"", spec.IOBackendDirect}).Draw(t, "lpf_io")
	in.StorageBackend, in.LPFKernelUnavailable, in.IndexDevice, in.IndexDType = "", false, "", ""
}

// ensurePair gives a load or backup at least one (valid, unique) pair.
func ensurePair(in *spec.LayoutConvertInput) {
	if len(in.HostIndices) == 0 {
		in.HostIndices, in.DeviceIndices = tokensOf([]int64{0}, in.PageSize), tokensOf([]int64{0}, in.PageSize)
	}
}

func convertInvalid(t *rapid.T) Bad[spec.LayoutConvertInput] {
	transfers := []spec.ConvertMode{spec.ConvertLoad, spec.ConvertBackup}
	anyMode := func() spec.ConvertMode { return rapid.SampledFrom(convertModes).Draw(t, "base_mode") }
	bad := func(in spec.LayoutConvertInput, s *spec.Sentinel) Bad[spec.LayoutConvertInput] {
		return Bad[spec.LayoutConvertInput]{In: in, Want: s}
	}
	switch rapid.IntRange(0, 23).Draw(t, "violation") {
	case 0:
		in := convertOf(t, anyMode(), "")
		in.Mode = spec.ConvertMode(rapid.SampledFrom([]string{"", "copy", "RELAYOUT", "load_all"}).Draw(t, "bad_mode"))
		return bad(in, spec.ErrBadEnum)
	case 1:
		in := convertOf(t, anyMode(), "")
		in.Layout = spec.HostLayout(rapid.SampledFrom([]string{"", "layer_major", "LPF", "page-first"}).Draw(t, "bad_layout"))
		return bad(in, spec.ErrUnsupportedLayout)
	case 2:
		in := convertOf(t, spec.ConvertRelayout, "")
		in.To = spec.HostLayout(rapid.SampledFrom([]string{"", "layer_major", "LPF"}).Draw(t, "bad_to"))
		return bad(in, spec.ErrUnsupportedLayout)
	case 3:
		in := convertOf(t, anyMode(), "")
		in.Pool = spec.HostPool(rapid.SampledFrom([]string{"", "gqa", "MHA"}).Draw(t, "bad_pool"))
		return bad(in, spec.ErrBadEnum)
	case 4:
		in := convertOf(t, anyMode(), spec.HostPoolMHA)
		if in.Mode == spec.ConvertRelayout && rapid.Bool().Draw(t, "lpf_target") {
			in.To = spec.LayerPageFirst
		} else {
			in.Layout = spec.LayerPageFirst
		}
		return bad(in, spec.ErrLPFUnsupportedPool)
	case 5:
		in := convertOf(t, anyMode(), "")
		switch rapid.IntRange(0, 2).Draw(t, "bad_enum") {
		case 0:
			in.IOBackend = "dma"
		case 1:
			in.IndexDevice = "gpu"
		default:
			in.IndexDType = "int16"
		}
		return bad(in, spec.ErrBadEnum)
	case 6:
		in := convertOf(t, anyMode(), spec.HostPoolMLA)
		makeLPF(t, &in)
		in.IOBackend = spec.IOBackendKernel
		return bad(in, spec.ErrLPFRequiresDirect)
	case 7:
		in := convertOf(t, anyMode(), spec.HostPoolMLA)
		makeLPF(t, &in)
		in.StorageBackend = rapid.SampledFrom([]string{"mooncake", "file", "3fs"}).Draw(t, "storage")
		return bad(in, spec.ErrLPFStorageUnsupported)
	case 8:
		in := convertOf(t, spec.ConvertPageGet, spec.HostPoolMLA)
		makeLPF(t, &in)
		return bad(in, spec.ErrLPFStorageUnsupported)
	case 9:
		in := convertOf(t, rapid.SampledFrom(convertModes[:3]).Draw(t, "base_mode"), spec.HostPoolMLA)
		makeLPF(t, &in)
		in.LPFKernelUnavailable = true
		return bad(in, spec.ErrLPFKernelUnavailable)
	case 10, 11:
		in := convertOf(t, rapid.SampledFrom(transfers).Draw(t, "base_mode"), "")
		in.IOBackend, in.IndexDevice, in.IndexDType = rapid.SampledFrom([]spec.IOBackend{"", spec.IOBackendDirect}).Draw(t, "io"), "", ""
		if rapid.Bool().Draw(t, "device_resident") {
			in.IndexDevice = spec.IndexOnCUDA
			return bad(in, spec.ErrDeviceIndices)
		}
		in.IndexDType = spec.IndexInt32
		return bad(in, spec.ErrIndexDType)
	case 12:
		return fieldNotInMode(t, convertOf(t, anyMode(), ""))
	case 13:
		in := convertOf(t, anyMode(), "")
		size := []*int64{&in.Layers, &in.Pages, &in.PageSize, &in.TokenBytes}[rapid.IntRange(0, 3).Draw(t, "bad_size")]
		if rapid.Bool().Draw(t, "zero") {
			*size = 0
			return bad(in, spec.ErrZeroSize)
		}
		*size = rapid.Int64Range(math.MinInt64, -1).Draw(t, "negative")
		return bad(in, spec.ErrNegative)
	case 14:
		in := convertOf(t, anyMode(), "")
		sizes := []*int64{&in.Layers, &in.Pages, &in.PageSize, &in.TokenBytes}
		i := rapid.IntRange(0, 3).Draw(t, "huge_size")
		*sizes[i] = rapid.Int64Range(math.MaxInt64/2+1, math.MaxInt64).Draw(t, "huge")
		j := (i + rapid.IntRange(1, 3).Draw(t, "other_size")) % 4
		*sizes[j] = max(*sizes[j], 2)
		return bad(in, spec.ErrOverflow)
	case 15:
		in := convertOf(t, anyMode(), "")
		if rapid.Bool().Draw(t, "longer") {
			in.Host = append(slices.Clone(in.Host), 0)
		} else {
			in.Host = in.Host[:len(in.Host)-1]
		}
		return bad(in, spec.ErrArenaSize)
	case 16:
		return badDevicePool(t, convertOf(t, rapid.SampledFrom(transfers).Draw(t, "base_mode"), ""))
	case 17:
		in := convertOf(t, rapid.SampledFrom(transfers).Draw(t, "base_mode"), "")
		if rapid.Bool().Draw(t, "below") {
			l := rapid.Int64Range(math.MinInt64, -1).Draw(t, "negative_layer")
			in.Layer = &l
			return bad(in, spec.ErrNegative)
		}
		l := rapid.Int64Range(in.Layers, in.Layers+3).Draw(t, "past_layer")
		in.Layer = &l
		return bad(in, spec.ErrIndexOutOfRange)
	case 18:
		in := convertOf(t, rapid.SampledFrom(transfers).Draw(t, "base_mode"), "")
		if len(in.DeviceIndices) > 0 && rapid.Bool().Draw(t, "shorter") {
			in.DeviceIndices = in.DeviceIndices[:len(in.DeviceIndices)-1]
		} else {
			in.DeviceIndices = append(slices.Clone(in.DeviceIndices), 0)
		}
		return bad(in, spec.ErrLengthMismatch)
	default:
		return badPages(t)
	}
}

// fieldNotInMode sets one field in's mode does not read.
func fieldNotInMode(t *rapid.T, in spec.LayoutConvertInput) Bad[spec.LayoutConvertInput] {
	zero := int64(0)
	set := map[string]func(){
		"to":             func() { in.To = spec.LayerFirst },
		"layer":          func() { in.Layer = &zero },
		"device_pages":   func() { in.DevicePages = 1 },
		"host_indices":   func() { in.HostIndices = []int64{0} },
		"device_indices": func() { in.DeviceIndices = []int64{0} },
		"device":         func() { in.Device = []byte{0} },
	}
	var fields []string
	switch in.Mode {
	case spec.ConvertRelayout:
		fields = []string{"layer", "device_pages", "host_indices", "device_indices", "device"}
	case spec.ConvertPageGet:
		fields = []string{"to", "layer", "device_pages", "device_indices", "device"}
	default:
		fields = []string{"to"}
	}
	set[rapid.SampledFrom(fields).Draw(t, "stray_field")]()
	return Bad[spec.LayoutConvertInput]{In: in, Want: spec.ErrFieldNotInMode}
}

// badDevicePool breaks a load's or backup's device pool: its page count
// (zero, negative, or too large to address) or its arena's length.
func badDevicePool(t *rapid.T, in spec.LayoutConvertInput) Bad[spec.LayoutConvertInput] {
	switch rapid.IntRange(0, 3).Draw(t, "bad_device") {
	case 0:
		in.DevicePages = 0
		return Bad[spec.LayoutConvertInput]{In: in, Want: spec.ErrZeroSize}
	case 1:
		in.DevicePages = rapid.Int64Range(math.MinInt64, -1).Draw(t, "negative_device_pages")
		return Bad[spec.LayoutConvertInput]{In: in, Want: spec.ErrNegative}
	case 2:
		g := hostGeometry(in)
		if perPage := g.Planes() * g.L * g.PB(); perPage > 1 { // with 1 byte a page, no count overflows
			in.DevicePages = rapid.Int64Range(math.MaxInt64/perPage+1, math.MaxInt64).Draw(t, "huge_device_pages")
			return Bad[spec.LayoutConvertInput]{In: in, Want: spec.ErrOverflow}
		}
		fallthrough
	default:
		in.Device = append(slices.Clone(in.Device), 0)
		return Bad[spec.LayoutConvertInput]{In: in, Want: spec.ErrArenaSize}
	}
}

// badPages breaks one token index list of a load, backup or page read:
// an incomplete page span, a page past its pool, a negative slot, or a
// destination page listed twice.
func badPages(t *rapid.T) Bad[spec.LayoutConvertInput] {
	mode := rapid.SampledFrom([]spec.ConvertMode{spec.ConvertLoad, spec.ConvertBackup, spec.ConvertPageGet}).Draw(t, "base_mode")
	in := convertOf(t, mode, "")
	if mode == spec.ConvertPageGet && len(in.HostIndices) == 0 {
		in.HostIndices = tokensOf([]int64{0}, in.PageSize)
	}
	ensurePair(&in)
	P := in.PageSize
	lists := []*[]int64{&in.HostIndices, &in.DeviceIndices}
	limits := []int64{in.Pages, in.DevicePages}
	which := 0
	if mode != spec.ConvertPageGet {
		which = rapid.IntRange(0, 1).Draw(t, "which_list")
	}
	idx := slices.Clone(*lists[which])
	*lists[which] = idx
	group := rapid.IntRange(0, len(idx)/int(P)-1).Draw(t, "bad_group") * int(P)
	switch rapid.IntRange(0, 4).Draw(t, "bad_pages") {
	case 0:
		if P == 1 {
			break // no split page at page_size 1: fall through to a negative slot
		}
		if rapid.Bool().Draw(t, "short_list") {
			in.HostIndices = in.HostIndices[:len(in.HostIndices)-1]
			if mode != spec.ConvertPageGet {
				in.DeviceIndices = in.DeviceIndices[:len(in.DeviceIndices)-1]
			}
			return Bad[spec.LayoutConvertInput]{In: in, Want: spec.ErrIncompletePageSpan}
		}
		o := rapid.IntRange(1, int(P)-1).Draw(t, "bad_offset")
		idx[group+o] += rapid.SampledFrom([]int64{1, -1, P}).Draw(t, "bad_step")
		return Bad[spec.LayoutConvertInput]{In: in, Want: spec.ErrIncompletePageSpan}
	case 1:
		past := rapid.Int64Range(limits[which], limits[which]+2).Draw(t, "past_page")
		copy(idx[group:], tokensOf([]int64{past}, P))
		return Bad[spec.LayoutConvertInput]{In: in, Want: spec.ErrPageOutOfRange}
	case 2, 3:
		if mode == spec.ConvertPageGet {
			break
		}
		// Append a pair whose destination page repeats an earlier one.
		hp, dp := pagesOf(in.HostIndices, P), pagesOf(in.DeviceIndices, P)
		k := rapid.IntRange(0, len(hp)-1).Draw(t, "repeat")
		if mode == spec.ConvertBackup {
			hp, dp = append(hp, hp[k]), append(dp, rapid.Int64Range(0, in.DevicePages-1).Draw(t, "any_device_page"))
		} else {
			hp, dp = append(hp, rapid.Int64Range(0, in.Pages-1).Draw(t, "any_host_page")), append(dp, dp[k])
		}
		in.HostIndices, in.DeviceIndices = tokensOf(hp, P), tokensOf(dp, P)
		if mode == spec.ConvertBackup {
			return Bad[spec.LayoutConvertInput]{In: in, Want: spec.ErrDuplicateHostPage}
		}
		return Bad[spec.LayoutConvertInput]{In: in, Want: spec.ErrDuplicateDevicePage}
	}
	idx[group+rapid.IntRange(0, int(P)-1).Draw(t, "negative_at")] = rapid.Int64Range(math.MinInt64, -1).Draw(t, "negative_slot")
	return Bad[spec.LayoutConvertInput]{In: in, Want: spec.ErrNegative}
}

// convertBoundary: every relayout pair on §7.1's worked geometry and on
// geometries of one layer, one page and one-token pages; loads and backups
// with runs straddling one and two pages, §7.2's examples, and §7.3's
// storage example on the layouts that accept it.
func convertBoundary() []Case[spec.LayoutConvertInput] {
	var cs []Case[spec.LayoutConvertInput]
	dims := [][4]int64{{2, 2, 2, 1}, {1, 1, 1, 1}, {1, 3, 2, 2}, {3, 1, 3, 1}, {2, 3, 1, 2}}
	for _, pool := range []spec.HostPool{spec.HostPoolMLA, spec.HostPoolMHA} {
		for _, d := range dims {
			g := spec.HostGeometry{Pool: pool, L: d[0], NP: d[1], P: d[2], TB: d[3]}
			for _, from := range layoutsFor(pool) {
				for _, to := range layoutsFor(pool) {
					cs = append(cs, Case[spec.LayoutConvertInput]{
						fmt.Sprintf("relayout-%s-%s-to-%s-L%d-NP%d-P%d-tb%d", pool, from, to, g.L, g.NP, g.P, g.TB),
						spec.LayoutConvertInput{Mode: spec.ConvertRelayout, Layout: from, To: to, Pool: pool,
							Layers: g.L, Pages: g.NP, PageSize: g.P, TokenBytes: g.TB, Host: seqArena(g.TotalBytes())},
					})
				}
			}
		}
	}
	cs = append(cs, transferBoundary()...)
	for _, layout := range allLayouts[:3] {
		cs = append(cs, Case[spec.LayoutConvertInput]{"page-get-7.3-example-" + string(layout), lpfStorageExample(layout)})
	}
	return append(cs, convertRejectCases()...)
}

// convertRejectCases pins §7.3's mode-field rule for each field a mode
// does not read (CheckConvertModeFields), and §7.2's page-span rule for a
// token off its page's run and a run that does not start a page.
func convertRejectCases() []Case[spec.LayoutConvertInput] {
	zero := int64(0)
	pageGet := func(edit func(*spec.LayoutConvertInput)) spec.LayoutConvertInput {
		in := lpfStorageExample(spec.LayerFirst)
		edit(&in)
		return in
	}
	twoTokenPages := func(idx ...int64) spec.LayoutConvertInput {
		return spec.LayoutConvertInput{Mode: spec.ConvertPageGet, Layout: spec.LayerFirst, Pool: spec.HostPoolMLA,
			Layers: 1, Pages: 2, PageSize: 2, TokenBytes: 1, HostIndices: idx, Host: seqArena(4)}
	}
	relayout := spec.LayoutConvertInput{Mode: spec.ConvertRelayout, Layout: spec.LayerFirst, To: spec.PageFirst, Pool: spec.HostPoolMLA,
		Layers: 1, Pages: 1, PageSize: 1, TokenBytes: 1, HostIndices: []int64{0}, Host: seqArena(1)}
	return []Case[spec.LayoutConvertInput]{
		{"page-get-stray-layer", pageGet(func(in *spec.LayoutConvertInput) { in.Layer = &zero })},
		{"page-get-stray-device-pages", pageGet(func(in *spec.LayoutConvertInput) { in.DevicePages = 1 })},
		{"page-get-stray-device", pageGet(func(in *spec.LayoutConvertInput) { in.Device = []byte{0} })},
		{"page-get-stray-device-indices", pageGet(func(in *spec.LayoutConvertInput) { in.DeviceIndices = []int64{0} })},
		{"page-get-stray-to", pageGet(func(in *spec.LayoutConvertInput) { in.To = spec.PageFirst })},
		{"relayout-stray-host-indices", relayout},
		{"page-get-token-off-its-page", twoTokenPages(0, 2)},
		{"page-get-run-not-at-page-start", twoTokenPages(1, 2)},
	}
}

// convertRejects names the table cases ref must reject.
func convertRejects() map[string]*spec.Sentinel {
	return map[string]*spec.Sentinel{
		"lpf-storage-accepted":           spec.ErrLPFStorageUnsupported,
		"page-get-stray-layer":           spec.ErrFieldNotInMode,
		"page-get-stray-device-pages":    spec.ErrFieldNotInMode,
		"page-get-stray-device":          spec.ErrFieldNotInMode,
		"page-get-stray-device-indices":  spec.ErrFieldNotInMode,
		"page-get-stray-to":              spec.ErrFieldNotInMode,
		"relayout-stray-host-indices":    spec.ErrFieldNotInMode,
		"page-get-token-off-its-page":    spec.ErrIncompletePageSpan,
		"page-get-run-not-at-page-start": spec.ErrIncompletePageSpan,
	}
}

// transferBoundary: loads and backups of 0, 1, 2 and 3 pages in one run or
// broken runs, one layer and all, on every layout and pool, on pages of 1
// and 2 tokens, LF also on the kernel backend (no sort); plus §7.2's LPF
// example (layer 1, hp=[0,1], dp=[5,6]).
func transferBoundary() []Case[spec.LayoutConvertInput] {
	var cs []Case[spec.LayoutConvertInput]
	pairs := []struct {
		name   string
		hp, dp []int64
	}{
		{"none", nil, nil},
		{"one", []int64{1}, []int64{2}},
		{"run2", []int64{0, 1}, []int64{2, 3}},
		{"run3", []int64{1, 2, 3}, []int64{0, 1, 2}},
		{"host-break", []int64{0, 2}, []int64{3, 4}},
		{"device-break", []int64{2, 3}, []int64{4, 0}},
		{"descending", []int64{3, 2, 1}, []int64{4, 3, 2}},
	}
	one := int64(1)
	for _, mode := range []spec.ConvertMode{spec.ConvertLoad, spec.ConvertBackup} {
		for _, pool := range []spec.HostPool{spec.HostPoolMLA, spec.HostPoolMHA} {
			for _, layout := range layoutsFor(pool) {
				ios := []spec.IOBackend{spec.IOBackendDirect}
				if layout == spec.LayerFirst {
					ios = append(ios, spec.IOBackendKernel)
				}
				for _, io := range ios {
					for _, P := range []int64{1, 2} {
						for _, pr := range pairs {
							for _, layer := range []*int64{nil, &one} {
								in := spec.LayoutConvertInput{Mode: mode, Layout: layout, Pool: pool, Layers: 2, Pages: 4, PageSize: P, TokenBytes: 2,
									IOBackend: io, DevicePages: 5, Layer: layer, HostIndices: tokensOf(pr.hp, P), DeviceIndices: tokensOf(pr.dp, P)}
								in.Host, in.Device = seqArena(hostGeometry(in).TotalBytes()), seqArena(deviceGeometry(in).TotalBytes())
								scope := "all-layers"
								if layer != nil {
									scope = "layer1"
								}
								cs = append(cs, Case[spec.LayoutConvertInput]{
									fmt.Sprintf("%s-%s-%s-%s-P%d-%s-%s", mode, pool, layout, io, P, pr.name, scope), in})
							}
						}
					}
				}
			}
		}
	}
	for _, layout := range []spec.HostLayout{spec.LayerPageFirst, spec.PageFirstDirect, spec.LayerFirst} {
		in := spec.LayoutConvertInput{Mode: spec.ConvertLoad, Layout: layout, Pool: spec.HostPoolMLA, Layers: 2, Pages: 2, PageSize: 2, TokenBytes: 3,
			Layer: &one, DevicePages: 8, HostIndices: []int64{0, 1, 2, 3}, DeviceIndices: []int64{10, 11, 12, 13}}
		in.Host, in.Device = seqArena(hostGeometry(in).TotalBytes()), make([]byte, deviceGeometry(in).TotalBytes())
		cs = append(cs, Case[spec.LayoutConvertInput]{"load-7.2-example-" + string(layout), in})
	}
	return cs
}

// seqArena is [1, 2, …] (mod 251), so that neighbouring bytes differ.
func seqArena(n int64) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(1 + i%251)
	}
	return b
}

// relayoutBack runs ref's relayout of out's arena from in.To back to in.Layout.
func relayoutBack(lim spec.Limits, in spec.LayoutConvertInput, out spec.LayoutConvertOutput) (spec.LayoutConvertOutput, error) {
	back := in
	back.Layout, back.To, back.Host = in.To, in.Layout, out.Arena
	r, err := ref.LayoutConvert(lim, back)
	if err != nil {
		return r, fmt.Errorf("ref relayout %s→%s: %v", in.To, in.Layout, err)
	}
	return r, nil
}

// convertFollowsOffsets is §7.2's definition of a full relayout,
// dst[off_Y(l,t,b)] = src[off_X(l,t,b)], with both offsets taken from
// layout.host_offsets, for every coordinate of arenas up to 4 KiB.
func convertFollowsOffsets(lim spec.Limits, in spec.LayoutConvertInput, out spec.LayoutConvertOutput) error {
	if in.Mode != spec.ConvertRelayout || len(in.Host) > 4096 {
		return nil
	}
	g := hostGeometry(in)
	q := spec.LayoutHostOffsetsInput{Layout: in.Layout, Pool: in.Pool, Layers: in.Layers, Pages: in.Pages, PageSize: in.PageSize,
		TokenBytes: in.TokenBytes, Points: everyPoint(g)}
	from, err := ref.LayoutHostOffsets(lim, q)
	if err != nil {
		return fmt.Errorf("ref host_offsets as %s: %v", in.Layout, err)
	}
	q.Layout = in.To
	to, err := ref.LayoutHostOffsets(lim, q)
	if err != nil {
		return fmt.Errorf("ref host_offsets as %s: %v", in.To, err)
	}
	for i, pt := range q.Points {
		if out.Arena[to.Offsets[i]] != in.Host[from.Offsets[i]] {
			return fmt.Errorf("%s→%s: %+v holds %#x at %d, the source has %#x at %d", in.Layout, in.To, pt,
				out.Arena[to.Offsets[i]], to.Offsets[i], in.Host[from.Offsets[i]], from.Offsets[i])
		}
	}
	return nil
}

// convertRoundTrip is §7.2: relayout X→Y→X is the identity.
func convertRoundTrip(lim spec.Limits, in spec.LayoutConvertInput, out spec.LayoutConvertOutput) error {
	if in.Mode != spec.ConvertRelayout {
		return nil
	}
	r, err := relayoutBack(lim, in, out)
	if err != nil {
		return err
	}
	if !bytes.Equal(r.Arena, in.Host) {
		return fmt.Errorf("%s→%s→%s gives %v, not the original %v", in.Layout, in.To, in.Layout, r.Arena, in.Host)
	}
	return nil
}

// convertPermutes is §7.2: relayout is a bijection, so the target holds
// the source's bytes, rearranged (the sorted bytes agree).
func convertPermutes(_ spec.Limits, in spec.LayoutConvertInput, out spec.LayoutConvertOutput) error {
	if in.Mode != spec.ConvertRelayout {
		return nil
	}
	a, b := slices.Clone(in.Host), slices.Clone(out.Arena)
	slices.Sort(a)
	slices.Sort(b)
	if !bytes.Equal(a, b) {
		return fmt.Errorf("relayout output is not a permutation of the input's bytes")
	}
	return nil
}

// convertCoinciding is §7.1 "LPF offsets are numerically LF's for MLA"
// and the identity: when the two layouts' offsets coincide the arena is
// unchanged and moves as a single copy.
func convertCoinciding(_ spec.Limits, in spec.LayoutConvertInput, out spec.LayoutConvertOutput) error {
	lfLike := func(x spec.HostLayout) bool { return x == spec.LayerFirst || x == spec.LayerPageFirst }
	if in.Mode != spec.ConvertRelayout || !(in.Layout == in.To || (lfLike(in.Layout) && lfLike(in.To))) {
		return nil
	}
	if !bytes.Equal(out.Arena, in.Host) || out.Descriptors != 1 {
		return fmt.Errorf("%s→%s: arena changed or %d descriptors, want the same bytes in 1", in.Layout, in.To, out.Descriptors)
	}
	return nil
}

// convertDescriptorsSymmetric: a relayout's descriptors are the maximal
// runs of a permutation, and a permutation and its inverse have as many
// (each adjacency of one is an adjacency of the other), so X→Y and Y→X
// take the same number of copies.
func convertDescriptorsSymmetric(lim spec.Limits, in spec.LayoutConvertInput, out spec.LayoutConvertOutput) error {
	if in.Mode != spec.ConvertRelayout {
		return nil
	}
	r, err := relayoutBack(lim, in, out)
	if err != nil {
		return err
	}
	if r.Descriptors != out.Descriptors || out.Descriptors < 1 {
		return fmt.Errorf("%s→%s takes %d descriptors, %s→%s takes %d", in.Layout, in.To, out.Descriptors, in.To, in.Layout, r.Descriptors)
	}
	return nil
}

func isTransfer(in spec.LayoutConvertInput) bool {
	return in.Mode == spec.ConvertLoad || in.Mode == spec.ConvertBackup
}

func movedLayers(in spec.LayoutConvertInput) (int64, int64) {
	if in.Layer != nil {
		return *in.Layer, *in.Layer + 1
	}
	return 0, in.Layers
}

// hostPageRanges asks ref's layout.host_offsets for the ranges of (kv, l, p).
func hostPageRanges(lim spec.Limits, in spec.LayoutConvertInput, kv, l, p int64) ([]spec.ByteRange, error) {
	r, err := ref.LayoutHostOffsets(lim, spec.LayoutHostOffsetsInput{Layout: in.Layout, Pool: in.Pool, Layers: in.Layers, Pages: in.Pages,
		PageSize: in.PageSize, TokenBytes: in.TokenBytes, Spans: []spec.HostPageQuery{{KV: kv, Layer: l, Page: p}}})
	if err != nil {
		return nil, fmt.Errorf("ref host_offsets of (%d,%d,%d): %v", kv, l, p, err)
	}
	return r.Spans[0], nil
}

// convertMovesListedPages is §7.2's load/backup contract, rebuilt from
// layout.host_offsets' page ranges rather than the offset formula: each
// moved layer's (and plane's) device page dp_i (at dp_i×pb of that
// layer in the layer-first pool) and host page hp_i hold the same bytes
// afterwards, the source's; every other destination byte is unchanged.
func convertMovesListedPages(lim spec.Limits, in spec.LayoutConvertInput, out spec.LayoutConvertOutput) error {
	if !isTransfer(in) {
		return nil
	}
	dev := deviceGeometry(in)
	want := slices.Clone(in.Device)
	if in.Mode == spec.ConvertBackup {
		want = slices.Clone(in.Host)
	}
	hp, dp := pagesOf(in.HostIndices, in.PageSize), pagesOf(in.DeviceIndices, in.PageSize)
	first, end := movedLayers(in)
	for l := first; l < end; l++ {
		for kv := range dev.Planes() {
			for i := range hp {
				rs, err := hostPageRanges(lim, in, kv, l, hp[i])
				if err != nil {
					return err
				}
				devOff := kv*dev.PlaneBytes() + l*dev.S()*dev.TB + dp[i]*dev.PB()
				for _, rg := range rs {
					if in.Mode == spec.ConvertLoad {
						copy(want[devOff:devOff+rg.Len], in.Host[rg.Offset:rg.Offset+rg.Len])
					} else {
						copy(want[rg.Offset:rg.Offset+rg.Len], in.Device[devOff:devOff+rg.Len])
					}
					devOff += rg.Len
				}
			}
		}
	}
	if !bytes.Equal(want, out.Arena) {
		return fmt.Errorf("%s %s: destination differs from the listed pages moved over the untouched arena", in.Mode, in.Layout)
	}
	return nil
}

// reversedPairs returns in with its page pairs in reverse order.
func reversedPairs(in spec.LayoutConvertInput) spec.LayoutConvertInput {
	hp, dp := pagesOf(in.HostIndices, in.PageSize), pagesOf(in.DeviceIndices, in.PageSize)
	slices.Reverse(hp)
	slices.Reverse(dp)
	in.HostIndices, in.DeviceIndices = tokensOf(hp, in.PageSize), tokensOf(dp, in.PageSize)
	return in
}

// convertOrderIndependent is §7.2's index-order property: with unique
// host pages the bytes do not depend on the order of the pairs. (kvtwin
// also requires unique destination pages, so it holds for every accepted
// load and backup.)
func convertOrderIndependent(lim spec.Limits, in spec.LayoutConvertInput, out spec.LayoutConvertOutput) error {
	if !isTransfer(in) {
		return nil
	}
	r, err := ref.LayoutConvert(lim, reversedPairs(in))
	if err != nil {
		return fmt.Errorf("ref on reversed pairs: %v", err)
	}
	if !bytes.Equal(r.Arena, out.Arena) {
		return fmt.Errorf("reversing the page pairs changes the %s result", in.Mode)
	}
	return nil
}

// convertBackupLoadRoundTrip is §7.2's mirror: backing up pages and
// loading them back (or loading and backing up) returns the original
// pages of every moved layer, when the second step's destination pages
// are unique too.
func convertBackupLoadRoundTrip(lim spec.Limits, in spec.LayoutConvertInput, out spec.LayoutConvertOutput) error {
	if !isTransfer(in) {
		return nil
	}
	// The second step writes back into a zeroed copy of the first step's
	// source: orig, of geometry geo, at its listed pages.
	back := in
	var orig []byte
	var geo spec.HostGeometry
	var pages []int64
	if in.Mode == spec.ConvertBackup {
		back.Mode, back.Host, back.Device = spec.ConvertLoad, out.Arena, make([]byte, len(in.Device))
		orig, geo, pages = in.Device, deviceGeometry(in), pagesOf(in.DeviceIndices, in.PageSize)
	} else {
		back.Mode, back.Device, back.Host = spec.ConvertBackup, out.Arena, make([]byte, len(in.Host))
		orig, geo, pages = in.Host, hostGeometry(in), pagesOf(in.HostIndices, in.PageSize)
	}
	if len(slices.Compact(slices.Sorted(slices.Values(pages)))) != len(pages) {
		return nil // the way back would write a page twice
	}
	r, err := ref.LayoutConvert(lim, back)
	if err != nil {
		return fmt.Errorf("ref %s back: %v", back.Mode, err)
	}
	first, end := movedLayers(in)
	for l := first; l < end; l++ {
		for kv := range geo.Planes() {
			for _, p := range pages {
				for _, rg := range geo.PageRanges(kv, l, p) {
					if !bytes.Equal(r.Arena[rg.Offset:rg.Offset+rg.Len], orig[rg.Offset:rg.Offset+rg.Len]) {
						return fmt.Errorf("%s then %s: page %d of layer %d, plane %d does not come back", in.Mode, back.Mode, p, l, kv)
					}
				}
			}
		}
	}
	return nil
}

// convertDescriptorRule is §7.2's coalescing rule: order the pairs (LF on
// the direct backend sorts by host page, stably; otherwise caller order),
// split them into runs consecutive on both sides (§2), and count per run 1
// copy under LF/LPF, Count under PFD, Count×P under PF; per moved layer and
// plane.
func convertDescriptorRule(_ spec.Limits, in spec.LayoutConvertInput, out spec.LayoutConvertOutput) error {
	if !isTransfer(in) {
		return nil
	}
	hp, dp := pagesOf(in.HostIndices, in.PageSize), pagesOf(in.DeviceIndices, in.PageSize)
	pairs := make([][2]int64, len(hp))
	for i := range hp {
		pairs[i] = [2]int64{hp[i], dp[i]}
	}
	if in.Layout == spec.LayerFirst && ref.EffectiveIOBackend(in) == spec.IOBackendDirect {
		slices.SortStableFunc(pairs, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	}
	var per int64
	for i := 0; i < len(pairs); {
		j := i + 1
		for j < len(pairs) && pairs[j][0] == pairs[j-1][0]+1 && pairs[j][1] == pairs[j-1][1]+1 {
			j++
		}
		switch count := int64(j - i); in.Layout {
		case spec.PageFirstDirect:
			per += count
		case spec.PageFirst:
			per += count * in.PageSize
		default:
			per++
		}
		i = j
	}
	first, end := movedLayers(in)
	if want := per * deviceGeometry(in).Planes() * (end - first); out.Descriptors != want {
		return fmt.Errorf("%s %s: %d descriptors, the §7.2 rule gives %d", in.Mode, in.Layout, out.Descriptors, want)
	}
	return nil
}

// pageGetWant is a flat page read rebuilt from layout.host_offsets: per
// page and plane, every layer's ranges in ascending offset order, and the
// number of contiguous host ranges they form.
func pageGetWant(lim spec.Limits, in spec.LayoutConvertInput) ([]byte, int64, error) {
	var want []byte
	var ranges int64
	for _, p := range pagesOf(in.HostIndices, in.PageSize) {
		for kv := range hostGeometry(in).Planes() {
			var rs []spec.ByteRange
			for l := range in.Layers {
				r, err := hostPageRanges(lim, in, kv, l, p)
				if err != nil {
					return nil, 0, err
				}
				rs = append(rs, r...)
			}
			slices.SortFunc(rs, func(a, b spec.ByteRange) int { return cmp.Compare(a.Offset, b.Offset) })
			for i, rg := range rs {
				want = append(want, in.Host[rg.Offset:rg.Offset+rg.Len]...)
				if i == 0 || rg.Offset != rs[i-1].Offset+rs[i-1].Len {
					ranges++
				}
			}
		}
	}
	return want, ranges, nil
}

// convertPageGetReadsThePage is §7.3's flat page get: the bytes of every
// layer of each listed page, in host order, and one descriptor per
// contiguous host range.
func convertPageGetReadsThePage(lim spec.Limits, in spec.LayoutConvertInput, out spec.LayoutConvertOutput) error {
	if in.Mode != spec.ConvertPageGet {
		return nil
	}
	want, ranges, err := pageGetWant(lim, in)
	if err != nil {
		return err
	}
	if !bytes.Equal(want, out.Arena) && !(len(want) == 0 && len(out.Arena) == 0) {
		return fmt.Errorf("%s page read %v, the pages' bytes are %v", in.Layout, out.Arena, want)
	}
	if out.Descriptors != ranges {
		return fmt.Errorf("%s page read in %d descriptors, the pages form %d ranges", in.Layout, out.Descriptors, ranges)
	}
	return nil
}

// convertOnePointerPerPage is §7.1's "one pointer per page": under PF and
// PFD a flat page read is one descriptor per page and plane; under LF with
// L, NP >= 2 it is one per layer.
func convertOnePointerPerPage(_ spec.Limits, in spec.LayoutConvertInput, out spec.LayoutConvertOutput) error {
	if in.Mode != spec.ConvertPageGet {
		return nil
	}
	perPage := hostGeometry(in).Planes()
	switch {
	case in.Layout == spec.PageFirst || in.Layout == spec.PageFirstDirect:
	case in.Layers >= 2 && in.Pages >= 2:
		perPage *= in.Layers
	default:
		return nil
	}
	if want := perPage * int64(len(in.HostIndices)) / in.PageSize; out.Descriptors != want {
		return fmt.Errorf("%s L=%d: %d descriptors for %d pages, want %d", in.Layout, in.Layers, out.Descriptors, int64(len(in.HostIndices))/in.PageSize, want)
	}
	return nil
}
