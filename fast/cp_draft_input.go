package fast

import (
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// CPDraftInput is the twin of ref.CPDraftInput (cp.draft_input): the same
// validation and marker (ref.ValidateCPDraftInput, ref.DraftMarker), but the
// draft rows alias the chosen input buffer instead of being copied — the
// draft extend only reads them — and the guard walks the lane slots with
// running offsets (O(B·cp) instead of ref's O(B²·cp) SlotOff and
// SegStart sums), filling the valid mask one slot-prefix at a time.
func CPDraftInput(lim spec.Limits, in spec.CPDraftInputInput) (spec.CPDraftInputOutput, error) {
	lay, err := ref.ValidateCPDraftInput(lim, in)
	if err != nil {
		return spec.CPDraftInputOutput{}, err
	}
	src, c, source := ref.DraftMarker(in)
	hidden := src
	if hidden.B == nil {
		hidden.B = []byte{}
	}
	cpLocal := c == spec.DraftCPLocal
	return spec.CPDraftInputOutput{Hidden: hidden, CPLocal: cpLocal, Contract: c, Source: source,
		Guard: draftGuard(lay, in.Rank, cpLocal, src.N())}, nil
}

// draftGuard is ref.DraftGuard with running offsets.
func draftGuard(lay *spec.Layout, r int, cpLocal bool, n int) spec.DraftPadGuard {
	g := spec.DraftPadGuard{Rows: n, ValidMask: make([]bool, n)}
	if lay == nil || !cpLocal {
		for x := range g.ValidMask {
			g.ValidMask[x] = true
		}
		g.LastRows = []int{}
		if lay != nil {
			g.LastRows = make([]int, len(lay.L))
			base := 0
			for i, l := range lay.L {
				base += l
				g.LastRows[i] = base - 1
			}
		}
		return g
	}
	m := lay.Mirror(r)
	mirrorBase := 0
	for i := range lay.L {
		mirrorBase += lay.S[i][r]
	}
	g.LastRows = make([]int, len(lay.L))
	prevOff, mirrorOff := 0, mirrorBase
	for i, l := range lay.L {
		setAll(g.ValidMask[prevOff : prevOff+lay.V[i][r]])
		setAll(g.ValidMask[mirrorOff : mirrorOff+lay.V[i][m]])
		g.LastRows[i] = lastRowOn(lay.S[i], r, m, l-1, prevOff, mirrorOff)
		prevOff += lay.S[i][r]
		mirrorOff += lay.S[i][m]
	}
	return g
}

// setAll sets every flag of a slot's valid prefix.
func setAll(mask []bool) {
	for x := range mask {
		mask[x] = true
	}
}

// lastRowOn is the local row of token t of a request with segment sizes
// s on rank r (segments r and m), given its two slot offsets; −1 when t
// lies in another rank's segment.
func lastRowOn(s []int, r, m, t, prevOff, mirrorOff int) int {
	start := 0
	for k, size := range s {
		if t < start+size {
			switch k {
			case r:
				return prevOff + t - start
			case m:
				return mirrorOff + t - start
			}
			return -1
		}
		start += size
	}
	return -1
}
