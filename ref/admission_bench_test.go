package ref_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

func bp64(v int64) *int64 { return &v }

// a32 is A3.2's example input (deterministic).
func a32() spec.AdmissionBenchInput {
	size := spec.ByteSize("2GiB")
	return spec.AdmissionBenchInput{
		PageSize: 64, CPSize: 8, MaxPrefillTokens: 16384, ChunkedPrefillSize: bp64(8192), NewTokenRatio: 0.7,
		MaxRunningRequests: 64, HierarchicalCache: true, FakeL1: spec.PoolState{Available: 400000}, FakeL2LoadBackCapacity: 65536,
		CP: &spec.BenchCP{MaxRequests: bp64(10), MaxTotalCachedTokens: bp64(4096), MaxBufferSize: &size,
			Estimator: &spec.BenchEstimator{VocabSize: bp64(154880), TransferEnabled: true, TransferLayers: 79}},
		MaxRounds: 100, Deterministic: true,
		Requests: []spec.BenchRequest{{RID: "a", L2HostHitTokens: 4096, ExtendTokens: 64, MaxNewTokens: 16},
			{RID: "b", L2HostHitTokens: 4096, ExtendTokens: 64, MaxNewTokens: 16}},
	}
}

// TestBenchA34Example: A3.2's input gives A3.4's output: a admitted with
// its 4096-token load-back, b's load-back counted although the cached gate
// refuses it, a's estimate 4,066,936 bytes, then b alone.
func TestBenchA34Example(t *testing.T) {
	out, err := ref.AdmissionBench(spec.DefaultLimits(), a32())
	if err != nil {
		t.Fatal(err)
	}
	r0 := out.Rounds[0]
	if len(out.Rounds) != 2 || out.Termination != spec.BenchDrained || len(r0.Admitted) != 1 || r0.Admitted[0] != "a" ||
		r0.Stop != (spec.RoundStop{Result: spec.Other, Detail: spec.DetailCPMaxCachedTokens, RID: "b"}) ||
		r0.TotalExtendTokens != 64 || r0.TotalCachedTokens != 4096 || r0.L2LoadedTokens != 8192 || r0.L2CapacityLeft != 57344 ||
		*r0.EffectiveCPExtendLimit != 8192 || r0.RemInputTokens != 16320 || r0.EstimatedBufferBytes != 4066936 || r0.DurationUS != 0 {
		t.Fatalf("round 0 = %+v (termination %s, %d rounds)", r0, out.Termination, len(out.Rounds))
	}
	if r1 := out.Rounds[1]; len(r1.Admitted) != 1 || r1.Admitted[0] != "b" || r1.Stop.Detail != spec.DetailQueueExhausted {
		t.Fatalf("round 1 = %+v", r1)
	}
	want := map[spec.StopDetail]int64{spec.DetailCPMaxCachedTokens: 1, spec.DetailQueueExhausted: 1}
	if s := out.Summary; s.Rounds != 2 || s.RequestsAdmitted != 2 || len(s.StopReasons) != 2 ||
		s.StopReasons[spec.DetailCPMaxCachedTokens] != want[spec.DetailCPMaxCachedTokens] || s.StopReasons[spec.DetailQueueExhausted] != 1 {
		t.Fatalf("summary = %+v", s)
	}
}

// TestBenchA37NoL2Capacity: with no fake L2 capacity both load-backs fail,
// a runs 4160 tokens and b is chunked to the 4032 left, cached 0 (A3.7 fixed).
func TestBenchA37NoL2Capacity(t *testing.T) {
	in := a32()
	in.FakeL2LoadBackCapacity = 0
	out, err := ref.AdmissionBench(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	r0 := out.Rounds[0]
	if len(r0.Admitted) != 2 || r0.Chunked == nil || *r0.Chunked != "b" || r0.TotalCachedTokens != 0 || r0.L2LoadedTokens != 0 || r0.TotalExtendTokens != 8192 {
		t.Fatalf("round 0 = %+v", r0)
	}
}

// TestBenchTerminations: stalled (no memory for the first request),
// max_rounds, and an empty bench drained with no round.
func TestBenchTerminations(t *testing.T) {
	stalled := a32()
	stalled.FakeL1.Available = 100
	rounds1 := a32()
	rounds1.MaxRounds = 1
	empty := a32()
	empty.Requests = nil
	for name, c := range map[string]struct {
		in     spec.AdmissionBenchInput
		want   string
		rounds int
	}{"stalled": {stalled, spec.BenchStalled, 1}, "max-rounds": {rounds1, spec.BenchMaxRounds, 1}, "empty": {empty, spec.BenchDrained, 0}} {
		out, err := ref.AdmissionBench(spec.DefaultLimits(), c.in)
		if err != nil || out.Termination != c.want || len(out.Rounds) != c.rounds {
			t.Errorf("%s: termination %q after %d rounds (%v), want %q after %d", name, out.Termination, len(out.Rounds), err, c.want, c.rounds)
		}
	}
}

// TestBenchBadInput: A3.6's rejections name the JSON path, the value and the bound.
func TestBenchBadInput(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*spec.AdmissionBenchInput)
		want  *spec.Sentinel
		field string
	}{
		{"extend 0", func(in *spec.AdmissionBenchInput) { in.Requests[1].ExtendTokens = 0 }, spec.ErrAdmitRequest, "requests[1].extend_tokens"},
		{"duplicate rid", func(in *spec.AdmissionBenchInput) { in.Requests[1].RID = "a" }, spec.ErrDuplicateRID, "requests[1].rid"},
		{"negative l2 capacity", func(in *spec.AdmissionBenchInput) { in.FakeL2LoadBackCapacity = -1 }, spec.ErrNegative, "fake_l2_load_back_capacity"},
		{"max_rounds 0", func(in *spec.AdmissionBenchInput) { in.MaxRounds = 0 }, spec.ErrBenchConfig, "max_rounds"},
		{"too many requests", func(in *spec.AdmissionBenchInput) { in.Requests = make([]spec.BenchRequest, 200001) }, spec.ErrTooLarge, "requests"},
		{"buffer size unit", func(in *spec.AdmissionBenchInput) { s := spec.ByteSize("12XB"); in.CP.MaxBufferSize = &s }, spec.ErrBenchConfig, "cp.max_buffer_size"},
		{"estimator vocab", func(in *spec.AdmissionBenchInput) { in.CP.Estimator.VocabSize = bp64(0) }, spec.ErrEstimatorParam, "cp.estimator.vocab_size"},
		{"both chunk caps", func(in *spec.AdmissionBenchInput) {
			g := 1.0
			in.MQAChunk = spec.MQAChunkConfig{MaxRows: bp64(4), MaxGB: &g}
		}, nil, "mqa_chunk"},
		{"cp knob 0", func(in *spec.AdmissionBenchInput) { in.CP.MaxRequests = bp64(0) }, spec.ErrAdmitConfig, "config.cp.max_requests"},
		{"cp size 0", func(in *spec.AdmissionBenchInput) { in.CPSize = 0 }, spec.ErrBadCPSize, "cp_size"},
		{"lock beyond the evictable pool", func(in *spec.AdmissionBenchInput) { in.Requests[0].L1CachedTokens = 64 }, spec.ErrEvictableShort, "queue[0].l1_prefix_evictable"},
	}
	for _, c := range cases {
		in := a32()
		c.edit(&in)
		_, err := ref.AdmissionBench(spec.DefaultLimits(), in)
		ie, ok := spec.AsInputError(err)
		if !ok || !strings.HasPrefix(ie.Field, c.field) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: got %v, want %v at %s", c.name, err, c.want, c.field)
		}
	}
}

// TestByteSize: integers and binary units (1GB = 2^30, truncated); the
// rest is refused.
func TestByteSize(t *testing.T) {
	for s, want := range map[string]int64{"1": 1, "2GiB": 2 << 30, "1GB": 1 << 30, "1.5KiB": 1536, "0.5MB": 1 << 19, "3KB": 3072} {
		if got, err := spec.ByteSize(s).Bytes("x"); err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"0", "-1", "12XB", "GiB", "", "1e3", "0.0001KB", "99999999999GiB"} {
		if _, err := spec.ByteSize(s).Bytes("x"); !errors.Is(err, spec.ErrBenchConfig) {
			t.Errorf("%q: %v, want bench_config", s, err)
		}
	}
}

// TestRoundEstimatorBlockIsA2: admission.round's cp.estimator drives A2's
// estimator: A2.5 X2 (two X1 requests, 423,703,552 bytes) is over 128 MiB,
// so the second request stops with cp_max_buffer_size; a buffer_model
// beside it is refused as ambiguous.
func TestRoundEstimatorBlockIsA2(t *testing.T) {
	ctx := ref.DefaultEstimatorContext(64, 2)
	ctx.TransferEnabled, ctx.TransferLayers = true, 79
	in := spec.AdmissionRoundInput{Config: spec.AdderConfig{PageSize: 64, MaxPrefillTokens: 1 << 20, MaxRunningRequests: 8,
		CP: &spec.CPAdmission{MaxBufferSizeBytes: bp64(128 << 20), EstimatorContext: &ctx}},
		Pool: spec.PoolState{Available: 1 << 20, Evictable: 1 << 15},
		Queue: []spec.Request{{RID: "x1", InputLen: 12288, L1Prefix: 8192, L1PrefixEvictable: 8192},
			{RID: "x2", InputLen: 12288, L1Prefix: 8192, L1PrefixEvictable: 8192}}}
	out, err := ref.AdmissionRound(spec.DefaultLimits(), in)
	if err != nil || len(out.Admitted) != 1 || out.Stop.Detail != spec.DetailCPMaxBufferSize {
		t.Fatalf("got %+v, %v", out, err)
	}
	in.Config.CP.BufferModel = &spec.LinearBuffer{}
	if _, err := ref.AdmissionRound(spec.DefaultLimits(), in); !errors.Is(err, spec.ErrAdmitConfig) {
		t.Fatalf("estimator and buffer_model both set: %v", err)
	}
	in.Config.CP.BufferModel, ctx.VocabSize = nil, 0
	if _, err := ref.AdmissionRound(spec.DefaultLimits(), in); !errors.Is(err, spec.ErrEstimatorParam) || !strings.Contains(err.Error(), "config.cp.estimator.vocab_size") {
		t.Fatalf("bad estimator context: %v", err)
	}
}
