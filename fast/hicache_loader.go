package fast

import (
	"math/bits"
	"slices"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// Loader is the fast prepared-load controller (docs/spec/radix-acks.md §5.2): one
// validating pass over the indices builds the coalesced runs, so each layer
// is one copy per run and buffer kind; no per-layer index work remains.
type Loader struct {
	arena     *spec.LoadArena
	fallbacks []spec.FallbackEvent
	serial    int
	// indexSlot[l] is layer l's NSA index slot, -1 without one: a table,
	// so a submit does no search.
	indexSlot []int
	// seen is a bitset over device pages (at page size 1, the finest),
	// cleared after every BeginLoad: duplicate destinations in O(1) per
	// page without a map.
	seen []uint64
	// faults re-introduces historic bugs for the bug zoo; always zero in
	// production.
	faults fault.Load
	// last is the previous op's descriptor, kept only under the
	// ReuseAcrossBatches fault.
	last *LoadDescriptor
}

// NewLoader returns a fast loader over a fresh arena for p.
func NewLoader(lim spec.Limits, p spec.LoadPools) (spec.Loader, error) {
	return newLoaderWithFaults(lim, p, fault.Load{})
}

// newLoaderWithFaults is NewLoader with the historic bugs f selects put back,
// for the bug zoo only: fault.Hooks hands it to equiv/mutants (hooks.go).
// Called with the zero value it is NewLoader.
func newLoaderWithFaults(lim spec.Limits, p spec.LoadPools, f fault.Load) (spec.Loader, error) {
	l, err := newLoader(lim, p, f)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func newLoader(lim spec.Limits, p spec.LoadPools, f fault.Load) (*Loader, error) {
	a, err := ref.NewLoadArena(lim, p)
	if err != nil {
		return nil, err
	}
	l := &Loader{arena: a, fallbacks: []spec.FallbackEvent{}, faults: f,
		indexSlot: make([]int, p.Layers), seen: make([]uint64, p.DevSlots/64+1)}
	for i := range l.indexSlot {
		l.indexSlot[i] = -1
	}
	for s, layer := range p.IndexLayers {
		l.indexSlot[layer] = s
	}
	return l, nil
}

// Arena returns the loader's memory.
func (l *Loader) Arena() *spec.LoadArena { return l.arena }

// Fallbacks returns the fallback log, in op order.
func (l *Loader) Fallbacks() []spec.FallbackEvent { return slices.Clone(l.fallbacks) }

// BeginLoad checks the backend and the indices and builds the runs in one
// pass (docs/spec/radix-acks.md §5.2 steps 1–5); a refused op changes nothing.
func (l *Loader) BeginLoad(op uint64, hostIdx, devIdx []spec.SlotIdx, ps int, b spec.LoadBackend) (spec.LoadDescriptor, error) {
	silent := l.faults.SilentFallback && b.Unavailable
	if silent {
		b.Unavailable = false
	}
	fallback, err := ref.CheckLoadBackend(b)
	if err != nil {
		return nil, err
	}
	runs, err := l.buildRuns(hostIdx, devIdx, ps)
	if err != nil {
		return nil, err
	}
	if l.faults.ReuseAcrossBatches && l.last != nil && pages(l.last.runs) == int64(len(hostIdx)/ps) {
		d := l.last
		d.op, d.next, d.open = op, 0, true
		return d, nil
	}
	if fallback {
		l.fallbacks = append(l.fallbacks, spec.FallbackEvent{OpID: op, Reason: spec.FallbackReasonUnavailable})
	}
	l.serial++
	d := &LoadDescriptor{loader: l, op: op, serial: l.serial, ps: ps, runs: runs, open: true,
		fallback: fallback, perLayer: fallback || silent || l.faults.RebuildPerLayer, builds: 1}
	if d.perLayer {
		// The per-layer path builds its runs again at every layer from the
		// caller's indices; BeginLoad's pass only validated them.
		d.hostIdx, d.devIdx, d.builds = slices.Clone(hostIdx), slices.Clone(devIdx), 0
	}
	if l.faults.ReuseAcrossBatches {
		l.last = d
	}
	return d, nil
}

func pages(runs []spec.Run) int64 {
	var n int64
	for _, r := range runs {
		n += r.Count
	}
	return n
}

// buildRuns validates the indices and coalesces their pages into runs in
// one pass. A page that fails the inline checks is handed to ref's checker,
// which names the first violation exactly as the reference does. A power
// of two page size (the usual case) divides by shifting.
func (l *Loader) buildRuns(hostIdx, devIdx []spec.SlotIdx, ps int) ([]spec.Run, error) {
	if err := ref.CheckLoadShape(hostIdx, devIdx, ps); err != nil {
		return nil, err
	}
	p := l.arena.Pools
	ps64 := int64(ps)
	hostMax, devMax := p.HostSlots-ps64, p.DevSlots-ps64
	pow2, shift, mask := ps&(ps-1) == 0, uint(bits.TrailingZeros(uint(ps))), ps64-1
	runs := make([]spec.Run, 0, 8)
	for k := range len(hostIdx) / ps {
		hs, ds := hostIdx[k*ps:(k+1)*ps], devIdx[k*ps:(k+1)*ps]
		h0, d0 := hs[0], ds[0]
		ok := h0 >= 0 && d0 >= 0 && h0 <= hostMax && d0 <= devMax
		var hp, dp int64
		if pow2 {
			ok = ok && (h0|d0)&mask == 0
			hp, dp = h0>>shift, d0>>shift
		} else {
			ok = ok && h0%ps64 == 0 && d0%ps64 == 0
			hp, dp = h0/ps64, d0/ps64
		}
		if !ok || !contiguous(hs, h0) || !contiguous(ds, d0) {
			l.clearSeen(runs)
			_, _, err := ref.CheckLoadPage(p, hostIdx, devIdx, ps, k)
			return nil, err
		}
		if w, bit := dp>>6, uint64(1)<<(dp&63); l.seen[w]&bit != 0 {
			l.clearSeen(runs)
			return nil, ref.DuplicateDestinationError(ps, k, firstWriter(devIdx, ps, k, d0), dp)
		} else {
			l.seen[w] |= bit
		}
		if last := len(runs) - 1; last >= 0 && runs[last].SrcStart+runs[last].Count == hp && runs[last].DstStart+runs[last].Count == dp {
			runs[last].Count++
		} else {
			runs = append(runs, spec.Run{SrcStart: hp, DstStart: dp, Count: 1})
		}
	}
	l.clearSeen(runs)
	return runs, nil
}

// contiguous reports whether x steps by one from x0 (x[0] == x0).
func contiguous(x []spec.SlotIdx, x0 int64) bool {
	for j := 1; j < len(x); j++ {
		if x[j] != x0+int64(j) {
			return false
		}
	}
	return true
}

// firstWriter is the page before k whose device slot is d0 (error path only).
func firstWriter(devIdx []spec.SlotIdx, ps, k int, d0 spec.SlotIdx) int {
	for j := range k {
		if devIdx[j*ps] == d0 {
			return j
		}
	}
	return -1
}

func (l *Loader) clearSeen(runs []spec.Run) {
	for _, r := range runs {
		for dp := r.DstStart; dp < r.DstStart+r.Count; dp++ {
			l.seen[dp>>6] &^= 1 << (dp & 63)
		}
	}
}

// LoadDescriptor is the fast prepared descriptor (a spec.LoadDescriptor): the runs are built once in
// BeginLoad and every layer copies run-wise.
type LoadDescriptor struct {
	loader           *Loader
	op               uint64
	serial, ps, next int
	builds           int
	open, fallback   bool
	// perLayer marks the per-layer path: the fallback (and the historic
	// per-layer rebuild), which rebuilds the runs at every layer.
	perLayer        bool
	runs            []spec.Run
	hostIdx, devIdx []spec.SlotIdx
}

// OpID returns the load op the descriptor was built for.
func (d *LoadDescriptor) OpID() uint64 { return d.op }

// Serial returns the loader's descriptor count at this descriptor's build.
func (d *LoadDescriptor) Serial() int { return d.serial }

// Runs returns a copy of the runs (empty after EndLoad).
func (d *LoadDescriptor) Runs() []spec.Run { return slices.Clone(d.runs) }

// Builds returns how often the runs were built for copying.
func (d *LoadDescriptor) Builds() int { return d.builds }

// Fallback reports whether the op runs the recorded fallback path.
func (d *LoadDescriptor) Fallback() bool { return d.fallback }

// NextLayer returns the layer the next SubmitLayer must name.
func (d *LoadDescriptor) NextLayer() int { return d.next }

// SubmitLayer copies layer l of every buffer kind, one copy per run
// (docs/spec/radix-acks.md §5.2); the per-layer path first rebuilds the runs.
func (d *LoadDescriptor) SubmitLayer(op uint64, l int) error {
	a := d.loader.arena
	if err := ref.CheckSubmit(d.open, d.op, op, l, d.next, a.Pools.Layers); err != nil {
		return err
	}
	if d.perLayer {
		runs, err := d.loader.buildRuns(d.hostIdx, d.devIdx, d.ps)
		if err != nil {
			return err // unreachable: BeginLoad accepted these indices
		}
		d.runs = runs
		d.builds++
	}
	copyRuns(a.DevKV[l], a.HostKV[l], d.runs, int64(d.ps)*a.Pools.KVBytes)
	if s := d.loader.indexSlot[l]; s >= 0 {
		copyRuns(a.DevIndex[s], a.HostIndex[s], d.runs, int64(d.ps)*a.Pools.IndexBytes)
	}
	d.next++
	return nil
}

func copyRuns(dst, src []byte, runs []spec.Run, pb int64) {
	for _, r := range runs {
		copy(dst[r.DstStart*pb:(r.DstStart+r.Count)*pb], src[r.SrcStart*pb:(r.SrcStart+r.Count)*pb])
	}
}

// EndLoad closes a descriptor whose every layer was submitted and releases
// its index arrays.
func (d *LoadDescriptor) EndLoad() error {
	if err := ref.CheckEnd(d.open, d.op, d.next, d.loader.arena.Pools.Layers); err != nil {
		return err
	}
	d.close()
	return nil
}

// Cancel closes an open descriptor on an abort path. Copies here are
// synchronous, so there is nothing in flight to wait for.
func (d *LoadDescriptor) Cancel() error {
	if !d.open {
		return ref.ClosedError(d.op)
	}
	d.close()
	return nil
}

func (d *LoadDescriptor) close() {
	d.open, d.hostIdx, d.devIdx = false, nil, nil
	if !d.loader.faults.ReuseAcrossBatches {
		d.runs = []spec.Run{}
	}
}
