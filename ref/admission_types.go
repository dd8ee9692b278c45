package ref

// Shared types, validation and arithmetic of the prefill adder and its round
// driver (docs/spec/admission-serving.md §A1). Both twins take and return these types
// and call ValidateAdmissionRound, so they reject bad input with byte-equal errors.

import (
	"fmt"
	"strings"

	"github.com/kvtwin/kvtwin/spec"
)

// Stop details (§A1.10).
const (
	// detailNone: no stop (Continue).
	detailNone spec.StopDetail = ""
)

const (
	// admissionClip is SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION (§A1.3).
	admissionClip = 4096
	// admissionLoadBackThreshold is hiradix_cache's load_back_threshold (§A1.6 step 5).
	admissionLoadBackThreshold = 10
)

// CeilPage is ceil(x/ps)·ps for x >= 0 (§0).
func CeilPage(x, ps int64) int64 { return (x + ps - 1) / ps * ps }

// FloorPage is floor(x/ps)·ps with floor (Python //) division, defined for
// negative x too (§0): FloorPage(-24, 64) = -64.
func FloorPage(x, ps int64) int64 {
	q := x / ps
	if x%ps != 0 && x < 0 {
		q--
	}
	return q * ps
}

// RunningOffset is min(MaxNewTokens − OutputLen, CLIP) · ratio (§A1.3).
func RunningOffset(r spec.RunningReq, ratio float64) float64 {
	return float64(min(r.MaxNewTokens-r.OutputLen, admissionClip)) * ratio
}

// ChargeMaxNew is min(MaxNewTokens, CLIP): an admitted request's full decode reservation (§A1.5).
func ChargeMaxNew(maxNew int64) int64 { return min(maxNew, admissionClip) }

// TotalTokens is §A1.6 step 2's ExtendLen + min(max(MaxNewTokens−OutputLen, 0), CLIP).
func TotalTokens(extend int64, r *spec.Request) int64 {
	return extend + min(max(r.MaxNewTokens-r.OutputLen, 0), admissionClip)
}

// LoadBackOK is §A1.6 step 5's all-or-nothing rule: hit >= 10, within the
// pool and (bench) within the fake L2 capacity (nil = unlimited).
func LoadBackOK(hit int64, pool spec.PoolState, l2Left *int64) bool {
	return hit >= admissionLoadBackThreshold && hit <= pool.Available+pool.Evictable && (l2Left == nil || hit <= *l2Left)
}

// ApplyLoadBack takes hit slots from Available first and evicts the rest (§A1.6 step 5).
func ApplyLoadBack(pool *spec.PoolState, hit int64) {
	take := min(hit, pool.Available)
	pool.Available -= take
	pool.Evictable -= hit - take
}

// InitialBudgets computes §A1.4 and C1 from a validated config.
func InitialBudgets(cfg spec.AdderConfig) spec.Budgets {
	b := spec.Budgets{RemInput: cfg.MaxPrefillTokens - cfg.MixedDecodeTokens}
	if c := cfg.ChunkedPrefillSize; c != nil && *c > 0 {
		v := *c - cfg.MixedDecodeTokens
		b.RemChunk = &v
	}
	if cfg.CP == nil {
		return b
	}
	user := cfg.CP.MaxTotalExtendTokens
	switch {
	case user == nil && b.RemChunk != nil:
		v := *b.RemChunk
		b.EffLimit = &v
	case user != nil && b.RemChunk == nil:
		v := *user
		b.EffLimit = &v
	case user != nil:
		v := min(*user, *b.RemChunk)
		b.EffLimit = &v
	}
	if b.EffLimit != nil {
		b.RemInput = max(b.RemInput, *b.EffLimit)
	}
	return b
}

// BufferEstimatorOf returns the estimator gate C5 uses: cp.Estimator, else
// A2's estimator over cp.EstimatorContext, else the linear model, else nil
// (gate off).
func BufferEstimatorOf(cp *spec.CPAdmission) spec.BufferEstimator {
	switch {
	case cp == nil || cp.MaxBufferSizeBytes == nil:
		return nil
	case cp.Estimator != nil:
		return cp.Estimator
	case cp.EstimatorContext != nil:
		return a2Estimator(*cp.EstimatorContext)
	case cp.BufferModel != nil:
		return cp.BufferModel.Estimate
	}
	return nil
}

// SingleOversizedWarning is §A1.9's WARNING record for a lone request whose
// own estimate exceeds the max buffer size.
func SingleOversizedWarning(rid string, estimate, maxBytes int64) string {
	return fmt.Sprintf("cp shared-kv prefill: single request rid=%s estimate=%d bytes exceeds max-buffer-size=%d; admitting alone", rid, estimate, maxBytes)
}

// a2Estimator adapts A2's estimator to gate C5: the batch's
// EstimateBuffers(ctx, batch).TotalBytes. ctx must be valid
// (CheckEstimatorContext); an overflow is EstimateBuffers' error.
func a2Estimator(ctx spec.EstimatorContext) spec.BufferEstimator {
	return func(batch []spec.PlannedEntry) (int64, error) {
		reqs := make([]spec.EstimateReq, len(batch))
		for i, e := range batch {
			reqs[i] = spec.EstimateReq{PrefixLen: e.PrefixLen, ExtendLen: e.RunExtend}
		}
		est, err := EstimateBuffers(ctx, reqs)
		return est.TotalBytes, err
	}
}

// reroot returns err with its JSON path's prefix from replaced by to, so a
// nested validator's error names the field where the caller's input holds
// it. Errors that are not input errors, or whose path lacks the prefix,
// are returned as they are.
func reroot(err error, from, to string) error {
	ie, ok := spec.AsInputError(err)
	if !ok || !strings.HasPrefix(ie.Field, from) {
		return err
	}
	return spec.Reject(ie.Err, to+strings.TrimPrefix(ie.Field, from), ie.Value, ie.Bound)
}

// NextChunked is the request to pass as AdmissionRoundInput.Chunked next round:
// the round's chunked entry (new or continuing) with its prefix grown by
// the tokens it ran, nothing to load back and its own lock. It returns nil
// when the round left no request chunked. in must be the round's input and
// out its accepted result.
func NextChunked(in spec.AdmissionRoundInput, out spec.AdmissionRoundOutput) *spec.Request {
	if out.NextChunkedRID == "" {
		return nil
	}
	var src *spec.Request
	if in.Chunked != nil && in.Chunked.RID == out.NextChunkedRID {
		src = in.Chunked
	}
	for i := range in.Queue {
		if in.Queue[i].RID == out.NextChunkedRID {
			src = &in.Queue[i]
		}
	}
	if src == nil {
		return nil
	}
	next := *src
	for _, a := range out.Admitted {
		if a.RID == out.NextChunkedRID {
			next.L1Prefix, next.L1PrefixEvictable, next.HostHit = a.PrefixLen+a.RunExtend, 0, 0
		}
	}
	return &next // a continuing chunk that could not run carries over unchanged
}
