package ref

import (
	"fmt"
	"math"
	"strconv"
)

// Validation for mqa.chunk_rows (docs/spec/cp-layout.md §8.1, §8.2, §8.4): chunk config, scalars and peak batch.

// ErrConfig: an invalid or ambiguous configuration knob (§8.1: both caps
// set, a cap that is not a positive finite number). §9 uses it too for the
// layer count and pipeline size, which the spec gives no sentinel of their own.
var ErrConfig = NewSentinel("config", "invalid configuration")

// checkMQAChunkConfig validates the caps (§8.1): not both, and each a
// positive finite number. A non-finite value is reported as its string.
func checkMQAChunkConfig(cfg MQAChunkConfig) error {
	if cfg.MaxRows != nil && cfg.MaxGB != nil {
		return Reject(ErrConfig, "config", "max_rows and max_gb", "at most one of max_rows and max_gb (mutually exclusive)")
	}
	if cfg.MaxRows != nil && *cfg.MaxRows <= 0 {
		return Reject(ErrConfig, "config.max_rows", *cfg.MaxRows, "> 0")
	}
	if cfg.MaxGB != nil {
		x := *cfg.MaxGB
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return Reject(ErrConfig, "config.max_gb", strconv.FormatFloat(x, 'g', -1, 64), "finite and > 0")
		}
		if x <= 0 {
			return Reject(ErrConfig, "config.max_gb", x, "> 0")
		}
	}
	return nil
}

// ValidateMQAChunkRows checks in, in the contract order: config, runtime
// budget, shapes, batch (layout, prefixes, then every rank's K rows). It
// returns the batch's layout (zero for a non-CP batch or none).
func ValidateMQAChunkRows(lim Limits, in MQAChunkRowsInput) (Layout, error) {
	lay, err := CheckMQAChunkRowsScalars(lim, in)
	if err != nil || in.Batch == nil {
		return lay, err
	}
	return lay, CheckMQAPeakK(mqaPeakShapes(lay, *in.Batch))
}

// CheckMQAChunkRowsScalars is ValidateMQAChunkRows without the bound on
// the batch's K rows, which needs the per-rank shapes (CheckMQAPeakK).
func CheckMQAChunkRowsScalars(lim Limits, in MQAChunkRowsInput) (Layout, error) {
	if err := checkMQAChunkConfig(in.Config); err != nil {
		return Layout{}, err
	}
	if rt := in.Runtime; rt != nil {
		if rt.FreeAtInit < 0 {
			return Layout{}, Reject(ErrNegative, "runtime.free_at_init", rt.FreeAtInit, ">= 0")
		}
		if rt.TotalMem < 0 {
			return Layout{}, Reject(ErrNegative, "runtime.total_mem", rt.TotalMem, ">= 0")
		}
	}
	for i, s := range in.Shapes {
		if err := checkLogitsDim(Idx("shapes", i)+".q", s.Q); err != nil {
			return Layout{}, err
		}
		if err := checkLogitsDim(Idx("shapes", i)+".k", s.K); err != nil {
			return Layout{}, err
		}
	}
	if in.Batch == nil {
		return Layout{}, nil
	}
	return checkPeakBatch(lim, *in.Batch)
}

// checkLogitsDim bounds a row count to [0, 2^31) (the CUDA int32 bound, §0.1).
func checkLogitsDim(field string, n int64) error {
	if n < 0 {
		return Reject(ErrNegative, field, n, ">= 0")
	}
	if n > MaxLayoutRows {
		return Reject(ErrTooLarge, field, n, fmt.Sprintf("<= %d rows", int64(MaxLayoutRows)))
	}
	return nil
}

// checkPeakBatch validates the batch: its layout (CP 0: the lengths only;
// else built within lim) and one non-negative prefix per request.
func checkPeakBatch(lim Limits, b MQAPeakBatch) (Layout, error) {
	var lay Layout
	var err error
	if b.Layout.CP == 0 {
		err = checkNonCPBatch(b.Layout)
	} else {
		lay, err = b.Layout.buildWithin(lim)
	}
	if err != nil {
		return Layout{}, underField("batch.layout.", err)
	}
	lens := b.Layout.Lens
	if len(b.Prefix) != len(lens) {
		return Layout{}, Reject(ErrLengthMismatch, "batch.prefix", len(b.Prefix), fmt.Sprintf("one per request (%d)", len(lens)))
	}
	if err := CheckNonNegative("batch.prefix", b.Prefix); err != nil {
		return Layout{}, err
	}
	return lay, nil
}

// CheckMQAPeakK rejects a batch whose K rows on some rank (the first such,
// in rank order) reach 2^31, the CUDA int32 bound.
func CheckMQAPeakK(shapes []MQALogitsShape) error {
	for r, s := range shapes {
		if s.K > MaxLayoutRows {
			return Reject(ErrTooLarge, "batch.prefix", s.K, fmt.Sprintf("K rows of rank %d <= %d", r, int64(MaxLayoutRows)))
		}
	}
	return nil
}

// checkNonCPBatch checks a non-CP batch's lengths with the layout's
// sentinels and bounds Σ L_i to 2^31.
func checkNonCPBatch(sp LayoutSpec) error {
	if sp.Granule != 0 {
		return Reject(ErrInvalidGranule, "granule", sp.Granule, "0 without CP")
	}
	if len(sp.Lens) == 0 {
		return Reject(ErrEmptyBatch, "lens", 0, ">= 1 request")
	}
	for i, l := range sp.Lens {
		if l < 1 {
			return Reject(ErrBadLength, Idx("lens", i), l, ">= 1")
		}
	}
	return checkRows("lens", sp.Lens, func(l int) int64 { return int64(l) })
}

// underField returns err with its input-error field placed under prefix,
// so a nested layout names its JSON path.
func underField(prefix string, err error) error {
	ie, ok := AsInputError(err)
	if !ok {
		return err
	}
	return Reject(ie.Err, prefix+ie.Field, ie.Value, ie.Bound)
}
