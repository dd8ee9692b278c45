// Package estimatefault names the historic buffer-estimator bugs that the
// fast estimator can re-introduce for the bug zoo (equiv/mutants,
// docs/spec/admission-serving.md A2.8). The package is internal, so nothing outside
// kvtwin can construct Faults and production estimators never carry one.
package estimatefault

// Faults selects the re-introduced bugs; the zero value is the fixed estimator.
type Faults struct {
	// MQATermMissing is A2-B1: the fp32 MQA-logits temporary is left out of
	// the layer-forward peak and the total (the estimate before the seed
	// added it), so X2 reads 21,050,368 bytes and passes a 128 MiB gate.
	MQATermMissing bool
	// FullRequestQK is A2-B2: every rank is charged the whole batch's
	// query rows against its whole context (Q = ΣE, K = Σ(P+E)) instead of
	// its two zigzag segments, over-gating CP bs>1 batches.
	FullRequestQK bool
	// BothCapsRowWins is A2-B3: both chunk caps are accepted and the row
	// cap silently wins, instead of a configuration error.
	BothCapsRowWins bool
	// Rank0Only is A2-B4: the MQA peak is rank 0's, not the worst rank's.
	Rank0Only bool
}
