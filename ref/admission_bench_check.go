package ref

import (
	"fmt"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for admission.bench (docs/spec/admission-serving.md §A3): sentinel, bounds, settings, CP block and requests.

// Bench bounds (A3.6).
const (
	// benchRoundBytes bounds one encoded round without its rid list, for
	// lim.CheckOutput on max_rounds.
	benchRoundBytes = 512
)

// validateBench checks a bench input with A3.6's JSON paths: the settings,
// the cp block (its buffer size parsed, its estimator through A2.7), then
// every request and its rid against earlier ones. What it does not name
// (the A1 config ranges) is checked by the first round's ValidateAdmissionRound.
func validateBench(lim spec.Limits, in spec.AdmissionBenchInput) error {
	if err := validateBenchSettings(in); err != nil {
		return err
	}
	if err := validateBenchCP(in); err != nil {
		return err
	}
	if n := len(in.Requests); n > spec.MaxBenchRequests {
		return spec.Reject(spec.ErrTooLarge, "requests", n, fmt.Sprintf("<= %d entries", spec.MaxBenchRequests))
	}
	if err := lim.CheckOutput("max_rounds", in.MaxRounds, benchRoundBytes); err != nil {
		return err
	}
	seen := make(map[string]int, len(in.Requests))
	for i, r := range in.Requests {
		if err := validateBenchRequest(i, r); err != nil {
			return err
		}
		if j, dup := seen[r.RID]; dup {
			return spec.Reject(spec.ErrDuplicateRID, spec.Idx("requests", i)+".rid", r.RID, fmt.Sprintf("unique (duplicates requests[%d].rid)", j))
		}
		seen[r.RID] = i
	}
	return nil
}

func validateBenchSettings(in spec.AdmissionBenchInput) error {
	if err := checkTokens("page_size", in.PageSize, 1); err != nil {
		return err
	}
	if in.CPSize < 1 || in.CPSize > spec.MaxCP {
		return spec.Reject(spec.ErrBadCPSize, "cp_size", in.CPSize, fmt.Sprintf("in [1, %d]", spec.MaxCP))
	}
	if err := checkTokens("max_prefill_tokens", in.MaxPrefillTokens, 1); err != nil {
		return err
	}
	if err := checkTokens("max_running_requests", in.MaxRunningRequests, 1); err != nil {
		return err
	}
	if err := checkTokens("fake_l1.available", in.FakeL1.Available, 0); err != nil {
		return err
	}
	if err := checkTokens("fake_l1.evictable", in.FakeL1.Evictable, 0); err != nil {
		return err
	}
	if err := checkTokens("fake_l2_load_back_capacity", in.FakeL2LoadBackCapacity, 0); err != nil {
		return err
	}
	if in.MaxRounds < 1 || in.MaxRounds > spec.MaxBenchRounds {
		return spec.Reject(spec.ErrBenchConfig, "max_rounds", in.MaxRounds, fmt.Sprintf("in [1, %d]", spec.MaxBenchRounds))
	}
	if in.QueueWindow < 0 {
		return spec.Reject(spec.ErrNegative, "queue_window", in.QueueWindow, ">= 0 (0 is the whole queue)")
	}
	return nil
}

func validateBenchCP(in spec.AdmissionBenchInput) error {
	if in.CP == nil {
		return nil
	}
	if in.CP.MaxBufferSize != nil {
		if _, err := in.CP.MaxBufferSize.Bytes("cp.max_buffer_size"); err != nil {
			return err
		}
	}
	if err := CheckEstimatorContext(benchEstimatorContext(in)); err != nil {
		return reroot(reroot(err, "context.chunk", "mqa_chunk"), "context.", "cp.estimator.")
	}
	return nil
}

func validateBenchRequest(i int, r spec.BenchRequest) error {
	field := func(name string) string { return spec.Idx("requests", i) + "." + name }
	if r.ExtendTokens < 1 {
		return spec.Reject(spec.ErrAdmitRequest, field("extend_tokens"), r.ExtendTokens, ">= 1")
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"l1_cached_tokens", r.L1CachedTokens}, {"l2_host_hit_tokens", r.L2HostHitTokens}, {"extend_tokens", r.ExtendTokens}, {"max_new_tokens", r.MaxNewTokens}} {
		if err := checkTokens(field(f.name), f.v, 0); err != nil {
			return err
		}
	}
	if s := r.L1CachedTokens + r.L2HostHitTokens + r.ExtendTokens; s > spec.MaxAdmitTokens {
		return spec.Reject(spec.ErrTooLarge, field("extend_tokens"), s, fmt.Sprintf("l1 + l2 + extend <= %d", spec.MaxAdmitTokens))
	}
	return nil
}
