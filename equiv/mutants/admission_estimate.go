package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/spec"
)

// estimateMutant is the fast estimator with one A2.8 bug put back: fn is a
// wrapper around fast.AdmissionEstimate or a switch through
// fault.Installed().AdmissionEstimate.
func estimateMutant(id, about string, fn func(spec.Limits, spec.AdmissionEstimateInput) (spec.AdmissionEstimateOutput, error)) equiv.Killable {
	return &equiv.Mutant[spec.AdmissionEstimateInput, spec.AdmissionEstimateOutput]{
		Spec:    equiv.AdmissionEstimate(),
		ID:      id,
		Section: "admission-serving.md A2.8",
		About:   about,
		Fn:      fn,
	}
}

// estimateSwitch is fault.Installed().AdmissionEstimate with f.
func estimateSwitch(f fault.Estimate) func(spec.Limits, spec.AdmissionEstimateInput) (spec.AdmissionEstimateOutput, error) {
	return switched(fault.Installed().AdmissionEstimate, f)
}

// EstimateMQATermMissing is A2-B1: the estimate before the seed added the
// fp32 MQA-logits temporary, so two X1 requests read 21,050,368 bytes and
// pass a 128 MiB gate the fixed estimate (423,703,552) stops (OOM risk).
func EstimateMQATermMissing() equiv.Killable {
	return estimateMutant("estimate-mqa-term-missing",
		"the fp32 MQA-logits peak is left out of the layer-forward peak and the total",
		estimateSwitch(fault.Estimate{MQATermMissing: true}))
}

// EstimateFullRequestQK is A2-B2: every rank charged Σ E query rows against
// Σ (P+E) context rows, as if CP did not split the extend: two X1 requests
// read 826,356,736 bytes and a 512 MiB gate refuses what fits (423,703,552).
func EstimateFullRequestQK() equiv.Killable {
	return estimateMutant("estimate-full-request-qk",
		"full-request q×k (Q = ΣE, K = Σ(P+E)) on every rank instead of its two zigzag segments",
		estimateSwitch(fault.Estimate{FullRequestQK: true}))
}

// EstimateBothCapsRowWins is A2-B3: both chunk caps accepted, the row cap
// silently winning, where the seed made the pair a configuration error. A
// wrapper: with both caps set the GiB cap is dropped from the input before
// fast.AdmissionEstimate sees it.
func EstimateBothCapsRowWins() equiv.Killable {
	return estimateMutant("estimate-both-caps-row-wins",
		"MAX_ROWS and MAX_GB both accepted, the row cap silently wins, instead of a configuration error",
		func(lim spec.Limits, in spec.AdmissionEstimateInput) (spec.AdmissionEstimateOutput, error) {
			if c := &in.Context.Chunk; c.MaxRows != nil && c.MaxGB != nil {
				c.MaxGB = nil // in is a copy; the caller's config is untouched
			}
			return fast.AdmissionEstimate(lim, in)
		})
}

// EstimateRank0Only is A2-B4: the MQA peak taken from rank 0 alone; X4's
// worst rank is 1 (800,056 bytes against rank 0's 400,028).
func EstimateRank0Only() equiv.Killable {
	return estimateMutant("estimate-rank0-only",
		"the MQA-logits peak is rank 0's instead of the worst rank's",
		estimateSwitch(fault.Estimate{Rank0Only: true}))
}
