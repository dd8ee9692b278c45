package spec

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
