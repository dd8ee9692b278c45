package ref

import (
	"fmt"
	"math"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for admission.round (docs/spec/admission-serving.md §A1): sentinels, bounds, ValidateAdmissionRound and validateRequest.

// ValidateAdmissionRound checks a round's input in a fixed order (config, CP knobs,
// pool, running, chunked, queue; each request field by field, then its rid
// against earlier ones) and returns the first violation (§A1.14). Both
// twins call it before any mutation. The lock-time evictable check and the
// second-chunk check depend on the walk and are made during it.
func ValidateAdmissionRound(in spec.AdmissionRoundInput) error {
	if err := validateAdderConfig(in.Config); err != nil {
		return err
	}
	if err := checkTokens("pool.available", in.Pool.Available, 0); err != nil {
		return err
	}
	if err := checkTokens("pool.evictable", in.Pool.Evictable, 0); err != nil {
		return err
	}
	if in.L2LoadBackCapacity != nil {
		if err := checkTokens("l2_load_back_capacity", *in.L2LoadBackCapacity, 0); err != nil {
			return err
		}
	}
	if n := len(in.Running) + len(in.Queue); n > spec.MaxAdmitEntries {
		return spec.Reject(spec.ErrTooLarge, "queue", n, fmt.Sprintf("len(queue)+len(running) <= %d", spec.MaxAdmitEntries))
	}
	for i, r := range in.Running {
		if r.MaxNewTokens < 0 || r.MaxNewTokens > spec.MaxAdmitTokens {
			return checkTokens(spec.Idx("running", i)+".max_new_tokens", r.MaxNewTokens, 0)
		}
		if r.OutputLen < 0 || r.OutputLen > spec.MaxAdmitTokens {
			return checkTokens(spec.Idx("running", i)+".output_len", r.OutputLen, 0)
		}
	}
	seen := make(map[string]int, len(in.Queue)+1)
	if c := in.Chunked; c != nil {
		if err := validateRequest("chunked", -1, c); err != nil {
			return err
		}
		if c.HostHit != 0 || c.L1PrefixEvictable != 0 {
			return spec.Reject(spec.ErrAdmitRequest, "chunked", fmt.Sprintf("host_hit=%d l1_prefix_evictable=%d", c.HostHit, c.L1PrefixEvictable),
				"a continuing chunk holds its own lock and loads nothing back: both 0")
		}
		seen[c.RID] = -1
	}
	for i := range in.Queue {
		q := &in.Queue[i]
		if err := validateRequest("queue", i, q); err != nil {
			return err
		}
		if j, dup := seen[q.RID]; dup {
			return spec.Reject(spec.ErrDuplicateRID, spec.Idx("queue", i)+".rid", q.RID, fmt.Sprintf("unique in the round (also at position %d; -1 is chunked)", j))
		}
		seen[q.RID] = i
	}
	return nil
}

// checkTokens rejects v below lo (ErrNegative for lo 0, else ErrAdmitConfig)
// or above MaxAdmitTokens (ErrTooLarge).
func checkTokens(field string, v, lo int64) error {
	switch {
	case v < lo && lo == 0:
		return spec.Reject(spec.ErrNegative, field, v, ">= 0")
	case v < lo:
		return spec.Reject(spec.ErrAdmitConfig, field, v, fmt.Sprintf(">= %d", lo))
	case v > spec.MaxAdmitTokens:
		return spec.Reject(spec.ErrTooLarge, field, v, fmt.Sprintf("<= %d", spec.MaxAdmitTokens))
	}
	return nil
}

func validateAdderConfig(c spec.AdderConfig) error {
	if err := checkTokens("config.page_size", c.PageSize, 1); err != nil {
		return err
	}
	if r := c.NewTokenRatio; math.IsNaN(r) || r < 0 || r > 1 {
		return spec.Reject(spec.ErrAdmitConfig, "config.new_token_ratio", r, "in [0, 1]")
	}
	if err := checkTokens("config.max_prefill_tokens", c.MaxPrefillTokens, 1); err != nil {
		return err
	}
	if p := c.ChunkedPrefillSize; p != nil && *p > spec.MaxAdmitTokens {
		return spec.Reject(spec.ErrTooLarge, "config.chunked_prefill_size", *p, fmt.Sprintf("<= %d", spec.MaxAdmitTokens))
	}
	if err := checkTokens("config.mixed_decode_tokens", c.MixedDecodeTokens, 0); err != nil {
		return err
	}
	if a := c.TruncationAlignSize; a != nil {
		if err := checkTokens("config.truncation_align_size", *a, 1); err != nil {
			return err
		}
	}
	if err := checkTokens("config.max_running_requests", c.MaxRunningRequests, 1); err != nil {
		return err
	}
	if c.CP != nil {
		return validateCP(c.CP)
	}
	return nil
}

func validateCP(cp *spec.CPAdmission) error {
	knobs := []struct {
		name string
		v    *int64
	}{{"max_requests", cp.MaxRequests}, {"max_total_extend_tokens", cp.MaxTotalExtendTokens},
		{"max_total_cached_tokens", cp.MaxTotalCachedTokens}}
	for _, k := range knobs {
		if k.v == nil {
			continue
		}
		if *k.v < 1 {
			return spec.Reject(spec.ErrAdmitConfig, "config.cp."+k.name, *k.v, ">= 1 (or unset for unlimited)")
		}
		if *k.v > spec.MaxAdmitTokens {
			return spec.Reject(spec.ErrTooLarge, "config.cp."+k.name, *k.v, fmt.Sprintf("<= %d", spec.MaxAdmitTokens))
		}
	}
	if b := cp.MaxBufferSizeBytes; b != nil && *b < 1 {
		return spec.Reject(spec.ErrAdmitConfig, "config.cp.max_buffer_size_bytes", *b, ">= 1 (or unset for off)")
	}
	if m := cp.BufferModel; m != nil {
		for _, k := range []struct {
			name string
			v    int64
		}{{"per_request", m.PerRequest}, {"per_prefix_token", m.PerPrefixToken}, {"per_extend_token", m.PerExtendToken}} {
			if k.v < 0 || k.v > spec.MaxLinearBufferCoeff {
				return spec.Reject(spec.ErrAdmitConfig, "config.cp.buffer_model."+k.name, k.v, fmt.Sprintf("in [0, %d]", spec.MaxLinearBufferCoeff))
			}
		}
	}
	if cp.EstimatorContext != nil {
		if cp.BufferModel != nil {
			return spec.Reject(spec.ErrAdmitConfig, "config.cp.buffer_model", "set", "unset when config.cp.estimator is set (one buffer estimator)")
		}
		if err := CheckEstimatorContext(*cp.EstimatorContext); err != nil {
			return reroot(err, "context.", "config.cp.estimator.")
		}
	}
	if cp.MaxBufferSizeBytes != nil && cp.BufferModel == nil && cp.EstimatorContext == nil && cp.Estimator == nil {
		return spec.Reject(spec.ErrAdmitConfig, "config.cp.buffer_model", nil, "set (or config.cp.estimator) when max_buffer_size_bytes is set")
	}
	return nil
}

// validateRequest checks one request's fields in §A1.14's order. Its JSON
// path is list[i], or list alone when i < 0 (the chunked request); the
// path is formatted only on failure, keeping validation allocation-free.
func validateRequest(list string, i int, r *spec.Request) error {
	field := func(name string) string {
		if i < 0 {
			return list + "." + name
		}
		return spec.Idx(list, i) + "." + name
	}
	if r.InputLen < 1 {
		return spec.Reject(spec.ErrAdmitRequest, field("input_len"), r.InputLen, ">= 1")
	}
	vals := [...]int64{r.InputLen, r.OutputLen, r.MaxNewTokens, r.L1Prefix, r.L1PrefixEvictable, r.HostHit}
	for k, v := range vals {
		if v < 0 || v > spec.MaxAdmitTokens {
			return checkTokens(field(requestFieldNames[k]), v, 0)
		}
	}
	if r.L1Prefix+r.HostHit > r.InputLen-1 {
		return spec.Reject(spec.ErrAdmitRequest, field("host_hit"), r.HostHit,
			fmt.Sprintf("l1_prefix (%d) + host_hit (%d) must be <= input_len - 1 (%d)", r.L1Prefix, r.HostHit, r.InputLen-1))
	}
	if r.L1PrefixEvictable > r.L1Prefix {
		return spec.Reject(spec.ErrAdmitRequest, field("l1_prefix_evictable"), r.L1PrefixEvictable, fmt.Sprintf("in [0, l1_prefix=%d]", r.L1Prefix))
	}
	return nil
}

var requestFieldNames = [...]string{"input_len", "output_len", "max_new_tokens", "l1_prefix", "l1_prefix_evictable", "host_hit"}
