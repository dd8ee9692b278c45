package equiv

import (
	"bytes"
	"fmt"
	"slices"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
)

// FP8StorePages is the differential spec of fp8.store_pages (docs/spec/cp-layout.md §7.4).
func FP8StorePages() *Spec[ref.FP8StorePagesInput, ref.FP8StorePagesOutput] {
	return &Spec[ref.FP8StorePagesInput, ref.FP8StorePagesOutput]{
		Op:       catalog.FP8StorePages(),
		Valid:    rapid.Custom(fp8StoreValid),
		Invalid:  rapid.Custom(fp8StoreInvalid),
		Boundary: fp8StoreBoundary(),
		Rejects: map[string]*ref.Sentinel{
			"loc-equals-num-slots": ref.ErrSlotOutOfRange,
			"duplicate-adjacent":   ref.ErrDuplicateSlot,
			"page-size-zero":       ref.ErrPagePlan,
		},
		Props: []Prop[ref.FP8StorePagesInput, ref.FP8StorePagesOutput]{
			{"materialize-after-store-is-identity", fp8StoreRoundtrip},
			{"other-slots-unchanged", fp8StoreOthersUnchanged},
			{"host-roundtrip-preserves-pool", fp8StoreHostRoundtrip},
		},
	}
}

// FP8MaterializePages is the differential spec of fp8.materialize_pages
// (docs/spec/cp-layout.md §7.4).
func FP8MaterializePages() *Spec[ref.FP8MaterializePagesInput, ref.FP8MaterializePagesOutput] {
	return &Spec[ref.FP8MaterializePagesInput, ref.FP8MaterializePagesOutput]{
		Op:       catalog.FP8MaterializePages(),
		Valid:    rapid.Custom(fp8MaterializeValid),
		Invalid:  rapid.Custom(fp8MaterializeInvalid),
		Boundary: fp8MaterializeBoundary(),
		Rejects: map[string]*ref.Sentinel{
			"slot-equals-num-slots": ref.ErrSlotOutOfRange,
			"negative-slot":         ref.ErrSlotOutOfRange,
		},
		Props: []Prop[ref.FP8MaterializePagesInput, ref.FP8MaterializePagesOutput]{
			{"raw-rows-in-slot-order", fp8MaterializeRaw},
			{"store-after-materialize-is-identity", fp8MaterializeRestore},
		},
	}
}

// fp8PoolGen draws a small pool: ps in [1,4], size in [0,12], seeded bytes.
func fp8PoolGen(t *rapid.T) ref.FP8Pool {
	ps := rapid.Int64Range(1, 4).Draw(t, "page_size")
	size := rapid.Int64Range(0, 12).Draw(t, "size")
	return ref.FP8Pool{PageSize: ps, Size: size, Rows: catalog.SeededRows(ref.FP8RowBytes, int(size+ps), rapid.Uint32().Draw(t, "pool_seed"))}
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

func fp8StoreValid(t *rapid.T) ref.FP8StorePagesInput {
	p := fp8PoolGen(t)
	locs := fp8Slots(t, p.PageSize, p.Size+p.PageSize)
	return ref.FP8StorePagesInput{Pool: p, Locs: locs, Rows: catalog.SeededRows(ref.FP8RowBytes, len(locs), rapid.Uint32().Draw(t, "rows_seed"))}
}

// fp8BadPool puts one violation into a valid pool.
func fp8BadPool(t *rapid.T, p ref.FP8Pool) (ref.FP8Pool, *ref.Sentinel) {
	switch rapid.IntRange(0, 3).Draw(t, "pool_violation") {
	case 0:
		p.PageSize = rapid.SampledFrom([]int64{0, -1}).Draw(t, "bad_page_size")
		return p, ref.ErrPagePlan
	case 1:
		p.Size = -1
		return p, ref.ErrNegative
	case 2:
		p.Size++
		return p, ref.ErrRowCount
	default:
		p.Rows = ref.Rows{W: ref.FP8RowBytes - 1, B: p.Rows.B[:len(p.Rows.B)/ref.FP8RowBytes*(ref.FP8RowBytes-1)]}
		return p, ref.ErrUnsupportedDims
	}
}

func fp8StoreInvalid(t *rapid.T) Bad[ref.FP8StorePagesInput] {
	in := fp8StoreValid(t)
	n := in.Pool.Size + in.Pool.PageSize
	switch rapid.IntRange(0, 4).Draw(t, "violation") {
	case 0:
		p, want := fp8BadPool(t, in.Pool)
		in.Pool = p
		return Bad[ref.FP8StorePagesInput]{in, want}
	case 1:
		in.Rows = catalog.SeededRows(ref.FP8RowBytes, len(in.Locs)+1, 5)
		return Bad[ref.FP8StorePagesInput]{in, ref.ErrLengthMismatch}
	case 2:
		in.Rows = ref.Rows{W: 1152, B: make([]byte, 1152*len(in.Locs))}
		return Bad[ref.FP8StorePagesInput]{in, ref.ErrUnsupportedDims}
	case 3:
		if len(in.Locs) == 0 {
			in.Locs = []int64{0}
			in.Rows = catalog.SeededRows(ref.FP8RowBytes, 1, 9)
		}
		e := rapid.IntRange(0, len(in.Locs)-1).Draw(t, "bad_at")
		in.Locs = slices.Clone(in.Locs)
		in.Locs[e] = rapid.SampledFrom([]int64{-1, n, n + 7}).Draw(t, "bad_loc")
		return Bad[ref.FP8StorePagesInput]{in, ref.ErrSlotOutOfRange}
	default:
		if len(in.Locs) < 2 {
			in.Locs = []int64{0, 0}
			in.Rows = catalog.SeededRows(ref.FP8RowBytes, 2, 11)
			return Bad[ref.FP8StorePagesInput]{in, ref.ErrDuplicateSlot}
		}
		j := rapid.IntRange(1, len(in.Locs)-1).Draw(t, "dup_at")
		i := rapid.IntRange(0, j-1).Draw(t, "dup_of")
		in.Locs = slices.Clone(in.Locs)
		in.Locs[j] = in.Locs[i]
		return Bad[ref.FP8StorePagesInput]{in, ref.ErrDuplicateSlot}
	}
}

func fp8StoreBoundary() []Case[ref.FP8StorePagesInput] {
	pool := func(ps, size int64) ref.FP8Pool {
		return ref.FP8Pool{PageSize: ps, Size: size, Rows: catalog.SeededRows(ref.FP8RowBytes, int(size+ps), 3)}
	}
	rows := func(n int) ref.Rows { return catalog.SeededRows(ref.FP8RowBytes, n, 7) }
	return []Case[ref.FP8StorePagesInput]{
		{"empty-store", ref.FP8StorePagesInput{Pool: pool(2, 4), Locs: []int64{}, Rows: rows(0)}},
		{"size-zero-padding-page-only", ref.FP8StorePagesInput{Pool: pool(3, 0), Locs: []int64{2, 0, 1}, Rows: rows(3)}},
		{"ps1-last-slot", ref.FP8StorePagesInput{Pool: pool(1, 5), Locs: []int64{5}, Rows: rows(1)}},
		// bs=2 page-aligned: request 0 on page 2, request 1 on pages 1 and 3.
		{"bs2-page-aligned", ref.FP8StorePagesInput{Pool: pool(2, 6), Locs: []int64{4, 5, 2, 3, 6, 7}, Rows: rows(6)}},
		{"whole-pool", ref.FP8StorePagesInput{Pool: pool(2, 2), Locs: []int64{3, 2, 1, 0}, Rows: rows(4)}},
		{"loc-equals-num-slots", ref.FP8StorePagesInput{Pool: pool(2, 2), Locs: []int64{4}, Rows: rows(1)}},
		{"duplicate-adjacent", ref.FP8StorePagesInput{Pool: pool(2, 2), Locs: []int64{1, 1}, Rows: rows(2)}},
		{"page-size-zero", ref.FP8StorePagesInput{Pool: ref.FP8Pool{PageSize: 0, Size: 2, Rows: catalog.SeededRows(ref.FP8RowBytes, 2, 3)}, Locs: []int64{}, Rows: rows(0)}},
	}
}

// fp8StoreRoundtrip is P7.1: materializing the stored slots returns the
// stored rows byte for byte.
func fp8StoreRoundtrip(lim ref.Limits, in ref.FP8StorePagesInput, out ref.FP8StorePagesOutput) error {
	m, err := ref.FP8MaterializePages(lim, ref.FP8MaterializePagesInput{Pool: out.Pool, Slots: in.Locs})
	if err != nil {
		return err
	}
	return rowsEqual("materialize(store(rows))", m.Rows, in.Rows)
}

// fp8StoreOthersUnchanged is P7.1's second half: the pool keeps its shape
// and every slot not in locs keeps its bytes.
func fp8StoreOthersUnchanged(_ ref.Limits, in ref.FP8StorePagesInput, out ref.FP8StorePagesOutput) error {
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

func fp8MaterializeValid(t *rapid.T) ref.FP8MaterializePagesInput {
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
	return ref.FP8MaterializePagesInput{Pool: p, Slots: slots}
}

func fp8MaterializeInvalid(t *rapid.T) Bad[ref.FP8MaterializePagesInput] {
	in := fp8MaterializeValid(t)
	n := in.Pool.Size + in.Pool.PageSize
	if rapid.Bool().Draw(t, "pool_violation_first") {
		p, want := fp8BadPool(t, in.Pool)
		in.Pool = p
		return Bad[ref.FP8MaterializePagesInput]{in, want}
	}
	in.Slots = append(slices.Clone(in.Slots), 0)
	e := rapid.IntRange(0, len(in.Slots)-1).Draw(t, "bad_at")
	in.Slots[e] = rapid.SampledFrom([]int64{-1, n, n + 5}).Draw(t, "bad_slot")
	return Bad[ref.FP8MaterializePagesInput]{in, ref.ErrSlotOutOfRange}
}

func fp8MaterializeBoundary() []Case[ref.FP8MaterializePagesInput] {
	pool := ref.FP8Pool{PageSize: 2, Size: 4, Rows: catalog.SeededRows(ref.FP8RowBytes, 6, 13)}
	return []Case[ref.FP8MaterializePagesInput]{
		{"no-slots", ref.FP8MaterializePagesInput{Pool: pool, Slots: []int64{}}},
		{"bs2-flattened-page-table", ref.FP8MaterializePagesInput{Pool: pool, Slots: []int64{2, 3, 4, 0, 1}}},
		{"repeats", ref.FP8MaterializePagesInput{Pool: pool, Slots: []int64{5, 5, 0, 5}}},
		{"slot-equals-num-slots", ref.FP8MaterializePagesInput{Pool: pool, Slots: []int64{1, 6}}},
		{"negative-slot", ref.FP8MaterializePagesInput{Pool: pool, Slots: []int64{-1}}},
	}
}

// fp8MaterializeRaw: row i of the output is the raw pool row at slots[i].
func fp8MaterializeRaw(_ ref.Limits, in ref.FP8MaterializePagesInput, out ref.FP8MaterializePagesOutput) error {
	if out.Rows.W != ref.FP8RowBytes || out.Rows.N() != len(in.Slots) {
		return fmt.Errorf("%d rows of %d B, want %d of %d B", out.Rows.N(), out.Rows.W, len(in.Slots), ref.FP8RowBytes)
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
func fp8MaterializeRestore(lim ref.Limits, in ref.FP8MaterializePagesInput, out ref.FP8MaterializePagesOutput) error {
	seen := map[int64]bool{}
	for _, s := range in.Slots {
		if seen[s] {
			return nil
		}
		seen[s] = true
	}
	st, err := ref.FP8StorePages(lim, ref.FP8StorePagesInput{Pool: in.Pool, Locs: in.Slots, Rows: out.Rows})
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
func fp8StoreHostRoundtrip(lim ref.Limits, _ ref.FP8StorePagesInput, out ref.FP8StorePagesOutput) error {
	return fp8HostRoundtrip(lim, out.Pool)
}

func fp8HostRoundtrip(lim ref.Limits, pool ref.FP8Pool) error {
	ps := pool.PageSize
	dp := int64(pool.Rows.N()) / ps
	np := dp + 1
	layer := pool.Rows.B[:dp*ps*ref.FP8RowBytes]
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
	for _, hl := range []ref.HostLayout{ref.LayerFirst, ref.PageFirst, ref.PageFirstDirect, ref.LayerPageFirst} {
		base := ref.LayoutConvertInput{Layout: hl, Pool: ref.HostPoolMLA, Layers: 2, Pages: np, PageSize: ps, TokenBytes: ref.FP8RowBytes,
			DevicePages: dp, HostIndices: hostIdx, DeviceIndices: devIdx}
		d2h := base
		d2h.Mode, d2h.Device = ref.ConvertBackup, device
		d2h.Host = bytes.Repeat([]byte{0xC3}, int(2*np*ps*ref.FP8RowBytes))
		host, err := ref.LayoutConvert(lim, d2h)
		if err != nil {
			return fmt.Errorf("%s backup: %w", hl, err)
		}
		// The backup really wrote: slot 0's row (layer 0, device page 0 →
		// host page np-1) is somewhere in the host arena. Host page 0 is
		// never a destination and keeps the fill.
		if !bytes.Contains(host.Arena, device[:ref.FP8RowBytes]) {
			return fmt.Errorf("%s backup: slot 0's bytes are nowhere in the host arena", hl)
		}
		h2d := base
		h2d.Mode, h2d.Host, h2d.Device = ref.ConvertLoad, host.Arena, make([]byte, len(device))
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
