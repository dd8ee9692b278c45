package ref

import "fmt"

// Validation for prepared loads (docs/spec/radix-acks.md §5.1, §5.2): pools, pages, shape, backend and rejections.

// Prepared-load sentinels (docs/spec/radix-acks.md §0.3, §5.2).
var (
	// ErrDescriptorClosed: a descriptor used after EndLoad or Cancel.
	ErrDescriptorClosed = NewSentinel("descriptor_closed", "descriptor is closed")
	// ErrDescriptorOpMismatch: a descriptor submitted for another load op
	// (reuse across batches is refused).
	ErrDescriptorOpMismatch = NewSentinel("descriptor_op_mismatch", "descriptor belongs to another load op")
	// ErrPreparedUnavailable: the prepared submit is unavailable under policy strict.
	ErrPreparedUnavailable = NewSentinel("prepared_unavailable", "prepared H2D submit unavailable")
	// errNotPageContiguous: index lists that are not whole, aligned, contiguous pages.
	errNotPageContiguous = NewSentinel("not_page_contiguous", "indices are not whole contiguous pages")
	// errDuplicateDestination: two pages of one load write one device page.
	errDuplicateDestination = NewSentinel("duplicate_destination", "device page written twice")
	// ErrEndBeforeComplete: EndLoad before every layer was submitted.
	ErrEndBeforeComplete = NewSentinel("end_before_complete", "load ended before its last layer")
	// errSlotRange: a page outside its pool [designed: the spec leaves pool bounds to the allocator].
	errSlotRange = NewSentinel("slot_range", "slot index outside the pool")
	// ErrBadLoadPools: a pool configuration that cannot hold a load (no layers,
	// empty pages, index layers not ascending in [0, layers)).
	ErrBadLoadPools = NewSentinel("bad_load_pools", "invalid load pool configuration")
)

// maxLoadLayers bounds L [designed]. The arena's byte bound (slots × bytes
// per slot) says nothing about L when the pools have no slots, yet the
// arena keeps a table per layer and every op loops over the layers; the
// bound is MaxTransferLayers, the transfer manager's, far above any model.
const maxLoadLayers = MaxTransferLayers

// validateLoadPools rejects a configuration that cannot hold a load, and
// arenas whose bytes exceed lim, in field order.
func validateLoadPools(lim Limits, p LoadPools) error {
	if p.Layers < 1 || p.Layers > maxLoadLayers {
		return Reject(ErrBadLoadPools, "layers", p.Layers, fmt.Sprintf("in [1, %d]", maxLoadLayers))
	}
	if p.HostSlots < 0 {
		return Reject(ErrNegative, "host_slots", p.HostSlots, ">= 0")
	}
	if p.DevSlots < 0 {
		return Reject(ErrNegative, "dev_slots", p.DevSlots, ">= 0")
	}
	if p.KVBytes < 1 {
		return Reject(ErrBadLoadPools, "kv_bytes", p.KVBytes, ">= 1")
	}
	if p.IndexBytes < 0 {
		return Reject(ErrNegative, "index_bytes", p.IndexBytes, ">= 0")
	}
	for i, l := range p.IndexLayers {
		lo := 0
		if i > 0 {
			lo = p.IndexLayers[i-1] + 1
		}
		if l < lo || l >= p.Layers {
			return Reject(ErrBadLoadPools, Idx("index_layers", i), l, fmt.Sprintf("in [%d, layers (%d)), strictly ascending", lo, p.Layers))
		}
	}
	if len(p.IndexLayers) > 0 && p.IndexBytes < 1 {
		return Reject(ErrBadLoadPools, "index_bytes", p.IndexBytes, ">= 1 when index_layers is set")
	}
	return p.checkSizes(lim)
}

// checkSizes bounds the bytes of both pools together (KV and index, host
// and device) by lim before anything is allocated: one small request can
// never ask for more than one output's worth of memory.
func (p LoadPools) checkSizes(lim Limits) error {
	idx := int64(len(p.IndexLayers))
	if MulOverflows(int64(p.Layers), p.KVBytes) || MulOverflows(idx, p.IndexBytes) ||
		AddOverflows(int64(p.Layers)*p.KVBytes, idx*p.IndexBytes) {
		return Reject(ErrOverflow, "kv_bytes", p.KVBytes, "layers*kv_bytes + len(index_layers)*index_bytes fits int64")
	}
	perSlot := int64(p.Layers)*p.KVBytes + idx*p.IndexBytes
	if AddOverflows(p.HostSlots, p.DevSlots) {
		return Reject(ErrOverflow, "dev_slots", p.DevSlots, "host_slots + dev_slots fits int64")
	}
	return lim.CheckOutput("host_slots+dev_slots", p.HostSlots+p.DevSlots, perSlot)
}

// CheckLoadPage checks page k of a load (docs/spec/radix-acks.md §5.2 step 2): host
// then device, each X = idx[k·ps : (k+1)·ps] must start on a page boundary
// (X[0] % ps == 0), step by one, and lie in its pool (a negative slot is
// ErrNegative). It returns the page pair. Preconditions: ps >= 1 and both
// lists hold at least (k+1)·ps entries.
func CheckLoadPage(p LoadPools, hostIdx, devIdx []SlotIdx, ps, k int) (hp, dp int64, err error) {
	if hp, err = checkPage(p.HostSlots, "host_idx", hostIdx, ps, k); err != nil {
		return 0, 0, err
	}
	dp, err = checkPage(p.DevSlots, "dev_idx", devIdx, ps, k)
	return hp, dp, err
}

func checkPage(slots int64, field string, idx []SlotIdx, ps, k int) (int64, error) {
	x := idx[k*ps : (k+1)*ps]
	if x[0] < 0 {
		return 0, Reject(ErrNegative, Idx(field, k*ps), x[0], ">= 0")
	}
	if x[0]%int64(ps) != 0 {
		return 0, Reject(errNotPageContiguous, Idx(field, k*ps), x[0], fmt.Sprintf("a multiple of page_size (%d)", ps))
	}
	for j := 1; j < ps; j++ {
		if x[j] != x[0]+int64(j) {
			return 0, Reject(errNotPageContiguous, Idx(field, k*ps+j), x[j], fmt.Sprintf("== %s[%d]+%d (%d)", field, k*ps, j, x[0]+int64(j)))
		}
	}
	if x[0] > slots-int64(ps) {
		return 0, Reject(errSlotRange, Idx(field, k*ps), x[0], fmt.Sprintf("a page inside the pool: <= %d", slots-int64(ps)))
	}
	return x[0] / int64(ps), nil
}

// CheckLoadShape checks what BeginLoad checks before any page (§5.2 step
// 1): page_size >= 1, equal lengths, whole pages.
func CheckLoadShape(hostIdx, devIdx []SlotIdx, ps int) error {
	if ps < 1 {
		return Reject(ErrInvalidPageSize, "page_size", ps, ">= 1")
	}
	if len(devIdx) != len(hostIdx) {
		return Reject(errNotPageContiguous, "dev_idx", len(devIdx), fmt.Sprintf("== len(host_idx) (%d)", len(hostIdx)))
	}
	if len(hostIdx)%ps != 0 {
		return Reject(errNotPageContiguous, "host_idx", len(hostIdx), fmt.Sprintf("a multiple of page_size (%d)", ps))
	}
	return nil
}

// DuplicateDestinationError rejects page k, whose device page dp page k0
// of the same load already writes (docs/spec/radix-acks.md §5.2 step 3).
func DuplicateDestinationError(ps, k, k0 int, dp int64) error {
	return Reject(errDuplicateDestination, Idx("dev_idx", k*ps), dp*int64(ps), fmt.Sprintf("a device page no earlier page writes (page %d is written by dev_idx[%d])", dp, k0*ps))
}

// CheckLoadBackend applies the fallback policy (docs/spec/radix-acks.md §5.2): an
// unknown policy is ErrBadEnum; an unavailable backend under strict is
// ErrPreparedUnavailable. It reports whether the load falls back.
func CheckLoadBackend(b LoadBackend) (fallback bool, err error) {
	switch b.Policy {
	case "", LoadStrict, LoadAllowFallback:
	default:
		return false, Reject(ErrBadEnum, "policy", string(b.Policy), "one of strict, allow_fallback")
	}
	if !b.Unavailable {
		return false, nil
	}
	if b.Policy != LoadAllowFallback {
		return false, Reject(ErrPreparedUnavailable, "unavailable", true, "a backend with the prepared submit under policy strict (allow_fallback runs the per-layer path)")
	}
	return true, nil
}

// layerOrderError rejects a submit of layer l when next is due.
func layerOrderError(l, next, layers int) error {
	return Reject(ErrLayerOutOfOrder, "layer", l, fmt.Sprintf("== the next layer (%d) of %d", next, layers))
}

// opMismatchError rejects a submit for op on a descriptor of op want.
func opMismatchError(op, want uint64) error {
	return Reject(ErrDescriptorOpMismatch, "op_id", op, fmt.Sprintf("== the descriptor's op_id (%d): descriptors are never reused across load ops", want))
}

// ClosedError rejects any use of a descriptor of op after EndLoad or Cancel.
func ClosedError(op uint64) error {
	return Reject(ErrDescriptorClosed, "descriptor", op, "an open descriptor (it was ended or cancelled)")
}

// endBeforeCompleteError rejects EndLoad after next of layers layers.
func endBeforeCompleteError(next, layers int) error {
	return Reject(ErrEndBeforeComplete, "layer", next, fmt.Sprintf("== layers (%d): every layer submitted before EndLoad", layers))
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
