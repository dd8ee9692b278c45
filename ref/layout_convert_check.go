package ref

import (
	"fmt"
	"math"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for layout.convert (docs/spec/transfer.md §7.2, §7.3): configuration, mode fields and page spans.

// ValidateLayoutConvert checks in and returns its plan. The order is the
// contract: the §7.3 configuration (checkConvertConfig), fields the mode
// does not read (checkConvertModeFields), the host geometry, the host arena
// size, then the mode's own fields, and last the output size.
func ValidateLayoutConvert(lim spec.Limits, in spec.LayoutConvertInput) (spec.ConvertPlan, error) {
	if err := checkConvertConfig(in); err != nil {
		return spec.ConvertPlan{}, err
	}
	if err := checkConvertModeFields(in); err != nil {
		return spec.ConvertPlan{}, err
	}
	g, err := checkHostSizes(in.Layout, in.Pool, in.Layers, in.Pages, in.PageSize, in.TokenBytes)
	if err != nil {
		return spec.ConvertPlan{}, err
	}
	if err := checkArena("host", in.Host, g.TotalBytes(), "planes×layers×pages×page_size×token_bytes"); err != nil {
		return spec.ConvertPlan{}, err
	}
	plan := spec.ConvertPlan{Host: g}
	switch in.Mode {
	case spec.ConvertRelayout:
		plan.To = g
		plan.To.Layout = in.To
		return plan, lim.CheckOutput("host", g.TotalBytes(), 1)
	case spec.ConvertPageGet:
		if err := checkPageSpans("host_indices", in.HostIndices, g.P, g.NP, "pages"); err != nil {
			return spec.ConvertPlan{}, err
		}
		plan.Pages = int64(len(in.HostIndices)) / g.P
		return plan, lim.CheckOutput("host_indices", plan.Pages, g.Planes()*g.L*g.PB())
	default:
		return validateTransfer(lim, in, plan)
	}
}

// checkConvertConfig is the §7.3 fail-fast table, checked before any size:
// mode, layout (and to), pool, LPF on MHA, the enums io_backend,
// index_device and index_dtype; then, when an LPF arena takes part, direct
// io, no storage backend, no flat page read and an available kernel; then,
// for a load or backup on the direct path, CPU and int64 indices.
func checkConvertConfig(in spec.LayoutConvertInput) error {
	switch in.Mode {
	case spec.ConvertRelayout, spec.ConvertLoad, spec.ConvertBackup, spec.ConvertPageGet:
	default:
		return spec.Reject(spec.ErrBadEnum, "mode", string(in.Mode), `"relayout", "load", "backup" or "page_get"`)
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
	if (in.Mode == spec.ConvertLoad || in.Mode == spec.ConvertBackup) && EffectiveIOBackend(in) == spec.IOBackendDirect {
		if in.IndexDevice == spec.IndexOnCUDA {
			return spec.Reject(spec.ErrDeviceIndices, "index_device", string(in.IndexDevice), `"cpu" on the direct io backend`)
		}
		if in.IndexDType == spec.IndexInt32 {
			return spec.Reject(spec.ErrIndexDType, "index_dtype", string(in.IndexDType), `"int64" on the direct io backend`)
		}
	}
	return nil
}

func checkConvertLayouts(in spec.LayoutConvertInput) error {
	relayout := in.Mode == spec.ConvertRelayout
	if err := checkHostLayout("layout", in.Layout); err != nil {
		return err
	}
	if relayout {
		if err := checkHostLayout("to", in.To); err != nil {
			return err
		}
	}
	if err := checkHostPool(in.Pool); err != nil {
		return err
	}
	if err := checkLPFPool("layout", in.Layout, in.Pool); err != nil {
		return err
	}
	if relayout {
		return checkLPFPool("to", in.To, in.Pool)
	}
	return nil
}

func checkConvertEnums(in spec.LayoutConvertInput) error {
	switch in.IOBackend {
	case "", spec.IOBackendDirect, spec.IOBackendKernel:
	default:
		return spec.Reject(spec.ErrBadEnum, "io_backend", string(in.IOBackend), `"direct" or "kernel"`)
	}
	switch in.IndexDevice {
	case "", spec.IndexOnCPU, spec.IndexOnCUDA:
	default:
		return spec.Reject(spec.ErrBadEnum, "index_device", string(in.IndexDevice), `"cpu" or "cuda"`)
	}
	switch in.IndexDType {
	case "", spec.IndexInt64, spec.IndexInt32:
	default:
		return spec.Reject(spec.ErrBadEnum, "index_dtype", string(in.IndexDType), `"int64" or "int32"`)
	}
	return nil
}

// checkLPFConfig is §7.3's LPF rows, in the table's order.
func checkLPFConfig(in spec.LayoutConvertInput) error {
	if io := EffectiveIOBackend(in); io != spec.IOBackendDirect {
		return spec.Reject(spec.ErrLPFRequiresDirect, "io_backend", string(io), `"direct" with layer_page_first`)
	}
	if in.StorageBackend != "" {
		return spec.Reject(spec.ErrLPFStorageUnsupported, "storage_backend", in.StorageBackend, `"" (none) with layer_page_first`)
	}
	if in.Mode == spec.ConvertPageGet {
		return spec.Reject(spec.ErrLPFStorageUnsupported, "mode", string(in.Mode), `not "page_get" on layer_page_first`)
	}
	if in.LPFKernelUnavailable {
		return spec.Reject(spec.ErrLPFKernelUnavailable, "lpf_kernel_unavailable", true, "false: no silent fallback to a slower copy")
	}
	return nil
}

// checkConvertModeFields rejects, in struct order, a field that in.Mode
// does not read but that is set: to (relayout only); layer, device_pages,
// device_indices, device (load and backup); host_indices (all but relayout).
func checkConvertModeFields(in spec.LayoutConvertInput) error {
	relayout, pageGet := in.Mode == spec.ConvertRelayout, in.Mode == spec.ConvertPageGet
	transfer := !relayout && !pageGet
	stray := func(field string, value any) error {
		return spec.Reject(spec.ErrFieldNotInMode, field, value, fmt.Sprintf("absent in mode %q", in.Mode))
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
func validateTransfer(lim spec.Limits, in spec.LayoutConvertInput, plan spec.ConvertPlan) (spec.ConvertPlan, error) {
	g := plan.Host
	if err := checkSize("device_pages", in.DevicePages); err != nil {
		return spec.ConvertPlan{}, err
	}
	if perPage := g.Planes() * g.L * g.PB(); spec.MulOverflows(in.DevicePages, perPage) {
		return spec.ConvertPlan{}, spec.Reject(spec.ErrOverflow, "device_pages", in.DevicePages,
			fmt.Sprintf("device_pages×planes×layers×page_size×token_bytes <= %d", int64(math.MaxInt64)))
	}
	dev := spec.HostGeometry{Layout: spec.LayerFirst, Pool: g.Pool, L: g.L, NP: in.DevicePages, P: g.P, TB: g.TB}
	if err := checkArena("device", in.Device, dev.TotalBytes(), "planes×layers×device_pages×page_size×token_bytes"); err != nil {
		return spec.ConvertPlan{}, err
	}
	plan.Device, plan.FirstLayer, plan.EndLayer = dev, 0, g.L
	if in.Layer != nil {
		if err := checkCoord("layer", *in.Layer, g.L, "layers", spec.ErrIndexOutOfRange); err != nil {
			return spec.ConvertPlan{}, err
		}
		plan.FirstLayer, plan.EndLayer = *in.Layer, *in.Layer+1
	}
	if len(in.DeviceIndices) != len(in.HostIndices) {
		return spec.ConvertPlan{}, spec.Reject(spec.ErrLengthMismatch, "device_indices", len(in.DeviceIndices),
			fmt.Sprintf("len == len(host_indices) = %d", len(in.HostIndices)))
	}
	if err := checkPageSpans("host_indices", in.HostIndices, g.P, g.NP, "pages"); err != nil {
		return spec.ConvertPlan{}, err
	}
	if err := checkPageSpans("device_indices", in.DeviceIndices, g.P, dev.NP, "device_pages"); err != nil {
		return spec.ConvertPlan{}, err
	}
	// The destination's pages must be unique: a page written twice would
	// make the result depend on copy order.
	arena, field, idx, pages, dup := "device", "device_indices", in.DeviceIndices, dev.NP, spec.ErrDuplicateDevicePage
	if in.Mode == spec.ConvertBackup {
		arena, field, idx, pages, dup = "host", "host_indices", in.HostIndices, g.NP, spec.ErrDuplicateHostPage
	}
	if err := checkUniquePages(field, idx, g.P, pages, dup); err != nil {
		return spec.ConvertPlan{}, err
	}
	plan.SortHost = g.Layout == spec.LayerFirst && EffectiveIOBackend(in) == spec.IOBackendDirect
	plan.Pages = int64(len(in.HostIndices)) / g.P
	size := dev.TotalBytes()
	if in.Mode == spec.ConvertBackup {
		size = g.TotalBytes()
	}
	return plan, lim.CheckOutput(arena, size, 1)
}

func checkArena(field string, arena []byte, want int64, expr string) error {
	if int64(len(arena)) != want {
		return spec.Reject(spec.ErrArenaSize, field, len(arena), fmt.Sprintf("len == %s = %d", expr, want))
	}
	return nil
}

// checkPageSpans checks §7.2's token→page rule on idx: its length is a
// multiple of p, and each group of p entries is exactly [k×p … k×p+p−1]
// with 0 <= k < pages. Entries are checked in order; for each, a negative
// value (ErrNegative) first, then its place in the page
// (ErrIncompletePageSpan), then, on a page's first token, the page bound
// (ErrPageOutOfRange). pagesName names the bound's field.
func checkPageSpans(field string, idx []int64, p, pages int64, pagesName string) error {
	if n := int64(len(idx)); n%p != 0 {
		return spec.Reject(spec.ErrIncompletePageSpan, field, n, fmt.Sprintf("len a multiple of page_size=%d", p))
	}
	for i, v := range idx {
		if v < 0 {
			return spec.Reject(spec.ErrNegative, spec.Idx(field, i), v, ">= 0")
		}
		o := int64(i) % p
		if o != 0 {
			if want := idx[i-int(o)] + o; v != want {
				return spec.Reject(spec.ErrIncompletePageSpan, spec.Idx(field, i), v, fmt.Sprintf("== %s[%d]+%d = %d (same page)", field, i-int(o), o, want))
			}
			continue
		}
		if v%p != 0 {
			return spec.Reject(spec.ErrIncompletePageSpan, spec.Idx(field, i), v, fmt.Sprintf("a multiple of page_size=%d (a page's first token)", p))
		}
		if v/p >= pages {
			return spec.Reject(spec.ErrPageOutOfRange, spec.Idx(field, i), v, fmt.Sprintf("page (token/page_size) < %s=%d", pagesName, pages))
		}
	}
	return nil
}

// checkUniquePages rejects, with s, the first page of idx (whole pages of
// size p, already checked by checkPageSpans against pages) that an earlier
// group already named. Its scratch is a bitset of pages bits, bounded by the
// validated arena the pages index.
func checkUniquePages(field string, idx []int64, p, pages int64, s *spec.Sentinel) error {
	seen := make([]uint64, (pages+63)/64)
	for i := 0; i < len(idx); i += int(p) {
		k := idx[i] / p
		if seen[k/64]&(1<<(k%64)) != 0 {
			return spec.Reject(s, spec.Idx(field, i), idx[i], fmt.Sprintf("a page (%d) not listed earlier in %s", k, field))
		}
		seen[k/64] |= 1 << (k % 64)
	}
	return nil
}
