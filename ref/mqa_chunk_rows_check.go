package ref

import (
	"fmt"
	"math"
	"strconv"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for mqa.chunk_rows (docs/spec/cp-layout.md §8.1, §8.2, §8.4): chunk config, scalars and peak batch.

// checkMQAChunkConfig validates the caps (§8.1): not both, and each a
// positive finite number. A non-finite value is reported as its string.
func checkMQAChunkConfig(cfg spec.MQAChunkConfig) error {
	if cfg.MaxRows != nil && cfg.MaxGB != nil {
		return spec.Reject(spec.ErrConfig, "config", "max_rows and max_gb", "at most one of max_rows and max_gb (mutually exclusive)")
	}
	if cfg.MaxRows != nil && *cfg.MaxRows <= 0 {
		return spec.Reject(spec.ErrConfig, "config.max_rows", *cfg.MaxRows, "> 0")
	}
	if cfg.MaxGB != nil {
		x := *cfg.MaxGB
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return spec.Reject(spec.ErrConfig, "config.max_gb", strconv.FormatFloat(x, 'g', -1, 64), "finite and > 0")
		}
		if x <= 0 {
			return spec.Reject(spec.ErrConfig, "config.max_gb", x, "> 0")
		}
	}
	return nil
}

// ValidateMQAChunkRows checks in, in the contract order: config, runtime
// budget, shapes, batch (layout, prefixes, then every rank's K rows). It
// returns the batch's layout (zero for a non-CP batch or none).
func ValidateMQAChunkRows(lim spec.Limits, in spec.MQAChunkRowsInput) (spec.Layout, error) {
	lay, err := CheckMQAChunkRowsScalars(lim, in)
	if err != nil || in.Batch == nil {
		return lay, err
	}
	return lay, CheckMQAPeakK(mqaPeakShapes(lay, *in.Batch))
}

// CheckMQAChunkRowsScalars is ValidateMQAChunkRows without the bound on
// the batch's K rows, which needs the per-rank shapes (CheckMQAPeakK).
func CheckMQAChunkRowsScalars(lim spec.Limits, in spec.MQAChunkRowsInput) (spec.Layout, error) {
	if err := checkMQAChunkConfig(in.Config); err != nil {
		return spec.Layout{}, err
	}
	if rt := in.Runtime; rt != nil {
		if rt.FreeAtInit < 0 {
			return spec.Layout{}, spec.Reject(spec.ErrNegative, "runtime.free_at_init", rt.FreeAtInit, ">= 0")
		}
		if rt.TotalMem < 0 {
			return spec.Layout{}, spec.Reject(spec.ErrNegative, "runtime.total_mem", rt.TotalMem, ">= 0")
		}
	}
	for i, s := range in.Shapes {
		if err := checkLogitsDim(spec.Idx("shapes", i)+".q", s.Q); err != nil {
			return spec.Layout{}, err
		}
		if err := checkLogitsDim(spec.Idx("shapes", i)+".k", s.K); err != nil {
			return spec.Layout{}, err
		}
	}
	if in.Batch == nil {
		return spec.Layout{}, nil
	}
	return checkPeakBatch(lim, *in.Batch)
}

// checkLogitsDim bounds a row count to [0, 2^31) (the CUDA int32 bound, §0.1).
func checkLogitsDim(field string, n int64) error {
	if n < 0 {
		return spec.Reject(spec.ErrNegative, field, n, ">= 0")
	}
	if n > spec.MaxLayoutRows {
		return spec.Reject(spec.ErrTooLarge, field, n, fmt.Sprintf("<= %d rows", int64(spec.MaxLayoutRows)))
	}
	return nil
}

// checkPeakBatch validates the batch: its layout (CP 0: the lengths only;
// else built within lim) and one non-negative prefix per request.
func checkPeakBatch(lim spec.Limits, b spec.MQAPeakBatch) (spec.Layout, error) {
	var lay spec.Layout
	var err error
	if b.Layout.CP == 0 {
		err = checkNonCPBatch(b.Layout)
	} else {
		lay, err = b.Layout.BuildWithin(lim)
	}
	if err != nil {
		return spec.Layout{}, underField("batch.layout.", err)
	}
	lens := b.Layout.Lens
	if len(b.Prefix) != len(lens) {
		return spec.Layout{}, spec.Reject(spec.ErrLengthMismatch, "batch.prefix", len(b.Prefix), fmt.Sprintf("one per request (%d)", len(lens)))
	}
	if err := CheckNonNegative("batch.prefix", b.Prefix); err != nil {
		return spec.Layout{}, err
	}
	return lay, nil
}

// CheckMQAPeakK rejects a batch whose K rows on some rank (the first such,
// in rank order) reach 2^31, the CUDA int32 bound.
func CheckMQAPeakK(shapes []spec.MQALogitsShape) error {
	for r, s := range shapes {
		if s.K > spec.MaxLayoutRows {
			return spec.Reject(spec.ErrTooLarge, "batch.prefix", s.K, fmt.Sprintf("K rows of rank %d <= %d", r, int64(spec.MaxLayoutRows)))
		}
	}
	return nil
}

// checkNonCPBatch checks a non-CP batch's lengths with the layout's
// sentinels and bounds Σ L_i to 2^31.
func checkNonCPBatch(sp spec.LayoutSpec) error {
	if sp.Granule != 0 {
		return spec.Reject(spec.ErrInvalidGranule, "granule", sp.Granule, "0 without CP")
	}
	if len(sp.Lens) == 0 {
		return spec.Reject(spec.ErrEmptyBatch, "lens", 0, ">= 1 request")
	}
	for i, l := range sp.Lens {
		if l < 1 {
			return spec.Reject(spec.ErrBadLength, spec.Idx("lens", i), l, ">= 1")
		}
	}
	return spec.CheckLayoutRows("lens", sp.Lens, func(l int) int64 { return int64(l) })
}

// underField returns err with its input-error field placed under prefix,
// so a nested layout names its JSON path.
func underField(prefix string, err error) error {
	ie, ok := spec.AsInputError(err)
	if !ok {
		return err
	}
	return spec.Reject(ie.Err, prefix+ie.Field, ie.Value, ie.Bound)
}
