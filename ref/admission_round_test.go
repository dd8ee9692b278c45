package ref_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// req is a §A1.12 request (L1Prefix, HostHit, ExtendLen, MaxNewTokens).
func req(rid string, l1, host, extend, maxNew int64) spec.Request {
	return spec.Request{RID: rid, InputLen: l1 + host + extend, MaxNewTokens: maxNew, L1Prefix: l1, HostHit: host}
}

func reqs(n int, l1, host, extend, maxNew int64) []spec.Request {
	q := make([]spec.Request, n)
	for i := range q {
		q[i] = req(fmt.Sprintf("r%d", i+1), l1, host, extend, maxNew)
	}
	return q
}

func cfg(ps, maxPrefill int64, chunk *int64) spec.AdderConfig {
	return spec.AdderConfig{PageSize: ps, NewTokenRatio: 0.7, MaxPrefillTokens: maxPrefill, ChunkedPrefillSize: chunk, MaxRunningRequests: 1000}
}

func round(t *testing.T, in spec.AdmissionRoundInput) spec.AdmissionRoundOutput {
	t.Helper()
	out, err := ref.AdmissionRound(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatalf("AdmitRound: %v", err)
	}
	return out
}

func rids(out spec.AdmissionRoundOutput) []string {
	s := []string{}
	for _, a := range out.Admitted {
		s = append(s, a.RID)
	}
	return s
}

// TestAdmissionE1BasicBudgets is §A1.12 E1.
func TestAdmissionE1BasicBudgets(t *testing.T) {
	out := round(t, spec.AdmissionRoundInput{Config: cfg(16, 8192, nil), Pool: spec.PoolState{Available: 10000},
		Queue: []spec.Request{req("r1", 0, 0, 1000, 256), req("r2", 0, 0, 7000, 256), req("r3", 0, 0, 500, 100)}})
	want := spec.RoundStop{Result: spec.Other, Detail: spec.DetailRemInput, RID: "r3"}
	if d := cmp.Diff(want, out.Stop); d != "" || out.BatchIsFull {
		t.Errorf("stop (-want +got):\n%s full=%v", d, out.BatchIsFull)
	}
	if d := cmp.Diff([]string{"r1", "r2"}, rids(out)); d != "" {
		t.Errorf("batch:\n%s", d)
	}
	if out.RemInputTokens != 176 || out.RemTotalTokens != 1472 || out.Admitted[0].ChargedExtend != 1008 {
		t.Errorf("rem_input %d rem_total %v charge %d, want 176, 1472, 1008", out.RemInputTokens, out.RemTotalTokens, out.Admitted[0].ChargedExtend)
	}
}

// TestAdmissionE2Chunking is §A1.12 E2: the cut is page-floored, a second
// cut of 0 pages stops the round, and the continuing chunk next round is
// not page-floored.
func TestAdmissionE2Chunking(t *testing.T) {
	in := spec.AdmissionRoundInput{Config: cfg(64, 16384, i64(1000)), Pool: spec.PoolState{Available: 1_000_000},
		Queue: []spec.Request{req("r1", 0, 0, 10000, 16), req("r2", 0, 0, 100, 0)}}
	out := round(t, in)
	if d := cmp.Diff([]spec.AdmittedReq{{RID: "r1", RunExtend: 960, ChargedExtend: 960, Chunked: true}}, out.Admitted); d != "" {
		t.Errorf("batch (-want +got):\n%s", d)
	}
	if out.Stop != (spec.RoundStop{Result: spec.Other, Detail: spec.DetailRemChunk, RID: "r2"}) || *out.RemChunkTokens != 40 || out.NextChunkedRID != "r1" {
		t.Errorf("stop %+v rem_chunk %d next %q", out.Stop, *out.RemChunkTokens, out.NextChunkedRID)
	}
	next := ref.NextChunked(in, out)
	if next == nil || next.L1Prefix != 960 || next.InputLen != 10000 {
		t.Fatalf("NextChunked = %+v, want prefix 960 of 10000", next)
	}
	out2 := round(t, spec.AdmissionRoundInput{Config: in.Config, Pool: in.Pool, Chunked: next})
	if d := cmp.Diff([]spec.AdmittedReq{{RID: "r1", PrefixLen: 960, RunExtend: 1000, ChargedExtend: 1024, Chunked: true}}, out2.Admitted); d != "" {
		t.Errorf("continuing chunk (-want +got):\n%s", d)
	}
	if out2.NextChunkedRID != "r1" {
		t.Errorf("still-truncated chunk must carry over, next = %q", out2.NextChunkedRID)
	}
}

// TestAdmissionE3NoTokenHiCache is §A1.12 E3.
func TestAdmissionE3NoTokenHiCache(t *testing.T) {
	for _, hi := range []bool{false, true} {
		c := cfg(1, 8192, nil)
		c.HierarchicalCache = hi
		out := round(t, spec.AdmissionRoundInput{Config: c, Pool: spec.PoolState{Available: 100}, Queue: []spec.Request{req("r1", 0, 0, 200, 0)}})
		if out.Stop != (spec.RoundStop{Result: spec.NoToken, Detail: spec.DetailRemTotal, RID: "r1"}) || out.BatchIsFull == hi {
			t.Errorf("hicache=%v: stop %+v full=%v", hi, out.Stop, out.BatchIsFull)
		}
	}
}

func cpCfg(ps, maxPrefill int64, chunk *int64, cp spec.CPAdmission) spec.AdderConfig {
	c := cfg(ps, maxPrefill, chunk)
	c.CP = &cp
	return c
}

// TestAdmissionCPExamples are §A1.12 E4–E8.
func TestAdmissionCPExamples(t *testing.T) {
	big := spec.PoolState{Available: 1_000_000}
	tests := []struct {
		name     string
		in       spec.AdmissionRoundInput
		admitted []string
		stop     spec.RoundStop
	}{
		{"E4-extend-gate", spec.AdmissionRoundInput{Config: cpCfg(1, 65536, nil, spec.CPAdmission{MaxTotalExtendTokens: i64(8192)}), Pool: big, Queue: reqs(3, 0, 0, 3000, 0)},
			[]string{"r1", "r2"}, spec.RoundStop{Result: spec.Other, Detail: spec.DetailCPMaxExtendTokens, RID: "r3"}},
		{"E5-lift", spec.AdmissionRoundInput{Config: cpCfg(1, 4096, nil, spec.CPAdmission{MaxTotalExtendTokens: i64(16384)}), Pool: big, Queue: reqs(8, 0, 0, 3000, 0)},
			[]string{"r1", "r2", "r3", "r4", "r5"}, spec.RoundStop{Result: spec.Other, Detail: spec.DetailRemInput, RID: "r6"}},
		{"E5-equality", spec.AdmissionRoundInput{Config: cpCfg(1, 4096, nil, spec.CPAdmission{MaxTotalExtendTokens: i64(16384)}), Pool: big, Queue: reqs(2, 0, 0, 8192, 0)},
			[]string{"r1"}, spec.RoundStop{Result: spec.Other, Detail: spec.DetailRemInput, RID: "r2"}},
		{"E6-cached-after-load-back", spec.AdmissionRoundInput{Config: cpCfg(64, 16384, nil, spec.CPAdmission{MaxTotalCachedTokens: i64(4096)}), Pool: spec.PoolState{Available: 100000},
			Queue: []spec.Request{req("A", 0, 4096, 64, 16), req("B", 0, 4096, 64, 16)}},
			[]string{"A"}, spec.RoundStop{Result: spec.Other, Detail: spec.DetailCPMaxCachedTokens, RID: "B"}},
		{"E7-default-limit", spec.AdmissionRoundInput{Config: cpCfg(1, 16384, i64(8192), spec.CPAdmission{}), Pool: big, Queue: reqs(3, 0, 0, 3000, 0)},
			[]string{"r1", "r2", "r3"}, spec.RoundStop{Result: spec.Other, Detail: spec.DetailBudgetChunk, RID: "r3", Admitted: true}},
		{"E8-no-deadlock", spec.AdmissionRoundInput{Config: cpCfg(64, 16384, nil, spec.CPAdmission{MaxTotalCachedTokens: i64(2048)}), Pool: big,
			Queue: []spec.Request{req("r1", 0, 4096, 64, 0)}},
			[]string{"r1"}, spec.RoundStop{Result: spec.Continue, Detail: spec.DetailQueueExhausted}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := round(t, tc.in)
			if d := cmp.Diff(tc.admitted, rids(out)); d != "" {
				t.Errorf("batch (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.stop, out.Stop); d != "" {
				t.Errorf("stop (-want +got):\n%s", d)
			}
		})
	}
}

// TestAdmissionE6LoadBackIsLasting pins E6's pool: B's load-back is not
// undone, its 4096 tokens become evictable.
func TestAdmissionE6LoadBackIsLasting(t *testing.T) {
	out := round(t, spec.AdmissionRoundInput{Config: cpCfg(64, 16384, nil, spec.CPAdmission{MaxTotalCachedTokens: i64(4096)}), Pool: spec.PoolState{Available: 100000},
		Queue: []spec.Request{req("A", 0, 4096, 64, 16), req("B", 0, 4096, 64, 16)}})
	if out.Pool != (spec.PoolState{Available: 91808, Evictable: 4096}) || out.CumCached != 4096 || out.L2Loaded != 8192 {
		t.Errorf("pool %+v cum_cached %d l2_loaded %d, want {91808 4096}, 4096, 8192", out.Pool, out.CumCached, out.L2Loaded)
	}
}

// TestAdmissionE7ChunkUnderGate pins E7's cut: r3 runs 2192 and the gate
// passes at exactly the limit.
func TestAdmissionE7ChunkUnderGate(t *testing.T) {
	out := round(t, spec.AdmissionRoundInput{Config: cpCfg(1, 16384, i64(8192), spec.CPAdmission{}), Pool: spec.PoolState{Available: 1_000_000}, Queue: reqs(3, 0, 0, 3000, 0)})
	if last := out.Admitted[2]; last.RunExtend != 2192 || !last.Chunked || *out.EffectiveCPExtendLimit != 8192 || out.CumExtend != 8192 {
		t.Errorf("r3 %+v limit %d cum %d", last, *out.EffectiveCPExtendLimit, out.CumExtend)
	}
}

// TestAdmissionC1Limits pins A1-B4 and A1-B5's fixed values: the user
// limit is capped by the chunk budget, and defaulted from it.
func TestAdmissionC1Limits(t *testing.T) {
	for _, user := range []*int64{nil, i64(32768)} {
		out := round(t, spec.AdmissionRoundInput{Config: cpCfg(1, 16384, i64(8192), spec.CPAdmission{MaxTotalExtendTokens: user}), Queue: []spec.Request{}})
		if out.EffectiveCPExtendLimit == nil || *out.EffectiveCPExtendLimit != 8192 || out.RemInputTokens != 16384 {
			t.Errorf("user %v: limit %v rem_input %d, want 8192, 16384", user, out.EffectiveCPExtendLimit, out.RemInputTokens)
		}
	}
}

// TestAdmissionLockRecheck is A1-B6's fixed behaviour: 1100 < 1200 before
// the lock, but 1100 >= 1000 after it.
func TestAdmissionLockRecheck(t *testing.T) {
	r := spec.Request{RID: "r1", InputLen: 1300, L1Prefix: 200, L1PrefixEvictable: 200}
	out := round(t, spec.AdmissionRoundInput{Config: cfg(1, 8192, nil), Pool: spec.PoolState{Available: 1000, Evictable: 200}, Queue: []spec.Request{r}})
	if out.Stop != (spec.RoundStop{Result: spec.NoToken, Detail: spec.DetailRemTotal, RID: "r1"}) || out.Pool.Evictable != 200 {
		t.Errorf("stop %+v pool %+v, want NoToken/rem_total_tokens with the lock undone", out.Stop, out.Pool)
	}
}

// TestAdmissionMaxRunning stops the walk at max_running_requests.
func TestAdmissionMaxRunning(t *testing.T) {
	c := cfg(1, 8192, nil)
	c.MaxRunningRequests = 2
	out := round(t, spec.AdmissionRoundInput{Config: c, Pool: spec.PoolState{Available: 100000}, Running: []spec.RunningReq{{MaxNewTokens: 10}}, Queue: reqs(3, 0, 0, 10, 0)})
	if d := cmp.Diff([]string{"r1"}, rids(out)); d != "" || out.Stop.Detail != spec.DetailMaxRunning || out.Stop.RID != "r2" || !out.BatchIsFull {
		t.Errorf("batch %v stop %+v full %v", rids(out), out.Stop, out.BatchIsFull)
	}
}

// TestAdmissionBadInput is §A1.14's table: each row's sentinel and field.
func TestAdmissionBadInput(t *testing.T) {
	ok := func() spec.AdmissionRoundInput {
		return spec.AdmissionRoundInput{Config: cfg(16, 8192, nil), Pool: spec.PoolState{Available: 1000, Evictable: 10},
			Queue: []spec.Request{req("a", 0, 0, 10, 1), req("b", 16, 0, 10, 1)}}
	}
	tests := []struct {
		name  string
		edit  func(*spec.AdmissionRoundInput)
		want  *spec.Sentinel
		field string
	}{
		{"page-size", func(in *spec.AdmissionRoundInput) { in.Config.PageSize = 0 }, spec.ErrAdmitConfig, "config.page_size"},
		{"ratio-nan", func(in *spec.AdmissionRoundInput) { in.Config.NewTokenRatio = nan() }, spec.ErrAdmitConfig, "config.new_token_ratio"},
		{"ratio-high", func(in *spec.AdmissionRoundInput) { in.Config.NewTokenRatio = 1.5 }, spec.ErrAdmitConfig, "config.new_token_ratio"},
		{"max-prefill", func(in *spec.AdmissionRoundInput) { in.Config.MaxPrefillTokens = 0 }, spec.ErrAdmitConfig, "config.max_prefill_tokens"},
		{"mixed", func(in *spec.AdmissionRoundInput) { in.Config.MixedDecodeTokens = -1 }, spec.ErrNegative, "config.mixed_decode_tokens"},
		{"align", func(in *spec.AdmissionRoundInput) { in.Config.TruncationAlignSize = i64(0) }, spec.ErrAdmitConfig, "config.truncation_align_size"},
		{"max-running", func(in *spec.AdmissionRoundInput) { in.Config.MaxRunningRequests = 0 }, spec.ErrAdmitConfig, "config.max_running_requests"},
		{"cp-knob", func(in *spec.AdmissionRoundInput) { in.Config.CP = &spec.CPAdmission{MaxTotalCachedTokens: i64(0)} }, spec.ErrAdmitConfig, "config.cp.max_total_cached_tokens"},
		{"cp-buffer-no-model", func(in *spec.AdmissionRoundInput) { in.Config.CP = &spec.CPAdmission{MaxBufferSizeBytes: i64(1)} }, spec.ErrAdmitConfig, "config.cp.buffer_model"},
		{"pool", func(in *spec.AdmissionRoundInput) { in.Pool.Available = -1 }, spec.ErrNegative, "pool.available"},
		{"huge", func(in *spec.AdmissionRoundInput) { in.Pool.Evictable = spec.MaxAdmitTokens + 1 }, spec.ErrTooLarge, "pool.evictable"},
		{"input-len", func(in *spec.AdmissionRoundInput) { in.Queue[1].InputLen = 0 }, spec.ErrAdmitRequest, "queue[1].input_len"},
		{"prefix-too-long", func(in *spec.AdmissionRoundInput) { in.Queue[1].HostHit = 10 }, spec.ErrAdmitRequest, "queue[1].host_hit"},
		{"evictable-range", func(in *spec.AdmissionRoundInput) { in.Queue[1].L1PrefixEvictable = 17 }, spec.ErrAdmitRequest, "queue[1].l1_prefix_evictable"},
		{"max-new", func(in *spec.AdmissionRoundInput) { in.Queue[0].MaxNewTokens = -1 }, spec.ErrNegative, "queue[0].max_new_tokens"},
		{"duplicate", func(in *spec.AdmissionRoundInput) { in.Queue[1].RID = "a" }, spec.ErrDuplicateRID, "queue[1].rid"},
		{"lock-time", func(in *spec.AdmissionRoundInput) { in.Queue[1].L1PrefixEvictable = 16 }, spec.ErrEvictableShort, "queue[1].l1_prefix_evictable"},
		{"chunked-host-hit", func(in *spec.AdmissionRoundInput) { c := req("c", 0, 10, 10, 0); in.Chunked = &c }, spec.ErrAdmitRequest, "chunked"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := ok()
			tc.edit(&in)
			_, err := ref.AdmissionRound(spec.DefaultLimits(), in)
			ie, isInput := spec.AsInputError(err)
			if !errors.Is(err, tc.want) || !isInput || ie.Field != tc.field {
				t.Errorf("got %v, want %s on %s", err, tc.want.Code(), tc.field)
			}
		})
	}
}

// TestFloorPage pins §0's floor division on negative values.
func TestFloorPage(t *testing.T) {
	for _, tc := range [][3]int64{{-24, 64, -64}, {0, 64, 0}, {63, 64, 0}, {64, 64, 64}, {-64, 64, -64}, {-65, 64, -128}} {
		if got := ref.FloorPage(tc[0], tc[1]); got != tc[2] {
			t.Errorf("FloorPage(%d, %d) = %d, want %d", tc[0], tc[1], got, tc[2])
		}
	}
}

func nan() float64 { return math.NaN() }
