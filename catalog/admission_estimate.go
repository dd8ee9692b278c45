package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// AdmissionEstimate registers admission.estimate (docs/spec/admission-serving.md A2, A1.9 C5).
func AdmissionEstimate() *Op[spec.AdmissionEstimateInput, spec.AdmissionEstimateOutput] {
	limit := int64(128 << 20)
	return &Op[spec.AdmissionEstimateInput, spec.AdmissionEstimateOutput]{
		OpName:  "admission.estimate",
		SpecRef: "admission-serving.md A2",
		Summary: "CPU-only estimate of a CP shared-KV prefill batch's temporary GPU buffers (per-rank fp32 MQA-logits peak included) and the max-buffer-size gate",
		Ref:     ref.AdmissionEstimate,
		Fast:    fast.AdmissionEstimate,
		// A2.5 X2: two X1 requests, 423,703,552 bytes, over 128 MiB, so the
		// second request stops with cp_max_buffer_size.
		Sample: spec.AdmissionEstimateInput{
			Context:            EstimatorA25Context(2),
			Requests:           []spec.EstimateReq{{PrefixLen: 8192, ExtendLen: 4096}, {PrefixLen: 8192, ExtendLen: 4096}},
			MaxBufferSizeBytes: &limit,
		},
		Shapes: []Shape[spec.AdmissionEstimateInput]{
			{Name: "cp8-bs10-high-hit", Make: func() spec.AdmissionEstimateInput { return estimateBatch(8, 10) }},
			{Name: "cp8-bs64-high-hit", Make: func() spec.AdmissionEstimateInput { return estimateBatch(8, 64) }},
		},
	}
}

// EstimatorA25Context is A2.5's context at CP size c: page 64, 656/132-byte
// rows, vocab 154880, transfer on with 79 layers, no chunk cap.
func EstimatorA25Context(c int64) spec.EstimatorContext {
	ctx := ref.DefaultEstimatorContext(spec.DefaultEstimatorPageSize, c)
	ctx.TransferEnabled, ctx.TransferLayers = true, 79
	return ctx
}

// estimateBatch is a high-cache-hit CP batch of bs requests: extends of
// 64..8K tokens behind prefixes of 4K..128K, under a 2 GiB limit and a
// 1 GiB chunk cap (the shape the admission hot path prices).
func estimateBatch(cp, bs int) spec.AdmissionEstimateInput {
	limit, gb := int64(2<<30), 1.0
	in := spec.AdmissionEstimateInput{Context: EstimatorA25Context(int64(cp)), MaxBufferSizeBytes: &limit}
	in.Context.Chunk.MaxGB = &gb
	for i := range bs {
		in.Requests = append(in.Requests, spec.EstimateReq{
			PrefixLen: int64(4096 + (i*40961)%(124<<10)),
			ExtendLen: int64(64 + (i*1237)%8128),
		})
	}
	return in
}
