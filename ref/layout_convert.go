package ref

import (
	"cmp"
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
// i holds coordinates coords(i), which land at To.offset of them. A new
// descriptor starts wherever the destination is not the previous one's
// successor, which counts the fewest contiguous copies.
func relayout(plan ConvertPlan, src []byte) LayoutConvertOutput {
	dst := make([]byte, len(src))
	var descriptors, prev int64
	for i := range int64(len(src)) {
		kv, l, t, b := plan.Host.coords(i)
		j := plan.To.offset(kv, l, t, b)
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
						ho, do := h.offset(kv, l, pr.host*h.P+o, b), d.offset(kv, l, pr.device*h.P+o, b)
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
						offs = append(offs, g.offset(kv, l, p*g.P+o, b))
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
