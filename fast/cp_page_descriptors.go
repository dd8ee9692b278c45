package fast

import (
	"cmp"
	"math/bits"
	"runtime"
	"slices"
	"sync"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// CPPageDescriptors is the twin of ref.CPPageDescriptors (docs/spec/cp-layout.md §6.1):
// the CSR arrays are allocated once at their final size and each row is
// sorted in place through one scratch buffer shared by all rows (no
// per-row allocation, no per-row map). A row already ascending — pages
// handed out in order — is copied without sorting. Validation is folded
// into the sort (a negative page sorts first, a repeat sorts next to its
// twin); when a row fails, ref's in-order scan of that row names the error.
func CPPageDescriptors(_ spec.Limits, in spec.CPPageDescriptorsInput) (spec.CPPageDescriptorsOutput, error) {
	if err := ref.CheckPageTotal(in.Pages); err != nil {
		return spec.CPPageDescriptorsOutput{}, err
	}
	d, bad := buildDescriptors(in.Pages)
	if bad >= 0 {
		return spec.CPPageDescriptorsOutput{}, ref.CheckPageRow(bad, in.Pages[bad])
	}
	return d, nil
}

// pageSlot is one descriptor entry while its row is sorted.
type pageSlot struct {
	page int64
	slot int32
}

// rowScratch is the sort buffer all rows of one call share, allocated at
// the longest row's size on first use.
type rowScratch struct {
	cap   int
	keys  []int64
	pairs []pageSlot
}

func (sc *rowScratch) keyBuf(n int) []int64 {
	if sc.keys == nil {
		sc.keys = make([]int64, sc.cap)
	}
	return sc.keys[:n]
}

func (sc *rowScratch) pairBuf(n int) []pageSlot {
	if sc.pairs == nil {
		sc.pairs = make([]pageSlot, sc.cap)
	}
	return sc.pairs[:n]
}

// buildDescriptors fills the descriptors of pages (at most
// MaxDescriptorPages in all), or returns the first row whose pages are not
// non-negative and unique. From descParallelMin pages on, the rows are cut
// into contiguous groups of about equal page counts, each sorted on its
// own goroutine with its own scratch buffer.
func buildDescriptors(pages [][]int64) (spec.CPPageDescriptorsOutput, int) {
	total := 0
	for _, row := range pages {
		total += len(row)
	}
	d := spec.CPPageDescriptorsOutput{RowPtr: make([]int32, len(pages)+1), Page: make([]int64, total), Slot: make([]int32, total)}
	for b, row := range pages {
		d.RowPtr[b+1] = d.RowPtr[b] + int32(len(row))
	}
	groups := 1
	if total >= descParallelMin {
		groups = max(1, min(runtime.GOMAXPROCS(0), remapMaxChunks, len(pages)))
	}
	if groups == 1 {
		return d, fillRows(d, pages, 0, len(pages))
	}
	var bounds [remapMaxChunks + 1]int
	for g, b := 1, 0; g < groups; g++ {
		for b < len(pages) && int(d.RowPtr[b]) < g*total/groups {
			b++
		}
		bounds[g] = b
	}
	bounds[groups] = len(pages)
	var bad [remapMaxChunks]int
	var wg sync.WaitGroup
	for g := 1; g < groups; g++ {
		wg.Go(func() { bad[g] = fillRows(d, pages, bounds[g], bounds[g+1]) })
	}
	bad[0] = fillRows(d, pages, 0, bounds[1])
	wg.Wait()
	for _, b := range bad[:groups] {
		if b >= 0 {
			return d, b
		}
	}
	return d, -1
}

// descParallelMin is the page count from which rows are sorted in parallel.
const descParallelMin = 1 << 13

// fillRows fills the descriptors of rows [from, to) and returns the first
// bad row among them, or −1.
func fillRows(d spec.CPPageDescriptorsOutput, pages [][]int64, from, to int) int {
	longest := 0
	for _, row := range pages[from:to] {
		longest = max(longest, len(row))
	}
	sc := rowScratch{cap: longest}
	for b := from; b < to; b++ {
		row, lo, hi := pages[b], d.RowPtr[b], d.RowPtr[b+1]
		if ascending(row) {
			copy(d.Page[lo:hi], row)
			for j := range row {
				d.Slot[int(lo)+j] = lo + int32(j)
			}
			continue
		}
		if !sortRow(row, lo, d.Page[lo:hi], d.Slot[lo:hi], &sc) {
			return b
		}
	}
	return -1
}

// ascending reports whether row is non-negative and strictly ascending.
func ascending(row []int64) bool {
	prev := int64(-1)
	for _, p := range row {
		if p <= prev {
			return false
		}
		prev = p
	}
	return true
}

// sortRow writes row's (page, base+j) entries sorted by page into page and
// slot; false when a page is negative or repeated. When every page fits in
// 63−bits(len(row)) bits, (page, j) is packed into one int64 and sorted as
// plain integers (measured ~2.5× faster than sorting pairs through a
// comparator); otherwise the pairs are sorted.
func sortRow(row []int64, base int32, page []int64, slot []int32, sc *rowScratch) bool {
	shift := bits.Len(uint(len(row)))
	limit := int64(1)<<(63-shift) - 1
	packed := true
	for _, p := range row {
		if p < 0 {
			return false
		}
		packed = packed && p <= limit
	}
	if packed {
		keys := sc.keyBuf(len(row))
		for j, p := range row {
			keys[j] = p<<shift | int64(j)
		}
		slices.Sort(keys)
		mask, prev := int64(1)<<shift-1, int64(-1)
		for x, k := range keys {
			p := k >> shift
			if p == prev {
				return false
			}
			prev = p
			page[x], slot[x] = p, base+int32(k&mask)
		}
		return true
	}
	pairs := sc.pairBuf(len(row))
	for j, p := range row {
		pairs[j] = pageSlot{p, base + int32(j)}
	}
	slices.SortFunc(pairs, func(a, b pageSlot) int { return cmp.Compare(a.page, b.page) })
	prev := int64(-1)
	for x, e := range pairs {
		if e.page <= prev {
			return false
		}
		prev = e.page
		page[x], slot[x] = e.page, e.slot
	}
	return true
}

// CPRemapLocs is the twin of ref.CPRemapLocs (docs/spec/cp-layout.md §6.1, P6.5). Each
// location costs one compare on the common path: consecutive locations
// mostly fall in the page just looked up, so a worker keeps that page's
// (row, first loc, first compact row) and binary-searches only on a miss —
// no division by ps, no map. Large batches are cut into contiguous chunks
// run on their own goroutines, each with its own cache, writing disjoint
// parts of the one preallocated output; the goroutines end before the call
// returns. On a bad entry the lowest failing index is re-checked by ref's
// entry checks, so the error is ref's first one.
func CPRemapLocs(lim spec.Limits, in spec.CPRemapLocsInput) (spec.CPRemapLocsOutput, error) {
	if err := ref.CheckRemapPageSize(in.PageSize); err != nil {
		return spec.CPRemapLocsOutput{}, err
	}
	d, err := CPPageDescriptors(lim, spec.CPPageDescriptorsInput{Pages: in.Pages})
	if err != nil {
		return spec.CPRemapLocsOutput{}, err
	}
	compact, err := ref.CheckRemapCounts(in)
	if err != nil {
		return spec.CPRemapLocsOutput{}, err
	}
	w := remapWork{ps: in.PageSize, locs: in.Locs, rows: in.RowIDs, rowPtr: d.RowPtr, page: d.Page, slot: d.Slot,
		bySlot: make([]int64, 0, len(d.Page))}
	for _, row := range in.Pages {
		w.bySlot = append(w.bySlot, row...)
	}
	if in.Global {
		if !w.globalInverse() {
			return spec.CPRemapLocsOutput{}, ref.CheckGlobalUnique(in.Pages)
		}
	}
	w.out = make([]int64, len(in.Locs))
	if e := w.run(); e >= 0 {
		return spec.CPRemapLocsOutput{}, w.entryError(e)
	}
	return spec.CPRemapLocsOutput{Locs: w.out, CompactRows: compact}, nil
}

// remapWork is one CPRemapLocs call's state. On the row-free path rows is
// nil and rowPtr is the single range of the batch-wide inverse.
type remapWork struct {
	ps     int64
	locs   []int64
	rows   []int32
	rowPtr []int32
	page   []int64
	slot   []int32
	bySlot []int64 // bySlot[s] is the page at compact slot s (the windows concatenated)
	out    []int64
}

// globalInverse replaces the row-scoped tables by one sorted batch-wide
// table (page → slot), false when some page occurs in two rows.
func (w *remapWork) globalInverse() bool {
	all := make([]pageSlot, len(w.page))
	for x, p := range w.page {
		all[x] = pageSlot{p, w.slot[x]}
	}
	slices.SortFunc(all, func(a, b pageSlot) int { return cmp.Compare(a.page, b.page) })
	for x := 1; x < len(all); x++ {
		if all[x].page == all[x-1].page {
			return false
		}
	}
	for x, e := range all {
		w.page[x], w.slot[x] = e.page, e.slot
	}
	w.rowPtr = []int32{0, int32(len(all))}
	return true
}

// remapParallelMin is the location count from which CPRemapLocs splits the
// work: below it the goroutine hand-off costs more than a core saves.
const remapParallelMin = 1 << 16

// remapMaxChunks caps the goroutines of one call.
const remapMaxChunks = 8

// run remaps every location and returns the lowest bad index, or −1.
func (w *remapWork) run() int {
	n := len(w.locs)
	chunks := 1
	if n >= remapParallelMin {
		chunks = max(1, min(runtime.GOMAXPROCS(0), remapMaxChunks, n/(remapParallelMin/2)))
	}
	if chunks == 1 {
		return w.chunk(0, n)
	}
	var bad [remapMaxChunks]int
	var wg sync.WaitGroup
	for k := 1; k < chunks; k++ {
		wg.Go(func() { bad[k] = w.chunk(k*n/chunks, (k+1)*n/chunks) })
	}
	bad[0] = w.chunk(0, n/chunks)
	wg.Wait()
	for _, e := range bad[:chunks] {
		if e >= 0 {
			return e
		}
	}
	return -1
}

// chunk remaps locations [lo, hi) and returns the first bad index, or −1.
// A miss on the cached page first tries the next slot of the same row (the
// next page of its window, where a row's tokens continue) and only then
// binary-searches the row.
func (w *remapWork) chunk(lo, hi int) int {
	ps, nRows := w.ps, int32(len(w.rowPtr)-1)
	// the cached page: its row, first loc, slot and first compact row
	cRow, cFirst, cSlot, cBase := int32(-1), int64(0), int32(0), int64(0)
	for e := lo; e < hi; e++ {
		loc := w.locs[e]
		if loc < -1 {
			return e
		}
		row := int32(0)
		if w.rows != nil {
			row = w.rows[e]
			if uint32(row) >= uint32(nRows) {
				return e
			}
		}
		if loc == -1 {
			w.out[e] = -1
			continue
		}
		if row == cRow && uint64(loc-cFirst) < uint64(ps) {
			w.out[e] = cBase + (loc - cFirst)
			continue
		}
		page := loc / ps
		slot, ok := w.lookup(row, page, cRow, cSlot)
		if !ok {
			return e
		}
		cRow, cFirst, cSlot, cBase = row, page*ps, slot, int64(slot)*ps
		w.out[e] = cBase + (loc - cFirst)
	}
	return -1
}

// lookup returns the slot of page in row: the slot after the cached one
// when it holds page, else by binary search of the row's descriptors.
func (w *remapWork) lookup(row int32, page int64, cRow, cSlot int32) (int32, bool) {
	lo, hi := w.rowPtr[row], w.rowPtr[row+1]
	if next := cSlot + 1; row == cRow && next < hi && w.bySlot[next] == page {
		return next, true
	}
	x, ok := searchPage(w.page[lo:hi], page)
	if !ok {
		return 0, false
	}
	return w.slot[int(lo)+x], true
}

// searchPage finds p in an ascending list by lower-bound binary search.
func searchPage(pages []int64, p int64) (int, bool) {
	lo, hi := 0, len(pages)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if pages[mid] < p {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, lo < len(pages) && pages[lo] == p
}

// entryError is ref's error for bad entry e, checked in ref's order.
func (w *remapWork) entryError(e int) error {
	loc := w.locs[e]
	if err := ref.CheckLoc(e, loc); err != nil {
		return err
	}
	row := int32(-1)
	if w.rows != nil {
		row = w.rows[e]
		if err := ref.CheckRowID(e, row, len(w.rowPtr)-1); err != nil {
			return err
		}
	}
	return ref.RejectPageNotInRow(e, loc, w.ps, row)
}
