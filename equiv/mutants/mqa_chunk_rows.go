package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// FullRequestAccounting is docs/spec/cp-layout.md §8.6 bug 1: CP admission estimated
// the MQA logits from whole requests (Q = Σ L, K = Σ (P + L)) as if every
// rank computed them, over-gating CP bs>1 batches; the fused CP path only
// materialises each rank's two zigzag segments.
func FullRequestAccounting() equiv.Killable {
	return &equiv.Mutant[spec.MQAChunkRowsInput, spec.MQAChunkRowsOutput]{
		Spec:    equiv.MQAChunkRows(),
		ID:      "full-request-accounting",
		Section: "cp-layout.md §8.6",
		About:   "CP admission peak from full-request rows (Q = ΣL, K = Σ(P+L)) instead of each rank's two segments",
		Fn: func(lim spec.Limits, in spec.MQAChunkRowsInput) (spec.MQAChunkRowsOutput, error) {
			out, err := fast.MQAChunkRows(lim, in)
			if err != nil || in.Batch == nil || in.Batch.Layout.CP == 0 {
				return out, err
			}
			var full spec.MQALogitsShape // the bug: the CP layout is ignored
			for i, l := range in.Batch.Layout.Lens {
				full.Q += int64(l)
				full.K += in.Batch.Prefix[i] + int64(l)
			}
			p := ref.MQAPlanOf(full, in.Config, in.Runtime)
			for r := range out.Ranks {
				out.Ranks[r] = p
			}
			out.AdmissionPeak = p.PeakBytes
			return out, nil
		},
	}
}

// EstimatorIgnoresChunkCap is docs/spec/cp-layout.md §8.6 bug 3: before the row cap
// was honoured, the scheduler estimator assumed the full extend-row count
// even with SGLANG_NSA_MQA_LOGITS_CHUNK_MAX_ROWS set.
func EstimatorIgnoresChunkCap() equiv.Killable {
	return &equiv.Mutant[spec.MQAChunkRowsInput, spec.MQAChunkRowsOutput]{
		Spec:    equiv.MQAChunkRows(),
		ID:      "estimator-ignores-chunk-cap",
		Section: "cp-layout.md §8.6",
		About:   "the scheduler estimator plans min(Q, Q) rows with max_rows set, instead of min(Q, max_rows)",
		Fn: func(lim spec.Limits, in spec.MQAChunkRowsInput) (spec.MQAChunkRowsOutput, error) {
			if _, err := ref.ValidateMQAChunkRows(lim, in); err != nil || in.Runtime != nil {
				return fast.MQAChunkRows(lim, in)
			}
			in.Config.MaxRows = nil // the bug: the estimator never read the cap
			return fast.MQAChunkRows(lim, in)
		},
	}
}
