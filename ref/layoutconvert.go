package ref

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// ConvertMode selects what layout.convert does (docs/spec/transfer.md §7.2, §7.3).
type ConvertMode string

const (
	// ConvertRelayout rewrites a whole host arena from Layout into To (§7.2 "full relayout").
	ConvertRelayout ConvertMode = "relayout"
	// ConvertLoad copies host pages into device pages (H2D, §7.2).
	ConvertLoad ConvertMode = "load"
	// ConvertBackup copies device pages into host pages (D2H, §7.2).
	ConvertBackup ConvertMode = "backup"
	// ConvertPageGet is a storage backend's flat page read: every layer of a
	// page, in host byte order (§7.3, "flat page get").
	ConvertPageGet ConvertMode = "page_get"
)

// IOBackend is HiCache's host↔device copy backend (§7.3). The empty string
// means IOBackendDirect, the path every layout supports.
type IOBackend string

const (
	// IOBackendDirect is the direct (CPU-descriptor) copy path.
	IOBackendDirect IOBackend = "direct"
	// IOBackendKernel is the GPU gather/scatter kernel path.
	IOBackendKernel IOBackend = "kernel"
)

// IndexDevice is where the caller's index tensors live (§7.3). The empty
// string means IndexOnCPU.
type IndexDevice string

const (
	// IndexOnCPU is host-resident indices.
	IndexOnCPU IndexDevice = "cpu"
	// IndexOnCUDA is device-resident indices.
	IndexOnCUDA IndexDevice = "cuda"
)

// IndexDType is the element type of the caller's index tensors (§7.3). The
// empty string means IndexInt64.
type IndexDType string

const (
	// IndexInt64 is int64 indices, the only type the direct path takes.
	IndexInt64 IndexDType = "int64"
	// IndexInt32 is int32 indices.
	IndexInt32 IndexDType = "int32"
)

// Sentinels of layout.convert (docs/spec/transfer.md §7.2, §7.3).
var (
	// ErrIncompletePageSpan: token indices that are not whole, aligned pages (§7.2).
	ErrIncompletePageSpan = NewSentinel("incomplete_page_span", "token indices do not cover whole pages")
	// ErrDuplicateHostPage: a backup writes one host page twice (§7.2).
	ErrDuplicateHostPage = NewSentinel("duplicate_host_page", "host page listed twice in a backup")
	// ErrDuplicateDevicePage: a load writes one device page twice; the mirror
	// of ErrDuplicateHostPage (kvtwin decision, docs/decisions.md).
	ErrDuplicateDevicePage = NewSentinel("duplicate_device_page", "device page listed twice in a load")
	// ErrLPFRequiresDirect: layer_page_first with an io backend other than direct (§7.3).
	ErrLPFRequiresDirect = NewSentinel("lpf_requires_direct", "layer_page_first is direct-only")
	// ErrLPFStorageUnsupported: a storage backend, or a flat page read, on layer_page_first (§7.3).
	ErrLPFStorageUnsupported = NewSentinel("lpf_storage_unsupported", "layer_page_first has no one-pointer-per-page storage contract")
	// ErrLPFKernelUnavailable: the LPF direct kernel is missing; never fall back silently (§7.3).
	ErrLPFKernelUnavailable = NewSentinel("lpf_kernel_unavailable", "layer_page_first kernel not available")
	// ErrDeviceIndices: device-resident indices given to the direct path (§7.3).
	ErrDeviceIndices = NewSentinel("device_indices", "the direct path needs host-resident indices")
	// ErrIndexDType: indices that are not int64 given to the direct path (§7.3).
	ErrIndexDType = NewSentinel("index_dtype", "the direct path needs int64 indices")
	// ErrArenaSize: an arena's length differs from its geometry's size (§7.1).
	ErrArenaSize = NewSentinel("arena_size", "arena length does not match its geometry")
	// ErrFieldNotInMode: a field the chosen mode does not read is set, so
	// the caller's intent is unclear (kvtwin input contract).
	ErrFieldNotInMode = NewSentinel("field_not_in_mode", "field is not used by this mode")
)

// LayoutConvertInput is the input of layout.convert: a host arena geometry,
// the §7.3 configuration checked before anything else, and the mode's own
// fields. Fields a mode does not read must be left at their zero value.
type LayoutConvertInput struct {
	// Mode is "relayout", "load", "backup" or "page_get".
	Mode ConvertMode `json:"mode"`
	// Layout is the host arena's layout (the source, "from", of a relayout).
	Layout HostLayout `json:"layout"`
	// To is the relayout target layout; relayout only.
	To HostLayout `json:"to,omitempty"`
	// Pool is "mla" or "mha"; MHA arenas hold a K plane then a V plane.
	Pool HostPool `json:"pool"`
	// Layers is L, >= 1.
	Layers int64 `json:"layers"`
	// Pages is the host arena's page count NP, >= 1.
	Pages int64 `json:"pages"`
	// PageSize is P in tokens, >= 1.
	PageSize int64 `json:"page_size"`
	// TokenBytes is tb, bytes per token per layer per plane, >= 1.
	TokenBytes int64 `json:"token_bytes"`
	// IOBackend is "direct" (default when empty) or "kernel".
	IOBackend IOBackend `json:"io_backend,omitempty"`
	// StorageBackend names a configured storage backend; "" is none.
	StorageBackend string `json:"storage_backend,omitempty"`
	// LPFKernelUnavailable reports that the LPF direct kernel is missing;
	// false, the normal case, means it is available.
	LPFKernelUnavailable bool `json:"lpf_kernel_unavailable,omitempty"`
	// IndexDevice is "cpu" (default when empty) or "cuda".
	IndexDevice IndexDevice `json:"index_device,omitempty"`
	// IndexDType is "int64" (default when empty) or "int32".
	IndexDType IndexDType `json:"index_dtype,omitempty"`
	// Layer is the one layer a load or backup moves; absent moves every layer.
	Layer *int64 `json:"layer,omitempty"`
	// DevicePages is the device pool's page count per layer; load/backup only.
	DevicePages int64 `json:"device_pages,omitempty"`
	// HostIndices are host token slots, whole pages (load, backup, page_get).
	HostIndices []int64 `json:"host_indices,omitempty"`
	// DeviceIndices are device token slots paired with HostIndices (load, backup).
	DeviceIndices []int64 `json:"device_indices,omitempty"`
	// Host is the host arena in Layout, exactly the geometry's size.
	Host []byte `json:"host"`
	// Device is the layer-first device arena (load, backup): planes × L ×
	// device_pages × page_size × token_bytes bytes.
	Device []byte `json:"device,omitempty"`
}

// LayoutConvertOutput is the result of layout.convert.
type LayoutConvertOutput struct {
	// Arena is the written arena: the host arena in To (relayout), the
	// updated device arena (load), the updated host arena (backup), or the
	// requested flat pages one after another (page_get).
	Arena []byte `json:"arena"`
	// Descriptors counts the contiguous copies the operation takes. load and
	// backup: the §7.2 rule, per layer and plane, summed over the runs of
	// (host page, device page) pairs: 1 per run under LF and LPF, Count under
	// PFD, Count×page_size under PF. relayout: the fewest copies that do it,
	// i.e. the maximal source ranges whose bytes land contiguously. page_get:
	// the contiguous host ranges read, per page and plane (1 under PF and
	// PFD: one pointer per page; layers under LF).
	Descriptors int64 `json:"descriptors"`
}

// ConvertPlan is a validated layout.convert request.
type ConvertPlan struct {
	// Host is the host arena's geometry (relayout: the source).
	Host HostGeometry
	// To is the relayout target geometry; zero in other modes.
	To HostGeometry
	// Device is the device arena's geometry (layer-first, NP = device_pages)
	// for load and backup; zero in other modes.
	Device HostGeometry
	// FirstLayer and EndLayer bound the layers a load or backup moves.
	FirstLayer, EndLayer int64
	// SortHost is §7.2's index order rule: under LF on the direct backend
	// the host pages are sorted ascending (stably) and the device pages
	// follow the same permutation; otherwise caller order is kept.
	SortHost bool
	// Pages is the number of page pairs (load, backup) or pages read (page_get).
	Pages int64
}

// EffectiveIOBackend is in.IOBackend with the empty default resolved.
func EffectiveIOBackend(in LayoutConvertInput) IOBackend {
	if in.IOBackend == "" {
		return IOBackendDirect
	}
	return in.IOBackend
}

// UsesLPF reports whether a layer_page_first arena takes part in the call.
func UsesLPF(in LayoutConvertInput) bool {
	return in.Layout == LayerPageFirst || (in.Mode == ConvertRelayout && in.To == LayerPageFirst)
}

// ValidateLayoutConvert checks in and returns its plan. The order is the
// contract: the §7.3 configuration (CheckConvertConfig), fields the mode
// does not read (CheckConvertModeFields), the host geometry, the host arena
// size, then the mode's own fields, and last the output size.
func ValidateLayoutConvert(lim Limits, in LayoutConvertInput) (ConvertPlan, error) {
	if err := CheckConvertConfig(in); err != nil {
		return ConvertPlan{}, err
	}
	if err := CheckConvertModeFields(in); err != nil {
		return ConvertPlan{}, err
	}
	g, err := CheckHostSizes(in.Layout, in.Pool, in.Layers, in.Pages, in.PageSize, in.TokenBytes)
	if err != nil {
		return ConvertPlan{}, err
	}
	if err := checkArena("host", in.Host, g.TotalBytes(), "planes×layers×pages×page_size×token_bytes"); err != nil {
		return ConvertPlan{}, err
	}
	plan := ConvertPlan{Host: g}
	switch in.Mode {
	case ConvertRelayout:
		plan.To = g
		plan.To.Layout = in.To
		return plan, lim.CheckOutput("host", g.TotalBytes(), 1)
	case ConvertPageGet:
		if err := CheckPageSpans("host_indices", in.HostIndices, g.P, g.NP, "pages"); err != nil {
			return ConvertPlan{}, err
		}
		plan.Pages = int64(len(in.HostIndices)) / g.P
		return plan, lim.CheckOutput("host_indices", plan.Pages, g.Planes()*g.L*g.PB())
	default:
		return validateTransfer(lim, in, plan)
	}
}

// CheckConvertConfig is the §7.3 fail-fast table, checked before any size:
// mode, layout (and to), pool, LPF on MHA, the enums io_backend,
// index_device and index_dtype; then, when an LPF arena takes part, direct
// io, no storage backend, no flat page read and an available kernel; then,
// for a load or backup on the direct path, CPU and int64 indices.
func CheckConvertConfig(in LayoutConvertInput) error {
	switch in.Mode {
	case ConvertRelayout, ConvertLoad, ConvertBackup, ConvertPageGet:
	default:
		return Reject(ErrBadEnum, "mode", string(in.Mode), `"relayout", "load", "backup" or "page_get"`)
	}
	if err := checkConvertLayouts(in); err != nil {
		return err
	}
	if err := checkConvertEnums(in); err != nil {
		return err
	}
	if UsesLPF(in) {
		if err := checkLPFConfig(in); err != nil {
			return err
		}
	}
	if (in.Mode == ConvertLoad || in.Mode == ConvertBackup) && EffectiveIOBackend(in) == IOBackendDirect {
		if in.IndexDevice == IndexOnCUDA {
			return Reject(ErrDeviceIndices, "index_device", string(in.IndexDevice), `"cpu" on the direct io backend`)
		}
		if in.IndexDType == IndexInt32 {
			return Reject(ErrIndexDType, "index_dtype", string(in.IndexDType), `"int64" on the direct io backend`)
		}
	}
	return nil
}

func checkConvertLayouts(in LayoutConvertInput) error {
	relayout := in.Mode == ConvertRelayout
	if err := CheckHostLayout("layout", in.Layout); err != nil {
		return err
	}
	if relayout {
		if err := CheckHostLayout("to", in.To); err != nil {
			return err
		}
	}
	if err := CheckHostPool(in.Pool); err != nil {
		return err
	}
	if err := CheckLPFPool("layout", in.Layout, in.Pool); err != nil {
		return err
	}
	if relayout {
		return CheckLPFPool("to", in.To, in.Pool)
	}
	return nil
}

func checkConvertEnums(in LayoutConvertInput) error {
	switch in.IOBackend {
	case "", IOBackendDirect, IOBackendKernel:
	default:
		return Reject(ErrBadEnum, "io_backend", string(in.IOBackend), `"direct" or "kernel"`)
	}
	switch in.IndexDevice {
	case "", IndexOnCPU, IndexOnCUDA:
	default:
		return Reject(ErrBadEnum, "index_device", string(in.IndexDevice), `"cpu" or "cuda"`)
	}
	switch in.IndexDType {
	case "", IndexInt64, IndexInt32:
	default:
		return Reject(ErrBadEnum, "index_dtype", string(in.IndexDType), `"int64" or "int32"`)
	}
	return nil
}

// checkLPFConfig is §7.3's LPF rows, in the table's order.
func checkLPFConfig(in LayoutConvertInput) error {
	if io := EffectiveIOBackend(in); io != IOBackendDirect {
		return Reject(ErrLPFRequiresDirect, "io_backend", string(io), `"direct" with layer_page_first`)
	}
	if in.StorageBackend != "" {
		return Reject(ErrLPFStorageUnsupported, "storage_backend", in.StorageBackend, `"" (none) with layer_page_first`)
	}
	if in.Mode == ConvertPageGet {
		return Reject(ErrLPFStorageUnsupported, "mode", string(in.Mode), `not "page_get" on layer_page_first`)
	}
	if in.LPFKernelUnavailable {
		return Reject(ErrLPFKernelUnavailable, "lpf_kernel_unavailable", true, "false: no silent fallback to a slower copy")
	}
	return nil
}

// CheckConvertModeFields rejects, in struct order, a field that in.Mode
// does not read but that is set: to (relayout only); layer, device_pages,
// device_indices, device (load and backup); host_indices (all but relayout).
func CheckConvertModeFields(in LayoutConvertInput) error {
	relayout, pageGet := in.Mode == ConvertRelayout, in.Mode == ConvertPageGet
	transfer := !relayout && !pageGet
	stray := func(field string, value any) error {
		return Reject(ErrFieldNotInMode, field, value, fmt.Sprintf("absent in mode %q", in.Mode))
	}
	switch {
	case in.To != "" && !relayout:
		return stray("to", string(in.To))
	case in.Layer != nil && !transfer:
		return stray("layer", *in.Layer)
	case in.DevicePages != 0 && !transfer:
		return stray("device_pages", in.DevicePages)
	case len(in.HostIndices) != 0 && relayout:
		return stray("host_indices", len(in.HostIndices))
	case len(in.DeviceIndices) != 0 && !transfer:
		return stray("device_indices", len(in.DeviceIndices))
	case len(in.Device) != 0 && !transfer:
		return stray("device", len(in.Device))
	}
	return nil
}

// validateTransfer checks a load or backup after the host arena: device
// pages and arena, the layer, the index lists' lengths, host then device
// page spans, the destination pages' uniqueness, and the output size.
func validateTransfer(lim Limits, in LayoutConvertInput, plan ConvertPlan) (ConvertPlan, error) {
	g := plan.Host
	if err := CheckSize("device_pages", in.DevicePages); err != nil {
		return ConvertPlan{}, err
	}
	if perPage := g.Planes() * g.L * g.PB(); MulOverflows(in.DevicePages, perPage) {
		return ConvertPlan{}, Reject(ErrOverflow, "device_pages", in.DevicePages,
			fmt.Sprintf("device_pages×planes×layers×page_size×token_bytes <= %d", int64(math.MaxInt64)))
	}
	dev := HostGeometry{Layout: LayerFirst, Pool: g.Pool, L: g.L, NP: in.DevicePages, P: g.P, TB: g.TB}
	if err := checkArena("device", in.Device, dev.TotalBytes(), "planes×layers×device_pages×page_size×token_bytes"); err != nil {
		return ConvertPlan{}, err
	}
	plan.Device, plan.FirstLayer, plan.EndLayer = dev, 0, g.L
	if in.Layer != nil {
		if err := checkCoord("layer", *in.Layer, g.L, "layers", ErrIndexOutOfRange); err != nil {
			return ConvertPlan{}, err
		}
		plan.FirstLayer, plan.EndLayer = *in.Layer, *in.Layer+1
	}
	if len(in.DeviceIndices) != len(in.HostIndices) {
		return ConvertPlan{}, Reject(ErrLengthMismatch, "device_indices", len(in.DeviceIndices),
			fmt.Sprintf("len == len(host_indices) = %d", len(in.HostIndices)))
	}
	if err := CheckPageSpans("host_indices", in.HostIndices, g.P, g.NP, "pages"); err != nil {
		return ConvertPlan{}, err
	}
	if err := CheckPageSpans("device_indices", in.DeviceIndices, g.P, dev.NP, "device_pages"); err != nil {
		return ConvertPlan{}, err
	}
	// The destination's pages must be unique: a page written twice would
	// make the result depend on copy order.
	arena, field, idx, pages, dup := "device", "device_indices", in.DeviceIndices, dev.NP, ErrDuplicateDevicePage
	if in.Mode == ConvertBackup {
		arena, field, idx, pages, dup = "host", "host_indices", in.HostIndices, g.NP, ErrDuplicateHostPage
	}
	if err := CheckUniquePages(field, idx, g.P, pages, dup); err != nil {
		return ConvertPlan{}, err
	}
	plan.SortHost = g.Layout == LayerFirst && EffectiveIOBackend(in) == IOBackendDirect
	plan.Pages = int64(len(in.HostIndices)) / g.P
	size := dev.TotalBytes()
	if in.Mode == ConvertBackup {
		size = g.TotalBytes()
	}
	return plan, lim.CheckOutput(arena, size, 1)
}

func checkArena(field string, arena []byte, want int64, expr string) error {
	if int64(len(arena)) != want {
		return Reject(ErrArenaSize, field, len(arena), fmt.Sprintf("len == %s = %d", expr, want))
	}
	return nil
}

// CheckPageSpans checks §7.2's token→page rule on idx: its length is a
// multiple of p, and each group of p entries is exactly [k×p … k×p+p−1]
// with 0 <= k < pages. Entries are checked in order; for each, a negative
// value (ErrNegative) first, then its place in the page
// (ErrIncompletePageSpan), then, on a page's first token, the page bound
// (ErrPageOutOfRange). pagesName names the bound's field.
func CheckPageSpans(field string, idx []int64, p, pages int64, pagesName string) error {
	if n := int64(len(idx)); n%p != 0 {
		return Reject(ErrIncompletePageSpan, field, n, fmt.Sprintf("len a multiple of page_size=%d", p))
	}
	for i, v := range idx {
		if v < 0 {
			return Reject(ErrNegative, Idx(field, i), v, ">= 0")
		}
		o := int64(i) % p
		if o != 0 {
			if want := idx[i-int(o)] + o; v != want {
				return Reject(ErrIncompletePageSpan, Idx(field, i), v, fmt.Sprintf("== %s[%d]+%d = %d (same page)", field, i-int(o), o, want))
			}
			continue
		}
		if v%p != 0 {
			return Reject(ErrIncompletePageSpan, Idx(field, i), v, fmt.Sprintf("a multiple of page_size=%d (a page's first token)", p))
		}
		if v/p >= pages {
			return Reject(ErrPageOutOfRange, Idx(field, i), v, fmt.Sprintf("page (token/page_size) < %s=%d", pagesName, pages))
		}
	}
	return nil
}

// CheckUniquePages rejects, with s, the first page of idx (whole pages of
// size p, already checked by CheckPageSpans against pages) that an earlier
// group already named. Its scratch is a bitset of pages bits, bounded by the
// validated arena the pages index.
func CheckUniquePages(field string, idx []int64, p, pages int64, s *Sentinel) error {
	seen := make([]uint64, (pages+63)/64)
	for i := 0; i < len(idx); i += int(p) {
		k := idx[i] / p
		if seen[k/64]&(1<<(k%64)) != 0 {
			return Reject(s, Idx(field, i), idx[i], fmt.Sprintf("a page (%d) not listed earlier in %s", k, field))
		}
		seen[k/64] |= 1 << (k % 64)
	}
	return nil
}

// CopiesPerRun is §7.2's descriptor rule for one run of count pages that
// are consecutive on both the host and the device: one copy of count×pb
// bytes under LF and LPF (a layer's pages are adjacent), count copies of pb
// under PFD (a layer's pages are L×pb apart), and count×P copies of tb
// under PF (a layer's page is P strided token slices).
func CopiesPerRun(layout HostLayout, count, p int64) int64 {
	switch layout {
	case PageFirstDirect:
		return count
	case PageFirst:
		return count * p
	default:
		return 1
	}
}

// LayoutConvert runs a relayout, load, backup or flat page read on a host
// arena (docs/spec/transfer.md §7.2, §7.3), byte by byte through the §7.1 offset
// formula.
func LayoutConvert(lim Limits, in LayoutConvertInput) (LayoutConvertOutput, error) {
	plan, err := ValidateLayoutConvert(lim, in)
	if err != nil {
		return LayoutConvertOutput{}, err
	}
	switch in.Mode {
	case ConvertRelayout:
		return relayout(plan, in.Host), nil
	case ConvertPageGet:
		return pageGet(plan, in.Host, in.HostIndices), nil
	default:
		return transfer(plan, in), nil
	}
}

// relayout walks the source arena byte by byte: the byte at source offset
// i holds coordinates Coords(i), which land at To.Offset of them. A new
// descriptor starts wherever the destination is not the previous one's
// successor, which counts the fewest contiguous copies.
func relayout(plan ConvertPlan, src []byte) LayoutConvertOutput {
	dst := make([]byte, len(src))
	var descriptors, prev int64
	for i := range int64(len(src)) {
		kv, l, t, b := plan.Host.Coords(i)
		j := plan.To.Offset(kv, l, t, b)
		dst[j] = src[i]
		if i == 0 || j != prev+1 {
			descriptors++
		}
		prev = j
	}
	return LayoutConvertOutput{Arena: dst, Descriptors: descriptors}
}

// pagePair is one (host page, device page) pair of a load or backup.
type pagePair struct{ host, device int64 }

// pageRun is a run of pairs consecutive on both sides (docs/spec/transfer.md §2).
type pageRun struct{ host, device, count int64 }

// transfer moves whole pages between the host arena and the layer-first
// device arena, layer by layer and plane by plane, byte by byte; then
// counts descriptors with the §7.2 rule over the runs of the ordered pairs.
func transfer(plan ConvertPlan, in LayoutConvertInput) LayoutConvertOutput {
	h, d := plan.Host, plan.Device
	pairs := make([]pagePair, 0, plan.Pages)
	for i := 0; i < len(in.HostIndices); i += int(h.P) {
		pairs = append(pairs, pagePair{host: in.HostIndices[i] / h.P, device: in.DeviceIndices[i] / h.P})
	}
	if plan.SortHost {
		slices.SortStableFunc(pairs, func(a, b pagePair) int { return cmp.Compare(a.host, b.host) })
	}
	src, dst := in.Host, clone(in.Device)
	if in.Mode == ConvertBackup {
		src, dst = in.Device, clone(in.Host)
	}
	for l := plan.FirstLayer; l < plan.EndLayer; l++ {
		for kv := range h.Planes() {
			for _, pr := range pairs {
				for o := range h.P {
					for b := range h.TB {
						ho, do := h.Offset(kv, l, pr.host*h.P+o, b), d.Offset(kv, l, pr.device*h.P+o, b)
						if in.Mode == ConvertLoad {
							dst[do] = src[ho]
						} else {
							dst[ho] = src[do]
						}
					}
				}
			}
		}
	}
	var perLayerPlane int64
	for _, r := range groupPairs(pairs) {
		perLayerPlane += CopiesPerRun(h.Layout, r.count, h.P)
	}
	return LayoutConvertOutput{Arena: dst, Descriptors: perLayerPlane * h.Planes() * (plan.EndLayer - plan.FirstLayer)}
}

// groupPairs splits pairs into maximal runs that step by exactly +1 on
// both sides (docs/spec/transfer.md §2).
func groupPairs(pairs []pagePair) []pageRun {
	var runs []pageRun
	for i, pr := range pairs {
		if i > 0 && pr.host == pairs[i-1].host+1 && pr.device == pairs[i-1].device+1 {
			runs[len(runs)-1].count++
			continue
		}
		runs = append(runs, pageRun{host: pr.host, device: pr.device, count: 1})
	}
	return runs
}

// pageGet reads each listed page the way a storage backend sees it: per
// plane, every (layer, token, byte) of the page, in ascending host offset
// order. Descriptors counts the maximal contiguous host ranges read.
func pageGet(plan ConvertPlan, host []byte, idx []int64) LayoutConvertOutput {
	g := plan.Host
	out := make([]byte, 0, plan.Pages*g.Planes()*g.L*g.PB())
	var descriptors int64
	for i := 0; i < len(idx); i += int(g.P) {
		p := idx[i] / g.P
		for kv := range g.Planes() {
			offs := make([]int64, 0, g.L*g.PB())
			for l := range g.L {
				for o := range g.P {
					for b := range g.TB {
						offs = append(offs, g.Offset(kv, l, p*g.P+o, b))
					}
				}
			}
			slices.Sort(offs)
			for j, off := range offs {
				out = append(out, host[off])
				if j == 0 || off != offs[j-1]+1 {
					descriptors++
				}
			}
		}
	}
	return LayoutConvertOutput{Arena: out, Descriptors: descriptors}
}

// clone copies an arena into a new, non-nil slice.
func clone(b []byte) []byte {
	c := make([]byte, len(b))
	copy(c, b)
	return c
}
