package ref

import (
	"slices"

	"github.com/kvtwin/kvtwin/spec"
)

// This file holds what every prepared-load twin shares (docs/spec/radix-acks.md §5.1,
// §5.2): the sentinels, the byte arenas the loads copy between, the shared
// validation (so both twins report byte-equal errors), the Loader and
// LoadDescriptor interfaces, and the reference implementation: a
// per-page, per-layer copy that rebuilds the page lists at every layer and
// reports the Builds the fixed prepared path must have (as CopiedUnits does
// for the radix tree).

// Arena buffer kinds, mixed into the fill pattern so that a byte copied from
// the wrong buffer, layer or slot shows.
const (
	fillHostKV = iota + 1
	fillHostIndex
	fillDevKV
	fillDevIndex
)

// NewLoadArena validates p against lim and allocates its filled arena.
func NewLoadArena(lim spec.Limits, p spec.LoadPools) (*spec.LoadArena, error) {
	if err := validateLoadPools(lim, p); err != nil {
		return nil, err
	}
	p.IndexLayers = slices.Clone(p.IndexLayers)
	a := &spec.LoadArena{Pools: p}
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

// loadPageLists checks a load's indices in the contract's order (backend,
// shape, then page by page: host page, device page, duplicate destination)
// and returns its page lists hp and dp (docs/spec/radix-acks.md §5.2 steps 1–3).
func loadPageLists(p spec.LoadPools, hostIdx, devIdx []spec.SlotIdx, ps int) (hp, dp []int64, err error) {
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

// refLoader is the reference loader.
type refLoader struct {
	arena     *spec.LoadArena
	fallbacks []spec.FallbackEvent
	serial    int
}

// NewLoader returns the reference loader over a fresh arena for p.
func NewLoader(lim spec.Limits, p spec.LoadPools) (spec.Loader, error) {
	a, err := NewLoadArena(lim, p)
	if err != nil {
		return nil, err
	}
	return &refLoader{arena: a, fallbacks: []spec.FallbackEvent{}}, nil
}

// Arena returns the loader's memory.
func (r *refLoader) Arena() *spec.LoadArena { return r.arena }

// Fallbacks returns a copy of the fallback log.
func (r *refLoader) Fallbacks() []spec.FallbackEvent { return slices.Clone(r.fallbacks) }

// BeginLoad checks the backend, then the indices, then builds the runs
// from the page lists, keeping the caller's order (§5.2 steps 1–5).
func (r *refLoader) BeginLoad(op uint64, hostIdx, devIdx []spec.SlotIdx, ps int, b spec.LoadBackend) (spec.LoadDescriptor, error) {
	fallback, err := CheckLoadBackend(b)
	if err != nil {
		return nil, err
	}
	hp, dp, err := loadPageLists(r.arena.Pools, hostIdx, devIdx, ps)
	if err != nil {
		return nil, err
	}
	if fallback {
		r.fallbacks = append(r.fallbacks, spec.FallbackEvent{OpID: op, Reason: spec.FallbackReasonUnavailable})
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
	hostIdx, devIdx  []spec.SlotIdx
	runs             []spec.Run
}

// OpID returns the load op the descriptor was built for.
func (d *refDesc) OpID() uint64 { return d.op }

// Serial returns the loader's descriptor count at this descriptor's build.
func (d *refDesc) Serial() int { return d.serial }

// Runs returns a copy of the runs (empty after EndLoad).
func (d *refDesc) Runs() []spec.Run { return slices.Clone(d.runs) }

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
	d.open, d.hostIdx, d.devIdx, d.runs = false, nil, nil, []spec.Run{}
}
