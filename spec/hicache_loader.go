package spec

import (
	"slices"
)

// LoadPolicy says what BeginLoad does when the prepared submit is
// unavailable (docs/spec/radix-acks.md §5.2 "Fallback").
type LoadPolicy string

const (
	// LoadStrict refuses with ErrPreparedUnavailable (the production default; "" means strict).
	LoadStrict LoadPolicy = "strict"
	// LoadAllowFallback records one FallbackEvent and runs the per-layer path.
	LoadAllowFallback LoadPolicy = "allow_fallback"
)

// FallbackReasonUnavailable is the Reason of the FallbackEvent a load op
// records when the backend lacks the prepared submit.
const FallbackReasonUnavailable = "prepared H2D submit unavailable: backend lacks support"

// FallbackEvent is the explicit record of one load op that ran the
// per-layer path instead of the prepared one (docs/spec/radix-acks.md §5.2): never
// silent, exactly one per op.
type FallbackEvent struct {
	// OpID is the load op that fell back.
	OpID uint64 `json:"op_id"`
	// Reason says why.
	Reason string `json:"reason"`
}

// LoadBackend describes the backend one BeginLoad runs against.
type LoadBackend struct {
	// Unavailable is set when the backend lacks the prepared submit.
	Unavailable bool
	// Policy is what to do then; "" is LoadStrict.
	Policy LoadPolicy
}

// LoadPools configures the host and device pools a load copies between
// (docs/spec/radix-acks.md §5.2; docs/spec/transfer.md §7.2 with one allocation per layer). Each
// pool holds, per layer, Slots token slots of KVBytes bytes of MLA KV, and,
// per active index layer, Slots slots of IndexBytes bytes of NSA index.
// Page size is per load op, so the arenas are token-granular.
type LoadPools struct {
	// Layers is L, the number of layers every load op submits, >= 1.
	Layers int `json:"layers"`
	// HostSlots is the host pool's token slots per layer.
	HostSlots int64 `json:"host_slots"`
	// DevSlots is the device pool's token slots per layer.
	DevSlots int64 `json:"dev_slots"`
	// KVBytes is the MLA KV bytes per token per layer, >= 1.
	KVBytes int64 `json:"kv_bytes"`
	// IndexBytes is the NSA index bytes per token per active layer; >= 1
	// when IndexLayers is not empty.
	IndexBytes int64 `json:"index_bytes,omitzero"`
	// IndexLayers are the layers with an active index slot, strictly
	// ascending in [0, Layers); slot(l) is l's rank (docs/spec/transfer.md §6.1).
	IndexLayers []int `json:"index_layers,omitzero"`
}

// IndexSlot returns l's NSA index slot (its rank among IndexLayers) and
// whether l has one (docs/spec/transfer.md §6.1).
func (p LoadPools) IndexSlot(l int) (int, bool) {
	return slices.BinarySearch(p.IndexLayers, l)
}

// LoadArena is the memory a load copies: per layer one host and one device
// KV buffer, per active index layer one host and one device index buffer.
// Host bytes are a fixed pattern; device bytes start as a different
// pattern, so a device page no load wrote still shows its stale bytes.
type LoadArena struct {
	// Pools is the configuration the arena was built for.
	Pools LoadPools
	// HostKV[l] is host layer l's KV, HostSlots*KVBytes bytes.
	HostKV [][]byte
	// DevKV[l] is device layer l's KV, DevSlots*KVBytes bytes.
	DevKV [][]byte
	// HostIndex[s] is index slot s's host buffer, HostSlots*IndexBytes bytes.
	HostIndex [][]byte
	// DevIndex[s] is index slot s's device buffer, DevSlots*IndexBytes bytes.
	DevIndex [][]byte
}

// Clone returns a deep copy of the arena.
func (a *LoadArena) Clone() *LoadArena {
	c := &LoadArena{Pools: a.Pools}
	c.Pools.IndexLayers = slices.Clone(a.Pools.IndexLayers)
	for _, bs := range []struct{ dst, src *[][]byte }{{&c.HostKV, &a.HostKV}, {&c.DevKV, &a.DevKV}, {&c.HostIndex, &a.HostIndex}, {&c.DevIndex, &a.DevIndex}} {
		for _, b := range *bs.src {
			*bs.dst = append(*bs.dst, slices.Clone(b))
		}
	}
	return c
}

// LoadDescriptor is one load op's prepared descriptor (docs/spec/radix-acks.md §5.2).
// A refused call changes nothing.
type LoadDescriptor interface {
	// OpID is the load op the descriptor was built for.
	OpID() uint64
	// Serial is the loader's count of descriptors built, this one included:
	// a fresh descriptor per load op (D3).
	Serial() int
	// Runs are the coalesced (host page, device page, count) runs in the
	// caller's order; empty after EndLoad releases them.
	Runs() []Run
	// Builds counts how often the layer-invariant page lists were built.
	Builds() int
	// Fallback reports whether the op runs the per-layer fallback path.
	Fallback() bool
	// NextLayer is the layer the next SubmitLayer must name.
	NextLayer() int
	// SubmitLayer copies layer l of every buffer kind for op.
	SubmitLayer(op uint64, l int) error
	// EndLoad closes a descriptor whose every layer was submitted.
	EndLoad() error
	// Cancel closes the descriptor on an abort path, whatever was submitted.
	Cancel() error
}

// Loader is the load side of a HiCache controller: it owns the arena,
// builds descriptors and keeps the fallback log (docs/spec/radix-acks.md §5.1–5.2).
type Loader interface {
	// BeginLoad checks a load op and builds its descriptor; a refused op
	// records nothing.
	BeginLoad(op uint64, hostIdx, devIdx []SlotIdx, ps int, b LoadBackend) (LoadDescriptor, error)
	// Fallbacks is the fallback log, in op order.
	Fallbacks() []FallbackEvent
	// Arena is the loader's memory.
	Arena() *LoadArena
}

// NewLoaderFunc builds a loader over a fresh arena; ref.NewLoader and
// fast.NewLoader have this type.
type NewLoaderFunc func(Limits, LoadPools) (Loader, error)
