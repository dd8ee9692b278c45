package spec

// CPCompactValidInput is the input of cp.compact_valid (docs/spec/cp-layout.md §4.2 steps
// 1–2): a rank's local rows, to be compacted to its valid rows before MoE.
type CPCompactValidInput struct {
	// Layout names the CP layout.
	Layout LayoutSpec `json:"layout"`
	// Rank is the CP rank r, in [0, cp).
	Rank int `json:"rank"`
	// X holds rank r's R(r) cp-local-compute-padded rows.
	X Rows `json:"x"`
}

// CPRestorePaddedInput is the input of cp.restore_padded (docs/spec/cp-layout.md §4.2 step
// 4): the MoE's output on a rank's compacted rows, to be put back in place.
type CPRestorePaddedInput struct {
	// Layout names the CP layout.
	Layout LayoutSpec `json:"layout"`
	// Rank is the CP rank r, in [0, cp).
	Rank int `json:"rank"`
	// Y holds the Rv(r) rows f produced from the compacted rows, of any width W'.
	Y Rows `json:"y"`
}

// CPCompactValidOutput is the output of cp.compact_valid: rank r's valid
// rows, compacted.
type CPCompactValidOutput struct {
	// Rows is the result buffer.
	Rows Rows `json:"rows"`
}

// CPRestorePaddedOutput is the output of cp.restore_padded: rank r's local
// rows, the MoE's rows back in place and padding rows zero.
type CPRestorePaddedOutput struct {
	// Rows is the result buffer.
	Rows Rows `json:"rows"`
}

// ErrMoEShape: a MoE function returned a row count other than its input's
// (docs/spec/cp-layout.md §4.4's ErrShape, declared under this name by this file so as
// not to claim the family-wide ErrShape of §8).
var ErrMoEShape = NewSentinel("moe_shape", "MoE output row count differs from its input")
