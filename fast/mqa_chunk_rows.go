package fast

import (
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// MQAChunkRows is the twin of ref.MQAChunkRows (docs/spec/cp-layout.md §8.2, §8.4).
// The per-shape rule is ref.chunkRows itself (a handful of integer
// operations: there is nothing to optimise, and one definition keeps the
// runtime and the estimator on the same formula, as §8.4 demands). What
// differs is the CP peak: the reference recomputes SegStart for every rank
// and piece (O(cp²) per request); this walks each request's segments once
// and credits both pieces of every rank in the same pass, with one
// allocation for the rank shapes.
func MQAChunkRows(lim spec.Limits, in spec.MQAChunkRowsInput) (spec.MQAChunkRowsOutput, error) {
	lay, err := ref.CheckMQAChunkRowsScalars(lim, in)
	if err != nil {
		return spec.MQAChunkRowsOutput{}, err
	}
	out := spec.MQAChunkRowsOutput{Shapes: make([]spec.MQAChunkPlan, len(in.Shapes)), Ranks: []spec.MQAChunkPlan{}}
	for i, s := range in.Shapes {
		out.Shapes[i] = ref.MQAPlanOf(s, in.Config, in.Runtime)
	}
	if in.Batch == nil {
		return out, nil
	}
	shapes := peakShapes(lay, *in.Batch)
	if err := ref.CheckMQAPeakK(shapes); err != nil {
		return spec.MQAChunkRowsOutput{}, err
	}
	out.Ranks = make([]spec.MQAChunkPlan, len(shapes))
	for r, s := range shapes {
		out.Ranks[r] = ref.MQAPlanOf(s, in.Config, in.Runtime)
		out.AdmissionPeak = max(out.AdmissionPeak, out.Ranks[r].PeakBytes)
	}
	return out, nil
}

// peakShapes is ref.mqaPeakShapes in one pass per request: segment k's end
// is the running sum of S, and its K piece P_i + min(end, L_i) goes to its
// owner (k for the PREV lane, 2·cp−1−k for the MIRROR lane), which also
// holds its S_i,k query rows.
func peakShapes(lay spec.Layout, b spec.MQAPeakBatch) []spec.MQALogitsShape {
	if lay.CP == 0 {
		var s spec.MQALogitsShape
		for i, l := range b.Layout.Lens {
			s.Q += int64(l)
			s.K = addSat(s.K, addSat(b.Prefix[i], int64(l)))
		}
		return []spec.MQALogitsShape{s}
	}
	shapes := make([]spec.MQALogitsShape, lay.CP)
	ns := 2 * lay.CP
	for i, l := range lay.L {
		p, end := b.Prefix[i], 0
		for k, s := range lay.S[i][:ns] {
			end += s
			r := k
			if k >= lay.CP {
				r = ns - 1 - k
			}
			shapes[r].Q += int64(s)
			shapes[r].K = addSat(shapes[r].K, addSat(p, int64(min(end, l))))
		}
	}
	return shapes
}

// addSat adds non-negative a and b, saturating at MaxInt64 (as the
// reference does, so an oversized batch is rejected, not wrapped).
func addSat(a, b int64) int64 {
	if a > 1<<63-1-b {
		return 1<<63 - 1
	}
	return a + b
}
