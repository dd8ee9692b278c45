package fault

// Estimate selects the historic prefill buffer-estimator bugs
// (docs/spec/admission-serving.md §A2.8) that
// Hooks.AdmissionEstimate puts back; the zero value is the fixed
// estimator. A2-B3 (both chunk caps, the row cap wins) is a wrapper in
// equiv/mutants: it rewrites the input's chunk config.
type Estimate struct {
	// MQATermMissing is docs/spec/admission-serving.md §A2.8 A2-B1: the fp32
	// MQA-logits temporary is left out of the layer-forward peak and the
	// total (the estimate before the seed added it), so X2 reads 21,050,368
	// bytes and passes a 128 MiB gate.
	MQATermMissing bool
	// FullRequestQK is docs/spec/admission-serving.md §A2.8 A2-B2: every
	// rank is charged the whole batch's query rows against its whole context
	// (Q = ΣE, K = Σ(P+E)) instead of its two zigzag segments, over-gating
	// CP bs>1 batches.
	FullRequestQK bool
	// Rank0Only is docs/spec/admission-serving.md §A2.8 A2-B4: the MQA peak
	// is rank 0's, not the worst rank's.
	Rank0Only bool
}
