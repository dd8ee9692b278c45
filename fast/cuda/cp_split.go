//go:build cuda

package cuda

import (
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// This file holds cp.split's twin and what the CP row-moving twins
// (cp.split, cp.rerange, cp.compact_valid, cp.restore_padded) share: the
// layout's prefix sums and the launch of a row-gather kernel. Each of those
// ops has one kernel (kernels/<base>.cu) that writes every output word from
// a host-built table of runs — one per lane slot or (request, segment), so
// O(cp·B) entries, never one per row — found by binary search per word.

// CPSplit is the CUDA twin of ref.CPSplit (docs/spec/cp-layout.md §1.2, §1.7 "a
// single gather"): every rank's rows in one device buffer, rank after rank,
// and their position ids, written by one launch of cp_split_rows from one
// run per lane slot. Validation is ref's.
func CPSplit(lim spec.Limits, in spec.CPSplitInput) (spec.CPSplitOutput, error) {
	lay, err := ref.ValidateCPSplit(lim, in)
	if err != nil {
		return spec.CPSplitOutput{}, err
	}
	sums := newLayoutSums(lay)
	runs, rankEnd := splitRuns(lay, sums, in.Prefix)
	total, w := rankEnd[lay.CP-1], in.X.W
	buf, pos := make([]byte, total*int64(w)), make([]int64, total)
	if total > 0 { // a built layout always has rows; no work would mean no launch
		err = splitOnDevice(in, runs, buf, pos)
	}
	if err != nil {
		return spec.CPSplitOutput{}, err
	}
	out := spec.CPSplitOutput{Ranks: make([]spec.CPSplitRank, lay.CP)}
	start := int64(0)
	for r, end := range rankEnd {
		out.Ranks[r] = spec.CPSplitRank{Rows: spec.Rows{W: w, B: buf[start*int64(w) : end*int64(w) : end*int64(w)]},
			Positions: pos[start:end:end]}
		start = end
	}
	return out, nil
}

// splitOnDevice runs cp_split_rows over runs into buf (the rows) and pos.
func splitOnDevice(in spec.CPSplitInput, runs []int64, buf []byte, pos []int64) error {
	total, w := int64(len(pos)), in.X.W
	return run("cp.split", func(c *call) error {
		dx, err := c.upload(in.X.B)
		if err != nil {
			return err
		}
		dpad, err := c.upload(in.Pad)
		if err != nil {
			return err
		}
		druns, err := c.uploadInt64s(runs)
		if err != nil {
			return err
		}
		ddst, err := c.alloc(int64(len(buf)))
		if err != nil {
			return err
		}
		dpos, err := c.alloc(total * 8)
		if err != nil {
			return err
		}
		if err := c.launch("cp_split_rows", total*rowWords(w), ddst, dx, dpad, dpos, druns,
			int64(len(runs)/4), total, int64(w)); err != nil {
			return err
		}
		if err := c.download(buf, ddst); err != nil {
			return err
		}
		return c.downloadInt64s(pos, dpos)
	})
}

// splitRuns lists cp_split_rows' runs, {first output row, first X row,
// valid rows, first position}, one per lane slot with compute rows, rank by
// rank (PREV lane, then MIRROR, requests in order: §0.3), and the output row
// where each rank's rows end. A run spans S[i][k] output rows.
func splitRuns(lay spec.Layout, sums layoutSums, prefix []int64) (runs []int64, rankEnd []int64) {
	runs, rankEnd = make([]int64, 0, 4*lay.NS()*lay.B()), make([]int64, lay.CP)
	off := int64(0)
	for r := range lay.CP {
		for _, k := range lay.Lanes(r) {
			for i := range lay.L {
				s, c := lay.S[i][k], int64(sums.segStart[i][k])
				if s == 0 {
					continue
				}
				runs = append(runs, off, int64(sums.outBase[i])+c, int64(lay.V[i][k]), prefix[i]+c)
				off += int64(s)
			}
		}
		rankEnd[r] = off
	}
	return runs, rankEnd
}

// layoutSums are a layout's prefix sums, computed once per call (ref
// recomputes them per lookup).
type layoutSums struct {
	// segStart[i][k] is SegStart(i, k); validStart[i][k] is Σ_{k'<k} V[i][k'].
	segStart, validStart [][]int
	// outBase[i] is OutBase(i).
	outBase []int
}

func newLayoutSums(lay spec.Layout) layoutSums {
	b, ns := lay.B(), lay.NS()
	x := layoutSums{segStart: make([][]int, b), validStart: make([][]int, b), outBase: make([]int, b)}
	base := 0
	for i := range b {
		x.segStart[i], x.validStart[i] = make([]int, ns), make([]int, ns)
		for k := 1; k < ns; k++ {
			x.segStart[i][k] = x.segStart[i][k-1] + lay.S[i][k-1]
			x.validStart[i][k] = x.validStart[i][k-1] + lay.V[i][k-1]
		}
		x.outBase[i] = base
		base += lay.L[i]
	}
	return x
}

// rowWords is the number of words a row of w bytes moves as in the row
// kernels: 16-byte words when w is a multiple of 16, else 8-, 4- or 1-byte
// ones (the kernels choose the same way). It sizes the launch: one thread
// per output word.
func rowWords(w int) int64 {
	for _, ws := range []int{16, 8, 4} {
		if w%ws == 0 {
			return int64(w / ws)
		}
	}
	return int64(w)
}

// appendRun appends the run {dst, src} of a two-field run table (every row
// of a run comes from the source), merging it into the previous run when
// that one's rows continue into it in the source.
func appendRun(runs []int64, dst, src int64) []int64 {
	if n := len(runs); n >= 2 && runs[n-1]+dst-runs[n-2] == src {
		return runs
	}
	return append(runs, dst, src)
}

// gatherRows launches a two-field row-gather kernel (cp_rerange_rows,
// cp_compact_valid_rows): out row o is src row runs[2j+1] + o − runs[2j]
// of the run j holding o. With no output rows nothing is launched.
func gatherRows(c *call, kernel string, out spec.Rows, src []byte, runs []int64) error {
	n := int64(out.N())
	if n == 0 {
		return nil
	}
	dsrc, err := c.upload(src)
	if err != nil {
		return err
	}
	druns, err := c.uploadInt64s(runs)
	if err != nil {
		return err
	}
	ddst, err := c.alloc(int64(len(out.B)))
	if err != nil {
		return err
	}
	if err := c.launch(kernel, n*rowWords(out.W), ddst, dsrc, druns, int64(len(runs)/2), n, int64(out.W)); err != nil {
		return err
	}
	return c.download(out.B, ddst)
}
