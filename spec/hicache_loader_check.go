package spec

var (
	// ErrDescriptorClosed: a descriptor used after EndLoad or Cancel.
	ErrDescriptorClosed = NewSentinel("descriptor_closed", "descriptor is closed")
	// ErrDescriptorOpMismatch: a descriptor submitted for another load op
	// (reuse across batches is refused).
	ErrDescriptorOpMismatch = NewSentinel("descriptor_op_mismatch", "descriptor belongs to another load op")
	// ErrPreparedUnavailable: the prepared submit is unavailable under policy strict.
	ErrPreparedUnavailable = NewSentinel("prepared_unavailable", "prepared H2D submit unavailable")
	// ErrEndBeforeComplete: EndLoad before every layer was submitted.
	ErrEndBeforeComplete = NewSentinel("end_before_complete", "load ended before its last layer")
	// ErrBadLoadPools: a pool configuration that cannot hold a load (no layers,
	// empty pages, index layers not ascending in [0, layers)).
	ErrBadLoadPools = NewSentinel("bad_load_pools", "invalid load pool configuration")
)

// checkSizes bounds the bytes of both pools together (KV and index, host
// and device) by lim before anything is allocated: one small request can
// never ask for more than one output's worth of memory.
func (p LoadPools) CheckSizes(lim Limits) error {
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
