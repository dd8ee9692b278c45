package ref

import (
	"cmp"
	"slices"

	"github.com/kvtwin/kvtwin/spec"
)

// EffectiveIOBackend is in.IOBackend with the empty default resolved.
func EffectiveIOBackend(in spec.LayoutConvertInput) spec.IOBackend {
	if in.IOBackend == "" {
		return spec.IOBackendDirect
	}
	return in.IOBackend
}

// UsesLPF reports whether a layer_page_first arena takes part in the call.
func UsesLPF(in spec.LayoutConvertInput) bool {
	return in.Layout == spec.LayerPageFirst || (in.Mode == spec.ConvertRelayout && in.To == spec.LayerPageFirst)
}

// CopiesPerRun is §7.2's descriptor rule for one run of count pages that
// are consecutive on both the host and the device: one copy of count×pb
// bytes under LF and LPF (a layer's pages are adjacent), count copies of pb
// under PFD (a layer's pages are L×pb apart), and count×P copies of tb
// under PF (a layer's page is P strided token slices).
func CopiesPerRun(layout spec.HostLayout, count, p int64) int64 {
	switch layout {
	case spec.PageFirstDirect:
		return count
	case spec.PageFirst:
		return count * p
	default:
		return 1
	}
}

// LayoutConvert runs a relayout, load, backup or flat page read on a host
// arena (docs/spec/transfer.md §7.2, §7.3), byte by byte through the §7.1 offset
// formula.
func LayoutConvert(lim spec.Limits, in spec.LayoutConvertInput) (spec.LayoutConvertOutput, error) {
	plan, err := ValidateLayoutConvert(lim, in)
	if err != nil {
		return spec.LayoutConvertOutput{}, err
	}
	switch in.Mode {
	case spec.ConvertRelayout:
		return relayout(plan, in.Host), nil
	case spec.ConvertPageGet:
		return pageGet(plan, in.Host, in.HostIndices), nil
	default:
		return transfer(plan, in), nil
	}
}

// relayout walks the source arena byte by byte: the byte at source offset
// i holds coordinates coords(i), which land at To.offset of them. A new
// descriptor starts wherever the destination is not the previous one's
// successor, which counts the fewest contiguous copies.
func relayout(plan spec.ConvertPlan, src []byte) spec.LayoutConvertOutput {
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
	return spec.LayoutConvertOutput{Arena: dst, Descriptors: descriptors}
}

// pagePair is one (host page, device page) pair of a load or backup.
type pagePair struct{ host, device int64 }

// pageRun is a run of pairs consecutive on both sides (docs/spec/transfer.md §2).
type pageRun struct{ host, device, count int64 }

// transfer moves whole pages between the host arena and the layer-first
// device arena, layer by layer and plane by plane, byte by byte; then
// counts descriptors with the §7.2 rule over the runs of the ordered pairs.
func transfer(plan spec.ConvertPlan, in spec.LayoutConvertInput) spec.LayoutConvertOutput {
	h, d := plan.Host, plan.Device
	pairs := make([]pagePair, 0, plan.Pages)
	for i := 0; i < len(in.HostIndices); i += int(h.P) {
		pairs = append(pairs, pagePair{host: in.HostIndices[i] / h.P, device: in.DeviceIndices[i] / h.P})
	}
	if plan.SortHost {
		slices.SortStableFunc(pairs, func(a, b pagePair) int { return cmp.Compare(a.host, b.host) })
	}
	src, dst := in.Host, clone(in.Device)
	if in.Mode == spec.ConvertBackup {
		src, dst = in.Device, clone(in.Host)
	}
	for l := plan.FirstLayer; l < plan.EndLayer; l++ {
		for kv := range h.Planes() {
			for _, pr := range pairs {
				for o := range h.P {
					for b := range h.TB {
						ho, do := h.Offset(kv, l, pr.host*h.P+o, b), d.Offset(kv, l, pr.device*h.P+o, b)
						if in.Mode == spec.ConvertLoad {
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
	return spec.LayoutConvertOutput{Arena: dst, Descriptors: perLayerPlane * h.Planes() * (plan.EndLayer - plan.FirstLayer)}
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
func pageGet(plan spec.ConvertPlan, host []byte, idx []int64) spec.LayoutConvertOutput {
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
	return spec.LayoutConvertOutput{Arena: out, Descriptors: descriptors}
}

// clone copies an arena into a new, non-nil slice.
func clone(b []byte) []byte {
	c := make([]byte, len(b))
	copy(c, b)
	return c
}
