//go:build cuda

package cuda

import (
	"cmp"
	"slices"
	"unsafe"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// CPRemapLocs is the CUDA twin of ref.CPRemapLocs (docs/spec/cp-layout.md §6.1, P6.5):
// the row-scoped descriptors are built on the host (fast.CPPageDescriptors,
// whose rejections are ref's), uploaded with the locations and row ids,
// and one launch of cp_remap_locs_remap maps every location with one thread
// each (binary search in its row's descriptors, no atomics on valid
// input). A bad entry is found on the device as the lowest bad index, and
// ref's entry checks name its error. The row-free path (Global) refuses
// shared pages with ref's check and searches one batch-wide table.
func CPRemapLocs(lim spec.Limits, in spec.CPRemapLocsInput) (spec.CPRemapLocsOutput, error) {
	if err := ref.CheckRemapPageSize(in.PageSize); err != nil {
		return spec.CPRemapLocsOutput{}, err
	}
	d, err := fast.CPPageDescriptors(lim, spec.CPPageDescriptorsInput{Pages: in.Pages})
	if err != nil {
		return spec.CPRemapLocsOutput{}, err
	}
	compact, err := ref.CheckRemapCounts(in)
	if err != nil {
		return spec.CPRemapLocsOutput{}, err
	}
	rows := in.RowIDs
	if in.Global {
		if err := ref.CheckGlobalUnique(in.Pages); err != nil {
			return spec.CPRemapLocsOutput{}, err
		}
		d, rows = globalDescriptors(d), nil
	}
	out := spec.CPRemapLocsOutput{Locs: make([]int64, len(in.Locs)), CompactRows: compact}
	if len(in.Locs) == 0 {
		return out, nil // no work: no launch
	}
	bad := int64(len(in.Locs))
	err = run("cp.remap_locs", func(c *call) error {
		var err error
		bad, err = remapOnDevice(c, d, in.PageSize, in.Locs, rows, out.Locs)
		return err
	})
	if err != nil {
		return spec.CPRemapLocsOutput{}, err
	}
	if bad < int64(len(in.Locs)) {
		return spec.CPRemapLocsOutput{}, remapEntryError(in, int(bad))
	}
	return out, nil
}

// globalDescriptors is the row-free path's table: every (page, slot) of
// the batch sorted by page as one row. The pages must be unique across rows
// (ref.CheckGlobalUnique).
func globalDescriptors(d spec.CPPageDescriptorsOutput) spec.CPPageDescriptorsOutput {
	type entry struct {
		page int64
		slot int32
	}
	all := make([]entry, len(d.Page))
	for x, p := range d.Page {
		all[x] = entry{p, d.Slot[x]}
	}
	slices.SortFunc(all, func(a, b entry) int { return cmp.Compare(a.page, b.page) })
	g := spec.CPPageDescriptorsOutput{RowPtr: []int32{0, int32(len(all))}, Page: make([]int64, len(all)), Slot: make([]int32, len(all))}
	for x, e := range all {
		g.Page[x], g.Slot[x] = e.page, e.slot
	}
	return g
}

// remapOnDevice remaps locs into out (rows nil: the one-table row-free
// path) and returns the lowest bad entry's index, or len(locs) when every
// entry is good (out is read back only then).
func remapOnDevice(c *call, d spec.CPPageDescriptorsOutput, ps int64, locs []int64, rows []int32, out []int64) (int64, error) {
	n := int64(len(locs))
	dlocs, err := c.uploadInt64s(locs)
	if err != nil {
		return 0, err
	}
	var drows devicePtr // null on the row-free path
	if rows != nil {
		if drows, err = c.upload(int32Bytes(rows)); err != nil {
			return 0, err
		}
	}
	drowPtr, err := c.upload(int32Bytes(d.RowPtr))
	if err != nil {
		return 0, err
	}
	dpage, err := c.uploadInt64s(d.Page)
	if err != nil {
		return 0, err
	}
	dslot, err := c.upload(int32Bytes(d.Slot))
	if err != nil {
		return 0, err
	}
	bad := []int64{n}
	dbad, err := c.uploadInt64s(bad)
	if err != nil {
		return 0, err
	}
	dout, err := c.alloc(n * 8)
	if err != nil {
		return 0, err
	}
	if err := c.launch("cp_remap_locs_remap", n, dout, dlocs, drows, n, drowPtr, int64(len(d.RowPtr)-1), dpage, dslot,
		ps, dbad); err != nil {
		return 0, err
	}
	if err := c.downloadInt64s(bad, dbad); err != nil {
		return 0, err
	}
	if bad[0] < n {
		return bad[0], nil
	}
	return n, c.downloadInt64s(out, dout)
}

// remapEntryError is ref's error for bad entry e, checked in ref's order:
// the location, its row id (row-aware path), then the page's presence.
func remapEntryError(in spec.CPRemapLocsInput, e int) error {
	loc := in.Locs[e]
	if err := ref.CheckLoc(e, loc); err != nil {
		return err
	}
	row := int32(-1)
	if !in.Global {
		row = in.RowIDs[e]
		if err := ref.CheckRowID(e, row, len(in.Pages)); err != nil {
			return err
		}
	}
	return ref.RejectPageNotInRow(e, loc, in.PageSize, row)
}

// int32Bytes views v's memory as bytes (for upload; not retained).
func int32Bytes(v []int32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*4)
}
