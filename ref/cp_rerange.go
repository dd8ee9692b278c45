package ref

// SrcKind says what each rank contributed to an all-gather (docs/spec/cp-layout.md §3.1).
type SrcKind string

const (
	// SrcCompute: each rank sent its R(r) compute rows, padding included.
	SrcCompute SrcKind = "compute"
	// SrcValid: each rank sent its Rv(r) already-selected valid rows (§7).
	SrcValid SrcKind = "valid"
)

// CPRerangeInput is the input of cp.rerange (docs/spec/cp-layout.md §3.1).
type CPRerangeInput struct {
	// Layout names the CP layout.
	Layout LayoutSpec `json:"layout"`
	// G holds the rank-major gathered rows, cp·M rows: rank r's payload at
	// [r·M, r·M + n_r), static all-gather padding after it.
	G Rows `json:"g"`
	// M is the all-gather stride in rows, >= max_r n_r.
	M int `json:"m"`
	// Src is compute (default when empty) or valid.
	Src SrcKind `json:"src,omitempty"`
}

// CPRerangeOutput is the batch in global valid order.
type CPRerangeOutput struct {
	// Rows holds Σ L_i rows, request-major, token order.
	Rows Rows `json:"rows"`
}

// RankPayload is n_r, the rows rank r contributes under src: R(r) for
// compute, Rv(r) for valid.
func (lay Layout) RankPayload(r int, src SrcKind) int {
	if src == SrcValid {
		return lay.Rv(r)
	}
	return lay.R(r)
}

// CPRerange is cp.rerange (docs/spec/cp-layout.md §3).
func CPRerange(lim Limits, in CPRerangeInput) (CPRerangeOutput, error) {
	lay, src, err := ValidateCPRerange(lim, in)
	if err != nil {
		return CPRerangeOutput{}, err
	}
	rows, err := Rerange(lay, in.G, in.M, src)
	return CPRerangeOutput{Rows: rows}, err
}

// Rerange restores global valid order from rank-major gathered rows
// (docs/spec/cp-layout.md §3.2). With SS = S for compute and V for valid, for every
// rank r, lane (k = r, then m(r)) and request i it copies V[i][k] rows from
// srcStart = r·M + laneBase + Σ_{j<i} SS[j][k] (source offsets from the
// sizes the rank *sent*) to dstStart = OutBase(i) + Σ_{k'<k} V[i][k']
// (placement from valid sizes). Taking source offsets from V when the rank
// sent S is the historic bug of §3.6.
func Rerange(lay Layout, g Rows, m int, src SrcKind) (Rows, error) {
	if err := CheckGathered(lay, g, m, src); err != nil {
		return Rows{}, err
	}
	ss := lay.S
	if src == SrcValid {
		ss = lay.V
	}
	out := NewRows(g.W, lay.TotalValid())
	for r := range lay.CP {
		for _, k := range lay.Lanes(r) {
			laneBase := 0
			if lay.LaneOf(k) == LaneMirror {
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
func validBefore(lay Layout, i, k int) int {
	n := 0
	for _, v := range lay.V[i][:k] {
		n += v
	}
	return n
}
