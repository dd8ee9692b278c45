package ref

import (
	"fmt"
	"math"
	"strconv"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for admission.estimate (docs/spec/admission-serving.md A2): estimator context, chunk settings and requests.

// CheckEstimatorContext checks ctx in field order (A2.7) with JSON
// paths under "context.": page size, CP size, the byte constants and
// vocabulary (>= 1), the logit rows and transfer layers (>= 0), then the
// chunk caps.
func CheckEstimatorContext(ctx spec.EstimatorContext) error {
	if ctx.PageSize < 1 {
		return spec.Reject(spec.ErrInvalidPageSize, "context.page_size", ctx.PageSize, ">= 1")
	}
	if ctx.CPSize < 1 {
		return spec.Reject(spec.ErrBadCPSize, "context.cp_size", ctx.CPSize, ">= 1")
	}
	if ctx.CPSize > spec.MaxCP {
		return spec.Reject(spec.ErrInvalidCPSize, "context.cp_size", ctx.CPSize, fmt.Sprintf("<= %d (MaxCP)", spec.MaxCP))
	}
	atLeastOne := []struct {
		field string
		v     int64
	}{
		{"context.mla_row_bytes", ctx.MLARowBytes},
		{"context.index_row_bytes", ctx.IndexRowBytes},
		{"context.vocab_size", ctx.VocabSize},
	}
	for _, f := range atLeastOne {
		if f.v < 1 {
			return spec.Reject(spec.ErrEstimatorParam, f.field, f.v, ">= 1")
		}
	}
	if ctx.LogitRowsPerReq < 0 {
		return spec.Reject(spec.ErrNegative, "context.logit_rows_per_req", ctx.LogitRowsPerReq, ">= 0")
	}
	if ctx.TransferLayers < 0 {
		return spec.Reject(spec.ErrNegative, "context.transfer_layers", ctx.TransferLayers, ">= 0")
	}
	for _, f := range []struct {
		field string
		v     int64
	}{
		{"context.descriptor_bytes", ctx.DescriptorBytes},
		{"context.page_descriptor_bytes", ctx.PageDescriptorBytes},
		{"context.row_remap_bytes", ctx.RowRemapBytes},
	} {
		if f.v < 1 {
			return spec.Reject(spec.ErrEstimatorParam, f.field, f.v, ">= 1")
		}
	}
	return checkEstimatorChunk("context.chunk", ctx.Chunk)
}

// checkEstimatorChunk validates the chunk caps under A2.7: not both (the
// seed rejected a silent precedence), a row cap >= 1, a GiB cap positive,
// finite and at least one byte once converted (int(g·2^30) >= 1). A
// non-finite value is reported as its string, since JSON cannot carry it.
func checkEstimatorChunk(field string, c spec.MQAChunkConfig) error {
	if c.MaxRows != nil && c.MaxGB != nil {
		return spec.Reject(spec.ErrConfig, field, "max_rows and max_gb",
			envMQAChunkMaxRows+" and "+envMQAChunkMaxGB+" are mutually exclusive; set one")
	}
	if c.MaxRows != nil && *c.MaxRows < 1 {
		return spec.Reject(spec.ErrConfig, field+".max_rows", *c.MaxRows, "an integer >= 1 ("+envMQAChunkMaxRows+")")
	}
	if c.MaxGB == nil {
		return nil
	}
	g := *c.MaxGB
	switch {
	case math.IsNaN(g) || math.IsInf(g, 0):
		return spec.Reject(spec.ErrConfig, field+".max_gb", strconv.FormatFloat(g, 'g', -1, 64), "a positive finite number ("+envMQAChunkMaxGB+")")
	case g <= 0:
		return spec.Reject(spec.ErrConfig, field+".max_gb", g, "a positive finite number ("+envMQAChunkMaxGB+")")
	case g < 1.0/(1<<30):
		// g·2^30 < 1 exactly (scaling by a power of two is exact here).
		return spec.Reject(spec.ErrConfig, field+".max_gb", g, "int(max_gb·2^30) >= 1 byte ("+envMQAChunkMaxGB+" is too small)")
	}
	return nil
}

// CheckEstimateReqs rejects the first request (in order) with a negative
// prefix or extend length, prefix first.
func CheckEstimateReqs(reqs []spec.EstimateReq) error {
	for i, r := range reqs {
		if err := CheckEstimateReq(i, r); err != nil {
			return err
		}
	}
	return nil
}

// CheckEstimateReq rejects request r at index i of the batch when a length
// is negative (A2.7), naming requests[i].prefix_len or .extend_len.
func CheckEstimateReq(i int, r spec.EstimateReq) error {
	if r.PrefixLen < 0 {
		return spec.Reject(spec.ErrNegative, spec.Idx("requests", i)+".prefix_len", r.PrefixLen, ">= 0")
	}
	if r.ExtendLen < 0 {
		return spec.Reject(spec.ErrNegative, spec.Idx("requests", i)+".extend_len", r.ExtendLen, ">= 0")
	}
	return nil
}

// ValidateAdmissionEstimate checks everything but overflow, in the
// contract order: context, the output's size under lim (per_rank has
// cp_size entries), the gate's limit, then the requests.
func ValidateAdmissionEstimate(lim spec.Limits, in spec.AdmissionEstimateInput) error {
	if err := CheckEstimatorContext(in.Context); err != nil {
		return err
	}
	if err := lim.CheckOutput("context.cp_size", in.Context.CPSize, rankMQABytes); err != nil {
		return err
	}
	if m := in.MaxBufferSizeBytes; m != nil && *m < 1 {
		return spec.Reject(spec.ErrEstimatorParam, "max_buffer_size_bytes", *m, ">= 1")
	}
	return CheckEstimateReqs(in.Requests)
}
