package ref

import "github.com/kvtwin/kvtwin/spec"

// CPRerange is cp.rerange (docs/spec/cp-layout.md §3).
func CPRerange(lim spec.Limits, in spec.CPRerangeInput) (spec.CPRerangeOutput, error) {
	lay, src, err := ValidateCPRerange(lim, in)
	if err != nil {
		return spec.CPRerangeOutput{}, err
	}
	rows, err := Rerange(lay, in.G, in.M, src)
	return spec.CPRerangeOutput{Rows: rows}, err
}

// Rerange restores global valid order from rank-major gathered rows
// (docs/spec/cp-layout.md §3.2). With SS = S for compute and V for valid, for every
// rank r, lane (k = r, then m(r)) and request i it copies V[i][k] rows from
// srcStart = r·M + laneBase + Σ_{j<i} SS[j][k] (source offsets from the
// sizes the rank *sent*) to dstStart = OutBase(i) + Σ_{k'<k} V[i][k']
// (placement from valid sizes). Taking source offsets from V when the rank
// sent S is the historic bug of §3.6.
func Rerange(lay spec.Layout, g spec.Rows, m int, src spec.SrcKind) (spec.Rows, error) {
	if err := CheckGathered(lay, g, m, src); err != nil {
		return spec.Rows{}, err
	}
	ss := lay.S
	if src == spec.SrcValid {
		ss = lay.V
	}
	out := NewRows(g.W, lay.TotalValid())
	for r := range lay.CP {
		for _, k := range lay.Lanes(r) {
			laneBase := 0
			if lay.LaneOf(k) == spec.LaneMirror {
				laneBase = sumBefore(ss, lay.B(), r)
			}
			for i := range lay.L {
				srcStart := r*m + laneBase + sumBefore(ss, i, k)
				dstStart := lay.OutBase(i) + validBefore(lay, i, k)
				for p := range lay.V[i][k] {
					copy(out.Row(dstStart+p), g.Row(srcStart+p))
				}
			}
		}
	}
	return out, nil
}

// sumBefore is Σ_{j<i} sizes[j][k].
func sumBefore(sizes [][]int, i, k int) int {
	n := 0
	for j := range i {
		n += sizes[j][k]
	}
	return n
}

// validBefore is Σ_{k'<k} V[i][k'], segment k's first row in request i's
// valid rows.
func validBefore(lay spec.Layout, i, k int) int {
	n := 0
	for _, v := range lay.V[i][:k] {
		n += v
	}
	return n
}
