package fast

import (
	"runtime"
	"sort"
	"sync"

	"github.com/kvtwin/kvtwin/spec"
)

// This file holds what the CP row-moving ops (cp.split, cp.valid_rows,
// cp.rerange, cp.compact_valid, cp.restore_padded) share: the layout's
// prefix sums, computed once per call, and an executor for a plan of
// contiguous row moves. A lane slot's valid rows are contiguous on both
// sides of every move these ops make, so a plan has O(cp·B) moves, never
// one per row, and executing it allocates nothing per row.

// cpIndex is a layout's prefix sums: what ref recomputes per lookup.
type cpIndex struct {
	lay spec.Layout
	// segStart[i][k] is SegStart(i, k), for k in [0, NS] (NS: C_i).
	segStart [][]int
	// validStart[i][k] is Σ_{k'<k} V[i][k'].
	validStart [][]int
	// outBase[i] is OutBase(i), for i in [0, B].
	outBase []int
}

// newCPIndex builds lay's prefix sums in one pass over its sizes, with three
// allocations for the sums (one backing array each).
func newCPIndex(lay spec.Layout) *cpIndex {
	b, ns := lay.B(), lay.NS()
	x := &cpIndex{lay: lay, segStart: make([][]int, b), validStart: make([][]int, b), outBase: make([]int, b+1)}
	seg, val := make([]int, b*(ns+1)), make([]int, b*(ns+1))
	for i := range b {
		x.segStart[i], x.validStart[i] = seg[i*(ns+1):(i+1)*(ns+1)], val[i*(ns+1):(i+1)*(ns+1)]
		for k := range ns {
			x.segStart[i][k+1] = x.segStart[i][k] + lay.S[i][k]
			x.validStart[i][k+1] = x.validStart[i][k] + lay.V[i][k]
		}
		x.outBase[i+1] = x.outBase[i] + lay.L[i]
	}
	return x
}

// laneRows returns Σ_i sizes[i][k], a lane's rows on its rank.
func laneRows(sizes [][]int, k int) int {
	n := 0
	for _, s := range sizes {
		n += s[k]
	}
	return n
}

// rankRows returns the rows rank r holds under sizes (R(r) for S, Rv(r) for V).
func rankRows(lay spec.Layout, sizes [][]int, r int) int {
	return laneRows(sizes, r) + laneRows(sizes, lay.Mirror(r))
}

// move copies n bytes from src[s:] to dst[d:]; s < 0 fills them with the
// pad row instead (n a multiple of the row width).
type move struct{ d, s, n int }

// parallelMinBytes is the output size from which a plan is executed by
// several goroutines: row moves are memory-bound, and below a few MiB the
// hand-off costs more than a second core's bandwidth saves.
const parallelMinBytes = 4 << 20

// maxMoveSegments caps the goroutines one plan uses.
const maxMoveSegments = 8

// runMoves executes moves, sorted by ascending, disjoint destinations, into
// dst. From parallelMinBytes of dst it cuts dst into row-aligned byte
// ranges, one per goroutine, each clipping the moves that cross it; the
// goroutines end before it returns.
func runMoves(dst, src, pad []byte, w int, moves []move) {
	segs := 1
	if len(dst) >= parallelMinBytes {
		segs = max(1, min(runtime.GOMAXPROCS(0), maxMoveSegments, len(dst)/(parallelMinBytes/2)))
	}
	if segs == 1 {
		runRange(dst, src, pad, moves, 0, len(dst))
		return
	}
	rows := len(dst) / w
	var wg sync.WaitGroup
	for k := 1; k < segs; k++ {
		lo, hi := k*rows/segs*w, (k+1)*rows/segs*w
		wg.Go(func() { runRange(dst, src, pad, moves, lo, hi) })
	}
	runRange(dst, src, pad, moves, 0, rows/segs*w)
	wg.Wait()
}

// runRange executes the parts of moves that fall in dst[lo:hi].
func runRange(dst, src, pad []byte, moves []move, lo, hi int) {
	j := sort.Search(len(moves), func(j int) bool { return moves[j].d+moves[j].n > lo })
	for ; j < len(moves) && moves[j].d < hi; j++ {
		m := moves[j]
		a, b := max(m.d, lo), min(m.d+m.n, hi)
		if a >= b {
			continue
		}
		if m.s < 0 {
			fill(dst[a:b], pad)
			continue
		}
		copy(dst[a:b], src[m.s+a-m.d:])
	}
}

// fill writes the pad row over seg (a whole number of rows) by doubling
// copies: log2(rows) copy calls, not one per row.
func fill(seg, pad []byte) {
	n := copy(seg, pad)
	for n < len(seg) {
		n += copy(seg[n:], seg[:n])
	}
}

// appendMove appends a move, merging it into the previous one when both
// sides continue it (adjacent slots whose rows are adjacent in both buffers).
func appendMove(moves []move, m move) []move {
	if m.n == 0 {
		return moves
	}
	if last := len(moves) - 1; last >= 0 {
		p := &moves[last]
		if p.d+p.n == m.d && ((p.s >= 0 && m.s >= 0 && p.s+p.n == m.s) || (p.s < 0 && m.s < 0)) {
			p.n += m.n
			return moves
		}
	}
	return append(moves, m)
}
