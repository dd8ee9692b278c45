package equiv

import (
	"bytes"
	"fmt"
	"slices"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// FP8StorePages is the differential spec of fp8.store_pages (docs/spec/cp-layout.md §7.4).
func FP8StorePages() *Spec[spec.FP8StorePagesInput, spec.FP8StorePagesOutput] {
	return &Spec[spec.FP8StorePagesInput, spec.FP8StorePagesOutput]{
		Op:       catalog.FP8StorePages(),
		Valid:    rapid.Custom(fp8StoreValid),
		Invalid:  rapid.Custom(fp8StoreInvalid),
		Boundary: fp8StoreBoundary(),
		Rejects: map[string]*spec.Sentinel{
			"loc-equals-num-slots": spec.ErrSlotOutOfRange,
			"duplicate-adjacent":   spec.ErrDuplicateSlot,
			"page-size-zero":       spec.ErrPagePlan,
		},
		Props: []Prop[spec.FP8StorePagesInput, spec.FP8StorePagesOutput]{
			{"materialize-after-store-is-identity", fp8StoreRoundtrip},
			{"other-slots-unchanged", fp8StoreOthersUnchanged},
			{"host-roundtrip-preserves-pool", fp8StoreHostRoundtrip},
		},
	}
}

// FP8MaterializePages is the differential spec of fp8.materialize_pages
// (docs/spec/cp-layout.md §7.4).
func FP8MaterializePages() *Spec[spec.FP8MaterializePagesInput, spec.FP8MaterializePagesOutput] {
	return &Spec[spec.FP8MaterializePagesInput, spec.FP8MaterializePagesOutput]{
		Op:       catalog.FP8MaterializePages(),
		Valid:    rapid.Custom(fp8MaterializeValid),
		Invalid:  rapid.Custom(fp8MaterializeInvalid),
		Boundary: fp8MaterializeBoundary(),
		Rejects: map[string]*spec.Sentinel{
			"slot-equals-num-slots": spec.ErrSlotOutOfRange,
			"negative-slot":         spec.ErrSlotOutOfRange,
		},
		Props: []Prop[spec.FP8MaterializePagesInput, spec.FP8MaterializePagesOutput]{
			{"raw-rows-in-slot-order", fp8MaterializeRaw},
			{"store-after-materialize-is-identity", fp8MaterializeRestore},
		},
	}
}

// fp8PoolGen draws a small pool: ps in [1,4], size in [0,12], seeded bytes.
func fp8PoolGen(t *rapid.T) spec.FP8Pool {
	ps := rapid.Int64Range(1, 4).Draw(t, "page_size")
	size := rapid.Int64Range(0, 12).Draw(t, "size")
	return spec.FP8Pool{PageSize: ps, Size: size, Rows: catalog.SeededRows(spec.FP8RowBytes, int(size+ps), rapid.Uint32().Draw(t, "pool_seed"))}
}

// fp8Slots draws distinct slots of an n-slot pool: arbitrary slots, or
// whole pages (the page-aligned multi-request store of §7.4) in any order.
func fp8Slots(t *rapid.T, ps, n int64) []int64 {
	if rapid.Bool().Draw(t, "page_aligned") {
		pages := rapid.SliceOfNDistinct(rapid.Int64Range(0, n/ps-1), 0, int(n/ps), rapid.ID[int64]).Draw(t, "pages")
		locs := []int64{}
		for _, p := range pages {
			for s := range ps {
				locs = append(locs, p*ps+s)
			}
		}
		return locs
	}
	locs := rapid.SliceOfNDistinct(rapid.Int64Range(0, n-1), 0, int(n), rapid.ID[int64]).Draw(t, "locs")
	if locs == nil {
		locs = []int64{}
	}
	return locs
}

func fp8StoreValid(t *rapid.T) spec.FP8StorePagesInput {
	p := fp8PoolGen(t)
	locs := fp8Slots(t, p.PageSize, p.Size+p.PageSize)
	return spec.FP8StorePagesInput{Pool: p, Locs: locs, Rows: catalog.SeededRows(spec.FP8RowBytes, len(locs), rapid.Uint32().Draw(t, "rows_seed"))}
}

// fp8BadPool puts one violation into a valid pool.
func fp8BadPool(t *rapid.T, p spec.FP8Pool) (spec.FP8Pool, *spec.Sentinel) {
	switch rapid.IntRange(0, 3).Draw(t, "pool_violation") {
	case 0:
		p.PageSize = rapid.SampledFrom([]int64{0, -1}).Draw(t, "bad_page_size")
		return p, spec.ErrPagePlan
	case 1:
		p.Size = -1
		return p, spec.ErrNegative
	case 2:
		p.Size++
		return p, spec.ErrRowCount
	default:
		p.Rows = spec.Rows{W: spec.FP8RowBytes - 1, B: p.Rows.B[:len(p.Rows.B)/spec.FP8RowBytes*(spec.FP8RowBytes-1)]}
		return p, spec.ErrUnsupportedDims
	}
}

func fp8StoreInvalid(t *rapid.T) Bad[spec.FP8StorePagesInput] {
	in := fp8StoreValid(t)
	n := in.Pool.Size + in.Pool.PageSize
	switch rapid.IntRange(0, 4).Draw(t, "violation") {
	case 0:
		p, want := fp8BadPool(t, in.Pool)
		in.Pool = p
		return Bad[spec.FP8StorePagesInput]{in, want}
	case 1:
		in.Rows = catalog.SeededRows(spec.FP8RowBytes, len(in.Locs)+1, 5)
		return Bad[spec.FP8StorePagesInput]{in, spec.ErrLengthMismatch}
	case 2:
		in.Rows = spec.Rows{W: 1152, B: make([]byte, 1152*len(in.Locs))}
		return Bad[spec.FP8StorePagesInput]{in, spec.ErrUnsupportedDims}
	case 3:
		if len(in.Locs) == 0 {
			in.Locs = []int64{0}
			in.Rows = catalog.SeededRows(spec.FP8RowBytes, 1, 9)
		}
		e := rapid.IntRange(0, len(in.Locs)-1).Draw(t, "bad_at")
		in.Locs = slices.Clone(in.Locs)
		in.Locs[e] = rapid.SampledFrom([]int64{-1, n, n + 7}).Draw(t, "bad_loc")
		return Bad[spec.FP8StorePagesInput]{in, spec.ErrSlotOutOfRange}
	default:
		if len(in.Locs) < 2 {
			in.Locs = []int64{0, 0}
			in.Rows = catalog.SeededRows(spec.FP8RowBytes, 2, 11)
			return Bad[spec.FP8StorePagesInput]{in, spec.ErrDuplicateSlot}
		}
		j := rapid.IntRange(1, len(in.Locs)-1).Draw(t, "dup_at")
		i := rapid.IntRange(0, j-1).Draw(t, "dup_of")
		in.Locs = slices.Clone(in.Locs)
		in.Locs[j] = in.Locs[i]
		return Bad[spec.FP8StorePagesInput]{in, spec.ErrDuplicateSlot}
	}
}

func fp8StoreBoundary() []Case[spec.FP8StorePagesInput] {
	pool := func(ps, size int64) spec.FP8Pool {
		return spec.FP8Pool{PageSize: ps, Size: size, Rows: catalog.SeededRows(spec.FP8RowBytes, int(size+ps), 3)}
	}
	rows := func(n int) spec.Rows { return catalog.SeededRows(spec.FP8RowBytes, n, 7) }
	return []Case[spec.FP8StorePagesInput]{
		{"empty-store", spec.FP8StorePagesInput{Pool: pool(2, 4), Locs: []int64{}, Rows: rows(0)}},
		{"size-zero-padding-page-only", spec.FP8StorePagesInput{Pool: pool(3, 0), Locs: []int64{2, 0, 1}, Rows: rows(3)}},
		{"ps1-last-slot", spec.FP8StorePagesInput{Pool: pool(1, 5), Locs: []int64{5}, Rows: rows(1)}},
		// bs=2 page-aligned: request 0 on page 2, request 1 on pages 1 and 3.
		{"bs2-page-aligned", spec.FP8StorePagesInput{Pool: pool(2, 6), Locs: []int64{4, 5, 2, 3, 6, 7}, Rows: rows(6)}},
		{"whole-pool", spec.FP8StorePagesInput{Pool: pool(2, 2), Locs: []int64{3, 2, 1, 0}, Rows: rows(4)}},
		{"loc-equals-num-slots", spec.FP8StorePagesInput{Pool: pool(2, 2), Locs: []int64{4}, Rows: rows(1)}},
		{"duplicate-adjacent", spec.FP8StorePagesInput{Pool: pool(2, 2), Locs: []int64{1, 1}, Rows: rows(2)}},
		{"page-size-zero", spec.FP8StorePagesInput{Pool: spec.FP8Pool{PageSize: 0, Size: 2, Rows: catalog.SeededRows(spec.FP8RowBytes, 2, 3)}, Locs: []int64{}, Rows: rows(0)}},
	}
}

// fp8StoreRoundtrip is P7.1: materializing the stored slots returns the
// stored rows byte for byte.
func fp8StoreRoundtrip(lim spec.Limits, in spec.FP8StorePagesInput, out spec.FP8StorePagesOutput) error {
	m, err := ref.FP8MaterializePages(lim, spec.FP8MaterializePagesInput{Pool: out.Pool, Slots: in.Locs})
	if err != nil {
		return err
	}
	return rowsEqual("materialize(store(rows))", m.Rows, in.Rows)
}

// fp8StoreOthersUnchanged is P7.1's second half: the pool keeps its shape
// and every slot not in locs keeps its bytes.
func fp8StoreOthersUnchanged(_ spec.Limits, in spec.FP8StorePagesInput, out spec.FP8StorePagesOutput) error {
	if out.Pool.PageSize != in.Pool.PageSize || out.Pool.Size != in.Pool.Size || out.Pool.Rows.N() != in.Pool.Rows.N() {
		return fmt.Errorf("pool changed shape: %d/%d/%d rows, want %d/%d/%d", out.Pool.PageSize, out.Pool.Size, out.Pool.Rows.N(), in.Pool.PageSize, in.Pool.Size, in.Pool.Rows.N())
	}
	for s := range in.Pool.Rows.N() {
		if slices.Contains(in.Locs, int64(s)) {
			continue
		}
		if !bytes.Equal(out.Pool.Rows.Row(s), in.Pool.Rows.Row(s)) {
			return fmt.Errorf("slot %d (not stored) changed", s)
		}
	}
	return nil
}

func fp8MaterializeValid(t *rapid.T) spec.FP8MaterializePagesInput {
	p := fp8PoolGen(t)
	n := p.Size + p.PageSize
	var slots []int64
	if rapid.Bool().Draw(t, "distinct") {
		slots = fp8Slots(t, p.PageSize, n)
	} else {
		slots = rapid.SliceOfN(rapid.Int64Range(0, n-1), 0, 24).Draw(t, "slots")
	}
	if slots == nil {
		slots = []int64{}
	}
	return spec.FP8MaterializePagesInput{Pool: p, Slots: slots}
}

func fp8MaterializeInvalid(t *rapid.T) Bad[spec.FP8MaterializePagesInput] {
	in := fp8MaterializeValid(t)
	n := in.Pool.Size + in.Pool.PageSize
	if rapid.Bool().Draw(t, "pool_violation_first") {
		p, want := fp8BadPool(t, in.Pool)
		in.Pool = p
		return Bad[spec.FP8MaterializePagesInput]{in, want}
	}
	in.Slots = append(slices.Clone(in.Slots), 0)
	e := rapid.IntRange(0, len(in.Slots)-1).Draw(t, "bad_at")
	in.Slots[e] = rapid.SampledFrom([]int64{-1, n, n + 5}).Draw(t, "bad_slot")
	return Bad[spec.FP8MaterializePagesInput]{in, spec.ErrSlotOutOfRange}
}

func fp8MaterializeBoundary() []Case[spec.FP8MaterializePagesInput] {
	pool := spec.FP8Pool{PageSize: 2, Size: 4, Rows: catalog.SeededRows(spec.FP8RowBytes, 6, 13)}
	return []Case[spec.FP8MaterializePagesInput]{
		{"no-slots", spec.FP8MaterializePagesInput{Pool: pool, Slots: []int64{}}},
		{"bs2-flattened-page-table", spec.FP8MaterializePagesInput{Pool: pool, Slots: []int64{2, 3, 4, 0, 1}}},
		{"repeats", spec.FP8MaterializePagesInput{Pool: pool, Slots: []int64{5, 5, 0, 5}}},
		{"slot-equals-num-slots", spec.FP8MaterializePagesInput{Pool: pool, Slots: []int64{1, 6}}},
		{"negative-slot", spec.FP8MaterializePagesInput{Pool: pool, Slots: []int64{-1}}},
	}
}

// fp8MaterializeRaw: row i of the output is the raw pool row at slots[i].
func fp8MaterializeRaw(_ spec.Limits, in spec.FP8MaterializePagesInput, out spec.FP8MaterializePagesOutput) error {
	if out.Rows.W != spec.FP8RowBytes || out.Rows.N() != len(in.Slots) {
		return fmt.Errorf("%d rows of %d B, want %d of %d B", out.Rows.N(), out.Rows.W, len(in.Slots), spec.FP8RowBytes)
	}
	for i, s := range in.Slots {
		if !bytes.Equal(out.Rows.Row(i), in.Pool.Rows.Row(int(s))) {
			return fmt.Errorf("row %d is not the pool row at slot %d", i, s)
		}
	}
	return nil
}

// fp8MaterializeRestore: for distinct slots, storing the materialized rows
// back at their slots leaves the pool unchanged (P7.1 read from the other
// side).
func fp8MaterializeRestore(lim spec.Limits, in spec.FP8MaterializePagesInput, out spec.FP8MaterializePagesOutput) error {
	seen := map[int64]bool{}
	for _, s := range in.Slots {
		if seen[s] {
			return nil
		}
		seen[s] = true
	}
	st, err := ref.FP8StorePages(lim, spec.FP8StorePagesInput{Pool: in.Pool, Locs: in.Slots, Rows: out.Rows})
	if err != nil {
		return err
	}
	return rowsEqual("store(materialize(slots))", st.Pool.Rows, in.Pool.Rows)
}

// fp8StoreHostRoundtrip is P7.3 on every store result: the pool's whole
// pages, as two device layers (the pool, and its bytes inverted so that a
// layer mix-up shows), backed up device→host into reversed host pages of
// an arena pre-filled with other bytes, then loaded host→device into a
// zeroed device arena, come back byte for byte — under every host layout.
func fp8StoreHostRoundtrip(lim spec.Limits, _ spec.FP8StorePagesInput, out spec.FP8StorePagesOutput) error {
	return fp8HostRoundtrip(lim, out.Pool)
}

func fp8HostRoundtrip(lim spec.Limits, pool spec.FP8Pool) error {
	ps := pool.PageSize
	dp := int64(pool.Rows.N()) / ps
	np := dp + 1
	layer := pool.Rows.B[:dp*ps*spec.FP8RowBytes]
	device := append(bytes.Clone(layer), layer...)
	for i := len(layer); i < len(device); i++ {
		device[i] = ^device[i]
	}
	devIdx, hostIdx := []int64{}, []int64{}
	for p := range dp {
		for s := range ps {
			devIdx = append(devIdx, p*ps+s)
			hostIdx = append(hostIdx, (np-1-p)*ps+s)
		}
	}
	for _, hl := range []spec.HostLayout{spec.LayerFirst, spec.PageFirst, spec.PageFirstDirect, spec.LayerPageFirst} {
		base := spec.LayoutConvertInput{Layout: hl, Pool: spec.HostPoolMLA, Layers: 2, Pages: np, PageSize: ps, TokenBytes: spec.FP8RowBytes,
			DevicePages: dp, HostIndices: hostIdx, DeviceIndices: devIdx}
		d2h := base
		d2h.Mode, d2h.Device = spec.ConvertBackup, device
		d2h.Host = bytes.Repeat([]byte{0xC3}, int(2*np*ps*spec.FP8RowBytes))
		host, err := ref.LayoutConvert(lim, d2h)
		if err != nil {
			return fmt.Errorf("%s backup: %w", hl, err)
		}
		// The backup really wrote: slot 0's row (layer 0, device page 0 →
		// host page np-1) is somewhere in the host arena. Host page 0 is
		// never a destination and keeps the fill.
		if !bytes.Contains(host.Arena, device[:spec.FP8RowBytes]) {
			return fmt.Errorf("%s backup: slot 0's bytes are nowhere in the host arena", hl)
		}
		h2d := base
		h2d.Mode, h2d.Host, h2d.Device = spec.ConvertLoad, host.Arena, make([]byte, len(device))
		back, err := ref.LayoutConvert(lim, h2d)
		if err != nil {
			return fmt.Errorf("%s load: %w", hl, err)
		}
		if !bytes.Equal(back.Arena, device) {
			return fmt.Errorf("%s: device→host→device changed the pool's pages", hl)
		}
	}
	return nil
}
