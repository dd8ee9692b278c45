package equiv

import (
	"fmt"
	"slices"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// CPPageDescriptors is the differential spec of cp.page_descriptors (docs/spec/cp-layout.md §6).
func CPPageDescriptors() *Spec[spec.CPPageDescriptorsInput, spec.CPPageDescriptorsOutput] {
	return &Spec[spec.CPPageDescriptorsInput, spec.CPPageDescriptorsOutput]{
		Op: catalog.CPPageDescriptors(),
		Valid: rapid.Custom(func(t *rapid.T) spec.CPPageDescriptorsInput {
			return spec.CPPageDescriptorsInput{Pages: windows(t, false)}
		}),
		Invalid:  rapid.Custom(descInvalid),
		Boundary: descBoundary(),
		Rejects:  map[string]*spec.Sentinel{"far-page-repeated": spec.ErrDuplicatePageInRow, "first-pair-repeated": spec.ErrDuplicatePageInRow},
		Props: []Prop[spec.CPPageDescriptorsInput, spec.CPPageDescriptorsOutput]{
			{"csr-size-is-pages", descCSRSize},
			{"sorted-within-row", descSorted},
			{"slot-is-window-position", descSlots},
		},
	}
}

// CPRemapLocs is the differential spec of cp.remap_locs (docs/spec/cp-layout.md §6).
func CPRemapLocs() *Spec[spec.CPRemapLocsInput, spec.CPRemapLocsOutput] {
	return &Spec[spec.CPRemapLocsInput, spec.CPRemapLocsOutput]{
		Op:          catalog.CPRemapLocs(),
		Valid:       rapid.Custom(remapValid),
		Invalid:     rapid.Custom(remapInvalid),
		Boundary:    remapBoundary(),
		Rejects:     map[string]*spec.Sentinel{"global-loc-below-padding": spec.ErrBadLoc, "page-repeated-in-a-row": spec.ErrDuplicatePageInRow},
		Regressions: remapRegressions(),
		Props: []Prop[spec.CPRemapLocsInput, spec.CPRemapLocsOutput]{
			{"naive-map-lookup", remapNaive},
			{"row-free-equals-global", remapRowFree},
			{"per-row-injective-in-range", remapInjective},
		},
	}
}

// windows draws a batch's page windows shaped like the RAGGED flattened
// table's: a radix-shared prefix of pages common to several rows, then
// pages of each row's own, from a small pool so rows overlap often
// (disjoint rows when the legacy global path needs them). Page ids are
// sometimes far beyond any dense table's reach.
func windows(t *rapid.T, disjoint bool) [][]int64 {
	b := rapid.IntRange(0, 5).Draw(t, "rows")
	base := rapid.SampledFrom([]int64{0, 100, 1 << 40}).Draw(t, "page_base")
	pool := rapid.Permutation(run(base, 4*b+8)).Draw(t, "pool")
	shared := 0
	if !disjoint {
		shared = rapid.IntRange(0, 4).Draw(t, "shared_pages")
	}
	rows, next := make([][]int64, b), shared
	for i := range rows {
		rows[i] = slices.Clone(pool[:rapid.IntRange(0, shared).Draw(t, "prefix")])
		own := rapid.IntRange(0, min(4, len(pool)-next)).Draw(t, "own")
		rows[i] = append(rows[i], pool[next:next+own]...)
		next += own
		if !disjoint && rapid.IntRange(0, 3).Draw(t, "reuse") == 0 && next > shared {
			// a page of an earlier row's own tail (a radix node split)
			p := pool[rapid.IntRange(shared, next-1).Draw(t, "reused")]
			if !slices.Contains(rows[i], p) {
				rows[i] = append(rows[i], p)
			}
		}
		if rapid.Bool().Draw(t, "shuffle_row") {
			rows[i] = rapid.Permutation(rows[i]).Draw(t, "row_order")
		}
	}
	return rows
}

func descInvalid(t *rapid.T) Bad[spec.CPPageDescriptorsInput] {
	rows := windows(t, false)
	if len(rows) == 0 || len(rows[len(rows)-1]) == 0 {
		rows = append(rows, []int64{5})
	}
	b := rapid.IntRange(0, len(rows)-1).Draw(t, "bad_row")
	for len(rows[b]) == 0 {
		b++
	}
	row := slices.Clone(rows[b])
	rows[b] = row
	if rapid.Bool().Draw(t, "negative") {
		row[rapid.IntRange(0, len(row)-1).Draw(t, "at")] = rapid.Int64Range(-1<<40, -1).Draw(t, "negative_page")
		return Bad[spec.CPPageDescriptorsInput]{spec.CPPageDescriptorsInput{Pages: rows}, spec.ErrNegative}
	}
	rows[b] = append(row, row[rapid.IntRange(0, len(row)-1).Draw(t, "dup_of")])
	return Bad[spec.CPPageDescriptorsInput]{spec.CPPageDescriptorsInput{Pages: rows}, spec.ErrDuplicatePageInRow}
}

// tokenWindows is a batch of requests of lens tokens each at page size ps:
// every row's first page is shared (a common system prompt), the others
// are its own, in descending id order so rows need sorting.
func tokenWindows(lens []int, ps int) [][]int64 {
	rows := make([][]int64, len(lens))
	next := int64(1000)
	for i, l := range lens {
		n := (l + ps - 1) / ps
		rows[i] = []int64{7}
		for j := 1; j < n; j++ {
			rows[i] = append(rows[i], next)
			next--
		}
	}
	return rows
}

// edgeLens are §0's boundary lengths for (cp, ps).
func edgeLens(cp, ps int) []int {
	return []int{1, ps - 1, ps, ps + 1, 2*cp - 1, 2 * cp, 2*cp + 1}
}

func descBoundary() []Case[spec.CPPageDescriptorsInput] {
	cs := []Case[spec.CPPageDescriptorsInput]{
		{"no-rows", spec.CPPageDescriptorsInput{Pages: [][]int64{}}},
		{"one-empty-row", spec.CPPageDescriptorsInput{Pages: [][]int64{{}}}},
		{"spec-A6-rows", spec.CPPageDescriptorsInput{Pages: [][]int64{{7, 3}, {3, 9}}}},
		{"every-row-identical", spec.CPPageDescriptorsInput{Pages: [][]int64{{4, 2, 9}, {4, 2, 9}, {4, 2, 9}}}},
		{"far-page-ids", spec.CPPageDescriptorsInput{Pages: [][]int64{{1 << 50, 1<<50 + 3}, {1<<62 + 1, 1 << 50}}}},
		// A page too large to pack with its window position sends fast to
		// its pair sort, which must find the repeat of page 5 as ref does.
		{"far-page-repeated", spec.CPPageDescriptorsInput{Pages: [][]int64{{1 << 62, 5, 5}}}},
		// Short rows whose first pair alone is out of order or repeated (a
		// reach class of issue 30): a check that starts at the second pair
		// takes them for sorted.
		{"first-pair-descending", spec.CPPageDescriptorsInput{Pages: [][]int64{{1, 0}, {2, 1, 3}}}},
		{"first-pair-repeated", spec.CPPageDescriptorsInput{Pages: [][]int64{{5, 5}}}},
	}
	for _, ps := range []int{2, 4, 64} {
		for _, l := range edgeLens(2, ps) {
			cs = append(cs, Case[spec.CPPageDescriptorsInput]{fmt.Sprintf("ps%d-len%d", ps, l), spec.CPPageDescriptorsInput{Pages: tokenWindows([]int{l}, ps)}})
		}
		cs = append(cs, Case[spec.CPPageDescriptorsInput]{fmt.Sprintf("ps%d-mixed", ps), spec.CPPageDescriptorsInput{Pages: tokenWindows(edgeLens(2, ps), ps)}})
	}
	return cs
}

// descCSRSize is P6.2: the descriptors hold exactly one entry per window
// page and B+1 row pointers — nothing scales with logical page capacity.
func descCSRSize(_ spec.Limits, in spec.CPPageDescriptorsInput, d spec.CPPageDescriptorsOutput) error {
	if len(d.RowPtr) != len(in.Pages)+1 || d.RowPtr[0] != 0 {
		return fmt.Errorf("row_ptr %v for %d rows", d.RowPtr, len(in.Pages))
	}
	for b, row := range in.Pages {
		if n := int(d.RowPtr[b+1] - d.RowPtr[b]); n != len(row) {
			return fmt.Errorf("row %d has %d descriptors for %d pages", b, n, len(row))
		}
	}
	if total := int(d.RowPtr[len(in.Pages)]); len(d.Page) != total || len(d.Slot) != total {
		return fmt.Errorf("%d pages and %d slots for %d window pages", len(d.Page), len(d.Slot), total)
	}
	return nil
}

// descSorted: within each row the pages ascend strictly (binary search).
func descSorted(_ spec.Limits, in spec.CPPageDescriptorsInput, d spec.CPPageDescriptorsOutput) error {
	for b := range in.Pages {
		row := d.Page[d.RowPtr[b]:d.RowPtr[b+1]]
		for x := 1; x < len(row); x++ {
			if row[x] <= row[x-1] {
				return fmt.Errorf("row %d descriptors %v not strictly ascending", b, row)
			}
		}
	}
	return nil
}

// descSlots: row b's slots are exactly [Base_b, Base_b+|Pages_b|) — so two
// rows never alias a slot — and slot Base_b+j holds window page j.
func descSlots(_ spec.Limits, in spec.CPPageDescriptorsInput, d spec.CPPageDescriptorsOutput) error {
	base := 0
	for b, row := range in.Pages {
		seen := make([]bool, len(row))
		for x := d.RowPtr[b]; x < d.RowPtr[b+1]; x++ {
			j := int(d.Slot[x]) - base
			if j < 0 || j >= len(row) || seen[j] {
				return fmt.Errorf("row %d: slot %d outside [%d, %d) or repeated", b, d.Slot[x], base, base+len(row))
			}
			seen[j] = true
			if row[j] != d.Page[x] {
				return fmt.Errorf("row %d: slot %d holds page %d, window position %d is page %d", b, d.Slot[x], d.Page[x], j, row[j])
			}
		}
		base += len(row)
	}
	return nil
}

// remapValid draws windows and locations into them (−1 padding mixed in);
// a quarter of the cases take the legacy global path over disjoint rows.
func remapValid(t *rapid.T) spec.CPRemapLocsInput {
	global := rapid.IntRange(0, 3).Draw(t, "global") == 0
	in := spec.CPRemapLocsInput{PageSize: rapid.SampledFrom([]int64{1, 2, 4, 64}).Draw(t, "page_size"),
		Pages: windows(t, global), Locs: []int64{}, Global: global}
	if !global {
		in.RowIDs = []int32{}
	}
	var nonEmpty []int
	for b, row := range in.Pages {
		if len(row) > 0 {
			nonEmpty = append(nonEmpty, b)
		}
	}
	for range rapid.IntRange(0, 24).Draw(t, "locs") {
		loc, b := int64(-1), rapid.IntRange(0, max(len(in.Pages)-1, 0)).Draw(t, "pad_row")
		if len(nonEmpty) > 0 && rapid.IntRange(0, 7).Draw(t, "padding") > 0 {
			b = rapid.SampledFrom(nonEmpty).Draw(t, "row")
			row := in.Pages[b]
			loc = row[rapid.IntRange(0, len(row)-1).Draw(t, "page")]*in.PageSize + rapid.Int64Range(0, in.PageSize-1).Draw(t, "offset")
		}
		if len(in.Pages) == 0 && !global {
			break // no row id exists for padding either
		}
		in.Locs = append(in.Locs, loc)
		if !global {
			in.RowIDs = append(in.RowIDs, int32(b))
		}
	}
	return in
}

func remapInvalid(t *rapid.T) Bad[spec.CPRemapLocsInput] {
	in := remapValid(t)
	in.Locs, in.RowIDs = slices.Clone(in.Locs), slices.Clone(in.RowIDs)
	if len(in.Pages) == 0 {
		in.Pages = [][]int64{{3}}
	}
	// pushLoc appends a location of row b (and its row id on the row path).
	pushLoc := func(loc int64, b int32) {
		in.Locs = append(in.Locs, loc)
		if !in.Global {
			in.RowIDs = append(in.RowIDs, b)
		}
	}
	switch rapid.IntRange(0, 8).Draw(t, "violation") {
	case 0:
		in.PageSize = rapid.Int64Range(-64, 0).Draw(t, "bad_page_size")
		return Bad[spec.CPRemapLocsInput]{in, spec.ErrBadLoc}
	case 1:
		d := descInvalid(t)
		in.Pages = d.In.Pages
		return Bad[spec.CPRemapLocsInput]{in, d.Want}
	case 2:
		pushLoc(rapid.Int64Range(-1<<40, -2).Draw(t, "bad_loc"), 0)
		return Bad[spec.CPRemapLocsInput]{in, spec.ErrBadLoc}
	case 3:
		if in.Global {
			in.Global, in.Locs, in.RowIDs = false, []int64{}, []int32{}
		}
		in.Locs = append(in.Locs, rapid.SampledFrom([]int64{-1, 0}).Draw(t, "any_loc"))
		in.RowIDs = append(in.RowIDs, rapid.SampledFrom([]int32{-1, int32(len(in.Pages)), 1 << 30}).Draw(t, "bad_row"))
		return Bad[spec.CPRemapLocsInput]{in, spec.ErrRowOutOfRange}
	case 4:
		// a page no row lists (the pool stays below 1<<40 + 28)
		pushLoc((1<<41)*in.PageSize+rapid.Int64Range(0, in.PageSize-1).Draw(t, "offset"), 0)
		return Bad[spec.CPRemapLocsInput]{in, spec.ErrPageNotInRow}
	case 5:
		if in.Global {
			in.RowIDs = []int32{}
		} else {
			in.RowIDs = append(in.RowIDs, 0)
		}
		return Bad[spec.CPRemapLocsInput]{in, spec.ErrRowCount}
	case 6:
		in.Global, in.RowIDs = true, nil
		in.Pages = slices.Clone(in.Pages)
		if len(in.Pages[0]) == 0 {
			in.Pages[0] = []int64{11}
		}
		in.Pages = append(in.Pages, []int64{in.Pages[0][0]})
		return Bad[spec.CPRemapLocsInput]{in, spec.ErrAmbiguousGlobalInverse}
	case 7:
		in.PageSize = 1<<62 + rapid.Int64Range(0, 1<<40).Draw(t, "huge_page_size")
		in.Pages = append(slices.Clone(in.Pages), []int64{1 << 45, 1<<45 + 1})
		return Bad[spec.CPRemapLocsInput]{in, spec.ErrOverflow}
	default:
		if !in.Global {
			// the page of another row, not this one's: A6's loc asked of a row without page 3
			in.Pages = append(slices.Clone(in.Pages), []int64{1 << 42}, []int64{1<<42 + 1})
			pushLoc((1<<42)*in.PageSize, int32(len(in.Pages)-1))
			return Bad[spec.CPRemapLocsInput]{in, spec.ErrPageNotInRow}
		}
		in.RowIDs = make([]int32, len(in.Locs))
		return Bad[spec.CPRemapLocsInput]{in, spec.ErrRowCount}
	}
}

// remapBoundary: requests at the boundary lengths (every token of every
// row, a shared first page, −1 padding between rows), row-scoped and —
// rows made disjoint — global; the §6.4 example both ways.
func remapBoundary() []Case[spec.CPRemapLocsInput] {
	var cs []Case[spec.CPRemapLocsInput]
	batch := func(lens []int, ps int) spec.CPRemapLocsInput {
		in := spec.CPRemapLocsInput{PageSize: int64(ps), Pages: tokenWindows(lens, ps), Locs: []int64{}, RowIDs: []int32{}}
		for b, l := range lens {
			for tok := range l {
				in.Locs = append(in.Locs, in.Pages[b][tok/ps]*int64(ps)+int64(tok%ps))
				in.RowIDs = append(in.RowIDs, int32(b))
			}
			in.Locs, in.RowIDs = append(in.Locs, -1), append(in.RowIDs, int32(b))
		}
		return in
	}
	for _, ps := range []int{2, 4, 64} {
		for _, cp := range []int{2, 4} {
			for _, l := range edgeLens(cp, ps) {
				cs = append(cs, Case[spec.CPRemapLocsInput]{fmt.Sprintf("ps%d-cp%d-len%d", ps, cp, l), batch([]int{l}, ps)})
				g := batch([]int{l}, ps)
				g.Global, g.RowIDs = true, nil
				cs = append(cs, Case[spec.CPRemapLocsInput]{fmt.Sprintf("ps%d-cp%d-len%d-global", ps, cp, l), g})
			}
			cs = append(cs, Case[spec.CPRemapLocsInput]{fmt.Sprintf("ps%d-cp%d-mixed", ps, cp), batch(edgeLens(cp, ps), ps)})
		}
	}
	a6 := remapRegressions()[0].In
	cs = append(cs,
		Case[spec.CPRemapLocsInput]{"spec-A6-all-locs", spec.CPRemapLocsInput{PageSize: 2, Pages: a6.Pages,
			Locs: []int64{14, 15, 6, 7, 6, 7, 18, 19}, RowIDs: []int32{0, 0, 0, 0, 1, 1, 1, 1}}},
		Case[spec.CPRemapLocsInput]{"no-rows-no-locs", spec.CPRemapLocsInput{PageSize: 64, Pages: [][]int64{}, Locs: []int64{}, RowIDs: []int32{}}},
		Case[spec.CPRemapLocsInput]{"padding-only", spec.CPRemapLocsInput{PageSize: 64, Pages: [][]int64{{}}, Locs: []int64{-1, -1}, RowIDs: []int32{0, 0}}},
		// rejections on the legacy global path: a loc below padding, and a
		// row repeating a page (the descriptors refuse it)
		Case[spec.CPRemapLocsInput]{"global-loc-below-padding", spec.CPRemapLocsInput{PageSize: 2, Pages: [][]int64{{7, 3}}, Locs: []int64{-2}, Global: true}},
		Case[spec.CPRemapLocsInput]{"page-repeated-in-a-row", spec.CPRemapLocsInput{PageSize: 2, Pages: [][]int64{{5, 5}}, Locs: []int64{10}, Global: true}},
	)
	return cs
}

// remapRegressions: §6.4's minimal input. With a batch-global inverse
// inv[page] = slot, row B's later write of page 3 (slot 2) wins, so row
// A's loc 7 (page 3, offset 1) lands on 2·2+1 = 5, row B's compact row,
// instead of 1·2+1 = 3.
func remapRegressions() []Case[spec.CPRemapLocsInput] {
	return []Case[spec.CPRemapLocsInput]{
		{"global-page-inverse", spec.CPRemapLocsInput{PageSize: 2, Pages: [][]int64{{7, 3}, {3, 9}}, Locs: []int64{7}, RowIDs: []int32{0}}},
	}
}

// rowOf is the row of entry e (0 on the global path, which has one table).
func rowOf(in spec.CPRemapLocsInput, e int) int {
	if in.Global {
		return 0
	}
	return int(in.RowIDs[e])
}

// remapNaive is P6.1: each location equals a plain per-row map lookup
// (duplicates across rows allowed), slots row-major; on the global path,
// the one row that lists the page.
func remapNaive(_ spec.Limits, in spec.CPRemapLocsInput, out spec.CPRemapLocsOutput) error {
	type key struct {
		row  int
		page int64
	}
	slot, base := map[key]int64{}, int64(0)
	for b, row := range in.Pages {
		r := b
		if in.Global {
			r = 0
		}
		for j, p := range row {
			slot[key{r, p}] = base + int64(j)
		}
		base += int64(len(row))
	}
	if len(out.Locs) != len(in.Locs) {
		return fmt.Errorf("%d results for %d locs", len(out.Locs), len(in.Locs))
	}
	for e, loc := range in.Locs {
		want := int64(-1)
		if loc != -1 {
			s, ok := slot[key{rowOf(in, e), loc / in.PageSize}]
			if !ok {
				return fmt.Errorf("loc %d of row %d was accepted but its page is not in the row", loc, rowOf(in, e))
			}
			want = s*in.PageSize + loc%in.PageSize
		}
		if out.Locs[e] != want {
			return fmt.Errorf("locs[%d] = %d (row %d) remapped to %d, naive map gives %d", e, loc, rowOf(in, e), out.Locs[e], want)
		}
	}
	return nil
}

// remapRowFree is P6.3: without pages shared across rows, the row-scoped
// remap equals the legacy global one.
func remapRowFree(lim spec.Limits, in spec.CPRemapLocsInput, out spec.CPRemapLocsOutput) error {
	if in.Global || ref.CheckGlobalUnique(in.Pages) != nil {
		return nil
	}
	g := in
	g.Global, g.RowIDs = true, nil
	gout, err := ref.CPRemapLocs(lim, g)
	if err != nil {
		return fmt.Errorf("global remap of a batch without shared pages: %v", err)
	}
	if !slices.Equal(gout.Locs, out.Locs) {
		return fmt.Errorf("row-scoped %v != global %v", out.Locs, gout.Locs)
	}
	return nil
}

// remapInjective is P6.4: results lie in [0, ps·Σ|Pages_b|) (−1 exactly
// for padding), and distinct (row, loc) pairs never share a compact row —
// no two rows alias, even through a shared page.
func remapInjective(_ spec.Limits, in spec.CPRemapLocsInput, out spec.CPRemapLocsOutput) error {
	pages := int64(0)
	for _, row := range in.Pages {
		pages += int64(len(row))
	}
	if out.CompactRows != pages*in.PageSize {
		return fmt.Errorf("compact_rows %d, want page_size·Σ|pages| = %d", out.CompactRows, pages*in.PageSize)
	}
	type key struct {
		row int
		loc int64
	}
	owner := map[int64]key{}
	for e, loc := range in.Locs {
		r := out.Locs[e]
		if (loc == -1) != (r == -1) {
			return fmt.Errorf("locs[%d] = %d remapped to %d: padding must map to exactly -1", e, loc, r)
		}
		if loc == -1 {
			continue
		}
		if r < 0 || r >= out.CompactRows {
			return fmt.Errorf("locs[%d] remapped to %d outside [0, %d)", e, r, out.CompactRows)
		}
		k := key{rowOf(in, e), loc}
		if o, ok := owner[r]; ok && o != k {
			return fmt.Errorf("compact row %d aliased by (row %d, loc %d) and (row %d, loc %d)", r, o.row, o.loc, k.row, k.loc)
		}
		owner[r] = k
	}
	return nil
}
