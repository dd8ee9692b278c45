package ref

import (
	"fmt"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for prepared loads (docs/spec/radix-acks.md §5.1, §5.2): pools, pages, shape, backend and rejections.

// Prepared-load sentinels (docs/spec/radix-acks.md §0.3, §5.2).
var (
	// errNotPageContiguous: index lists that are not whole, aligned, contiguous pages.
	errNotPageContiguous = spec.NewSentinel("not_page_contiguous", "indices are not whole contiguous pages")
	// errDuplicateDestination: two pages of one load write one device page.
	errDuplicateDestination = spec.NewSentinel("duplicate_destination", "device page written twice")
	// errSlotRange: a page outside its pool [designed: the spec leaves pool bounds to the allocator].
	errSlotRange = spec.NewSentinel("slot_range", "slot index outside the pool")
)

// maxLoadLayers bounds L [designed]. The arena's byte bound (slots × bytes
// per slot) says nothing about L when the pools have no slots, yet the
// arena keeps a table per layer and every op loops over the layers; the
// bound is MaxTransferLayers, the transfer manager's, far above any model.
const maxLoadLayers = spec.MaxTransferLayers

// validateLoadPools rejects a configuration that cannot hold a load, and
// arenas whose bytes exceed lim, in field order.
func validateLoadPools(lim spec.Limits, p spec.LoadPools) error {
	if p.Layers < 1 || p.Layers > maxLoadLayers {
		return spec.Reject(spec.ErrBadLoadPools, "layers", p.Layers, fmt.Sprintf("in [1, %d]", maxLoadLayers))
	}
	if p.HostSlots < 0 {
		return spec.Reject(spec.ErrNegative, "host_slots", p.HostSlots, ">= 0")
	}
	if p.DevSlots < 0 {
		return spec.Reject(spec.ErrNegative, "dev_slots", p.DevSlots, ">= 0")
	}
	if p.KVBytes < 1 {
		return spec.Reject(spec.ErrBadLoadPools, "kv_bytes", p.KVBytes, ">= 1")
	}
	if p.IndexBytes < 0 {
		return spec.Reject(spec.ErrNegative, "index_bytes", p.IndexBytes, ">= 0")
	}
	for i, l := range p.IndexLayers {
		lo := 0
		if i > 0 {
			lo = p.IndexLayers[i-1] + 1
		}
		if l < lo || l >= p.Layers {
			return spec.Reject(spec.ErrBadLoadPools, spec.Idx("index_layers", i), l, fmt.Sprintf("in [%d, layers (%d)), strictly ascending", lo, p.Layers))
		}
	}
	if len(p.IndexLayers) > 0 && p.IndexBytes < 1 {
		return spec.Reject(spec.ErrBadLoadPools, "index_bytes", p.IndexBytes, ">= 1 when index_layers is set")
	}
	return p.CheckSizes(lim)
}

// CheckLoadPage checks page k of a load (docs/spec/radix-acks.md §5.2 step 2): host
// then device, each X = idx[k·ps : (k+1)·ps] must start on a page boundary
// (X[0] % ps == 0), step by one, and lie in its pool (a negative slot is
// ErrNegative). It returns the page pair. Preconditions: ps >= 1 and both
// lists hold at least (k+1)·ps entries.
func CheckLoadPage(p spec.LoadPools, hostIdx, devIdx []spec.SlotIdx, ps, k int) (hp, dp int64, err error) {
	if hp, err = checkPage(p.HostSlots, "host_idx", hostIdx, ps, k); err != nil {
		return 0, 0, err
	}
	dp, err = checkPage(p.DevSlots, "dev_idx", devIdx, ps, k)
	return hp, dp, err
}

func checkPage(slots int64, field string, idx []spec.SlotIdx, ps, k int) (int64, error) {
	x := idx[k*ps : (k+1)*ps]
	if x[0] < 0 {
		return 0, spec.Reject(spec.ErrNegative, spec.Idx(field, k*ps), x[0], ">= 0")
	}
	if x[0]%int64(ps) != 0 {
		return 0, spec.Reject(errNotPageContiguous, spec.Idx(field, k*ps), x[0], fmt.Sprintf("a multiple of page_size (%d)", ps))
	}
	for j := 1; j < ps; j++ {
		if x[j] != x[0]+int64(j) {
			return 0, spec.Reject(errNotPageContiguous, spec.Idx(field, k*ps+j), x[j], fmt.Sprintf("== %s[%d]+%d (%d)", field, k*ps, j, x[0]+int64(j)))
		}
	}
	if x[0] > slots-int64(ps) {
		return 0, spec.Reject(errSlotRange, spec.Idx(field, k*ps), x[0], fmt.Sprintf("a page inside the pool: <= %d", slots-int64(ps)))
	}
	return x[0] / int64(ps), nil
}

// CheckLoadShape checks what BeginLoad checks before any page (§5.2 step
// 1): page_size >= 1, equal lengths, whole pages.
func CheckLoadShape(hostIdx, devIdx []spec.SlotIdx, ps int) error {
	if ps < 1 {
		return spec.Reject(spec.ErrInvalidPageSize, "page_size", ps, ">= 1")
	}
	if len(devIdx) != len(hostIdx) {
		return spec.Reject(errNotPageContiguous, "dev_idx", len(devIdx), fmt.Sprintf("== len(host_idx) (%d)", len(hostIdx)))
	}
	if len(hostIdx)%ps != 0 {
		return spec.Reject(errNotPageContiguous, "host_idx", len(hostIdx), fmt.Sprintf("a multiple of page_size (%d)", ps))
	}
	return nil
}

// DuplicateDestinationError rejects page k, whose device page dp page k0
// of the same load already writes (docs/spec/radix-acks.md §5.2 step 3).
func DuplicateDestinationError(ps, k, k0 int, dp int64) error {
	return spec.Reject(errDuplicateDestination, spec.Idx("dev_idx", k*ps), dp*int64(ps), fmt.Sprintf("a device page no earlier page writes (page %d is written by dev_idx[%d])", dp, k0*ps))
}

// CheckLoadBackend applies the fallback policy (docs/spec/radix-acks.md §5.2): an
// unknown policy is ErrBadEnum; an unavailable backend under strict is
// ErrPreparedUnavailable. It reports whether the load falls back.
func CheckLoadBackend(b spec.LoadBackend) (fallback bool, err error) {
	switch b.Policy {
	case "", spec.LoadStrict, spec.LoadAllowFallback:
	default:
		return false, spec.Reject(spec.ErrBadEnum, "policy", string(b.Policy), "one of strict, allow_fallback")
	}
	if !b.Unavailable {
		return false, nil
	}
	if b.Policy != spec.LoadAllowFallback {
		return false, spec.Reject(spec.ErrPreparedUnavailable, "unavailable", true, "a backend with the prepared submit under policy strict (allow_fallback runs the per-layer path)")
	}
	return true, nil
}

// layerOrderError rejects a submit of layer l when next is due.
func layerOrderError(l, next, layers int) error {
	return spec.Reject(spec.ErrLayerOutOfOrder, "layer", l, fmt.Sprintf("== the next layer (%d) of %d", next, layers))
}

// opMismatchError rejects a submit for op on a descriptor of op want.
func opMismatchError(op, want uint64) error {
	return spec.Reject(spec.ErrDescriptorOpMismatch, "op_id", op, fmt.Sprintf("== the descriptor's op_id (%d): descriptors are never reused across load ops", want))
}

// ClosedError rejects any use of a descriptor of op after EndLoad or Cancel.
func ClosedError(op uint64) error {
	return spec.Reject(spec.ErrDescriptorClosed, "descriptor", op, "an open descriptor (it was ended or cancelled)")
}

// endBeforeCompleteError rejects EndLoad after next of layers layers.
func endBeforeCompleteError(next, layers int) error {
	return spec.Reject(spec.ErrEndBeforeComplete, "layer", next, fmt.Sprintf("== layers (%d): every layer submitted before EndLoad", layers))
}

// CheckSubmit is SubmitLayer's check order (docs/spec/radix-acks.md §5.2): closed,
// then op mismatch, then layer order.
func CheckSubmit(open bool, descOp, op uint64, l, next, layers int) error {
	switch {
	case !open:
		return ClosedError(descOp)
	case op != descOp:
		return opMismatchError(op, descOp)
	case l != next || l >= layers:
		return layerOrderError(l, next, layers)
	}
	return nil
}

// CheckEnd is EndLoad's check order (docs/spec/radix-acks.md §5.2).
func CheckEnd(open bool, descOp uint64, next, layers int) error {
	if !open {
		return ClosedError(descOp)
	}
	if next < layers {
		return endBeforeCompleteError(next, layers)
	}
	return nil
}
