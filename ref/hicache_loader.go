package ref

import "slices"

// This file holds what every prepared-load twin shares (docs/spec/radix-acks.md §5.1,
// §5.2): the sentinels, the byte arenas the loads copy between, the shared
// validation (so both twins report byte-equal errors), the Loader and
// LoadDescriptor interfaces, and the reference implementation: a
// per-page, per-layer copy that rebuilds the page lists at every layer and
// reports the Builds the fixed prepared path must have (as CopiedUnits does
// for the radix tree).

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

// Arena buffer kinds, mixed into the fill pattern so that a byte copied from
// the wrong buffer, layer or slot shows.
const (
	fillHostKV = iota + 1
	fillHostIndex
	fillDevKV
	fillDevIndex
)

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

// NewLoadArena validates p against lim and allocates its filled arena.
func NewLoadArena(lim Limits, p LoadPools) (*LoadArena, error) {
	if err := validateLoadPools(lim, p); err != nil {
		return nil, err
	}
	p.IndexLayers = slices.Clone(p.IndexLayers)
	a := &LoadArena{Pools: p}
	for l := range p.Layers {
		a.HostKV = append(a.HostKV, filled(fillHostKV, l, p.HostSlots*p.KVBytes))
		a.DevKV = append(a.DevKV, filled(fillDevKV, l, p.DevSlots*p.KVBytes))
	}
	for s := range p.IndexLayers {
		a.HostIndex = append(a.HostIndex, filled(fillHostIndex, s, p.HostSlots*p.IndexBytes))
		a.DevIndex = append(a.DevIndex, filled(fillDevIndex, s, p.DevSlots*p.IndexBytes))
	}
	return a, nil
}

// filled returns n bytes of the pattern of (kind, layer): a multiplicative
// hash of the offset, so neighbouring slots and layers differ.
func filled(kind, layer int, n int64) []byte {
	b := make([]byte, n)
	seed := uint32(kind)*0x9E3779B1 ^ uint32(layer)*0x85EBCA77
	for i := range b {
		b[i] = byte((uint32(i)*0x27D4EB2F ^ seed) >> 24)
	}
	return b
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

// loadPageLists checks a load's indices in the contract's order (backend,
// shape, then page by page: host page, device page, duplicate destination)
// and returns its page lists hp and dp (docs/spec/radix-acks.md §5.2 steps 1–3).
func loadPageLists(p LoadPools, hostIdx, devIdx []SlotIdx, ps int) (hp, dp []int64, err error) {
	if err := CheckLoadShape(hostIdx, devIdx, ps); err != nil {
		return nil, nil, err
	}
	n := len(hostIdx) / ps
	hp, dp = make([]int64, n), make([]int64, n)
	first := map[int64]int{}
	for k := range n {
		if hp[k], dp[k], err = CheckLoadPage(p, hostIdx, devIdx, ps, k); err != nil {
			return nil, nil, err
		}
		if k0, dup := first[dp[k]]; dup {
			return nil, nil, DuplicateDestinationError(ps, k, k0, dp[k])
		}
		first[dp[k]] = k
	}
	return hp, dp, nil
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

// refLoader is the reference loader.
type refLoader struct {
	arena     *LoadArena
	fallbacks []FallbackEvent
	serial    int
}

// NewLoader returns the reference loader over a fresh arena for p.
func NewLoader(lim Limits, p LoadPools) (Loader, error) {
	a, err := NewLoadArena(lim, p)
	if err != nil {
		return nil, err
	}
	return &refLoader{arena: a, fallbacks: []FallbackEvent{}}, nil
}

// Arena returns the loader's memory.
func (r *refLoader) Arena() *LoadArena { return r.arena }

// Fallbacks returns a copy of the fallback log.
func (r *refLoader) Fallbacks() []FallbackEvent { return slices.Clone(r.fallbacks) }

// BeginLoad checks the backend, then the indices, then builds the runs
// from the page lists, keeping the caller's order (§5.2 steps 1–5).
func (r *refLoader) BeginLoad(op uint64, hostIdx, devIdx []SlotIdx, ps int, b LoadBackend) (LoadDescriptor, error) {
	fallback, err := CheckLoadBackend(b)
	if err != nil {
		return nil, err
	}
	hp, dp, err := loadPageLists(r.arena.Pools, hostIdx, devIdx, ps)
	if err != nil {
		return nil, err
	}
	if fallback {
		r.fallbacks = append(r.fallbacks, FallbackEvent{OpID: op, Reason: FallbackReasonUnavailable})
	}
	r.serial++
	return &refDesc{
		loader: r, op: op, serial: r.serial, ps: ps, fallback: fallback, open: true,
		hostIdx: slices.Clone(hostIdx), devIdx: slices.Clone(devIdx), runs: groupRuns(hp, dp),
	}, nil
}

// refDesc is the reference descriptor. It keeps the caller's indices and
// rebuilds the page lists at every layer, copying page by page; Builds
// reports the contract: 1 on the prepared path, one per submitted layer on
// the fallback path.
type refDesc struct {
	loader           *refLoader
	op               uint64
	serial, ps, next int
	fallback, open   bool
	hostIdx, devIdx  []SlotIdx
	runs             []Run
}

// OpID returns the load op the descriptor was built for.
func (d *refDesc) OpID() uint64 { return d.op }

// Serial returns the loader's descriptor count at this descriptor's build.
func (d *refDesc) Serial() int { return d.serial }

// Runs returns a copy of the runs (empty after EndLoad).
func (d *refDesc) Runs() []Run { return slices.Clone(d.runs) }

// Fallback reports whether the op runs the recorded fallback path.
func (d *refDesc) Fallback() bool { return d.fallback }

// NextLayer returns the layer the next SubmitLayer must name.
func (d *refDesc) NextLayer() int { return d.next }

// Builds is the contract's count: 1 on the prepared path, whatever L is
// (the reference itself rebuilds every layer); one per submitted layer on
// the fallback path.
func (d *refDesc) Builds() int {
	if d.fallback {
		return d.next
	}
	return 1
}

// SubmitLayer rebuilds the page lists and copies each page of layer l, KV
// always and the index buffer when l has an index slot.
func (d *refDesc) SubmitLayer(op uint64, l int) error {
	a := d.loader.arena
	if err := CheckSubmit(d.open, d.op, op, l, d.next, a.Pools.Layers); err != nil {
		return err
	}
	hp, dp, err := loadPageLists(a.Pools, d.hostIdx, d.devIdx, d.ps)
	if err != nil {
		return err // unreachable: BeginLoad accepted these indices
	}
	s, hasIndex := a.Pools.IndexSlot(l)
	for k := range hp {
		copyPage(a.DevKV[l], a.HostKV[l], dp[k], hp[k], int64(d.ps)*a.Pools.KVBytes)
		if hasIndex {
			copyPage(a.DevIndex[s], a.HostIndex[s], dp[k], hp[k], int64(d.ps)*a.Pools.IndexBytes)
		}
	}
	d.next++
	return nil
}

func copyPage(dst, src []byte, dp, hp, pageBytes int64) {
	copy(dst[dp*pageBytes:(dp+1)*pageBytes], src[hp*pageBytes:(hp+1)*pageBytes])
}

// EndLoad closes the descriptor and releases its index lists.
func (d *refDesc) EndLoad() error {
	if err := CheckEnd(d.open, d.op, d.next, d.loader.arena.Pools.Layers); err != nil {
		return err
	}
	d.close()
	return nil
}

// Cancel closes an open descriptor whatever was submitted; there is no
// in-flight copy to synchronize with in the reference.
func (d *refDesc) Cancel() error {
	if !d.open {
		return ClosedError(d.op)
	}
	d.close()
	return nil
}

func (d *refDesc) close() {
	d.open, d.hostIdx, d.devIdx, d.runs = false, nil, nil, []Run{}
}
