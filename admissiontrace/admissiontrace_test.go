package admissiontrace_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/admissiontrace"
	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/replay"
	"github.com/kvtwin/kvtwin/spec"
)

const samplePath = "../replay/testdata/mooncake_conversation_500.jsonl"

// traceBase is the CLI's trace settings (A3.2's example budgets, CP on)
// with a cached-token budget, so CP gates fire on real prefix reuse.
func traceBase() spec.AdmissionBenchInput {
	in := catalog.AdmissionBenchA32()
	in.CP = &spec.BenchCP{MaxRequests: ptr(10), MaxTotalCachedTokens: ptr(65536)}
	in.MaxRounds = spec.MaxBenchRounds
	in.Requests = nil
	return in
}

func ptr(v int64) *int64 { return &v }

var cfg = admissiontrace.Config{L1CacheTokens: 1 << 22, L2CacheTokens: 1 << 24, Window: admissiontrace.DefaultWindow}

func sampleBench(t testing.TB) spec.AdmissionBenchInput {
	reqs, err := replay.ReadFile(samplePath, replay.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	in, _, err := admissiontrace.Bench(reqs, traceBase(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestTraceBenchOn500Requests runs trace mode on the trace's first 500
// requests: the bench drains, every A3.5 invariant holds, the ref and
// fast twins agree byte for byte, and the caches saw real prefix reuse.
func TestTraceBenchOn500Requests(t *testing.T) {
	in := sampleBench(t)
	in.Deterministic = true
	lim := spec.DefaultLimits()
	out, err := fast.AdmissionBench(lim, in)
	if err != nil {
		t.Fatal(err)
	}
	if out.Termination != spec.BenchDrained || out.Summary.RequestsAdmitted != 500 {
		t.Fatalf("termination %s, %d admitted", out.Termination, out.Summary.RequestsAdmitted)
	}
	for _, p := range equiv.BenchProps() {
		if err := p.Holds(lim, in, out); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
	}
	want, err := ref.AdmissionBench(lim, in)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(catalog.Canonical(want, nil), catalog.Canonical(out, nil)); d != "" {
		t.Errorf("fast differs from ref (-ref +fast):\n%s", d)
	}
	var l1 int64
	for _, r := range in.Requests {
		l1 += r.L1CachedTokens
		if r.ExtendTokens < 1 || r.L1CachedTokens%64 != 0 {
			t.Fatalf("%s: extend %d, l1 %d", r.RID, r.ExtendTokens, r.L1CachedTokens)
		}
	}
	if l1 == 0 || out.Summary.StopReasons[spec.DetailCPMaxCachedTokens] == 0 {
		t.Errorf("no prefix reuse reached the cached gate: l1 %d, stops %v", l1, out.Summary.StopReasons)
	}
}

// TestRequestsModelTheCaches: a request repeating an earlier prompt hits
// its blocks in L1 (capped so one token is computed); once L1 has evicted
// them the host tier still holds them; without a host tier L2 is 0.
func TestRequestsModelTheCaches(t *testing.T) {
	a := replay.Request{InputLength: 1024, HashIDs: []spec.Unit{1, 2}}
	b := replay.Request{InputLength: 1024, HashIDs: []spec.Unit{3, 4}}
	reqs := []replay.Request{a, a, b, a}
	got, _, err := admissiontrace.Requests(reqs, 64, admissiontrace.Config{L1CacheTokens: 1024, L2CacheTokens: 4096, Window: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := []spec.BenchRequest{
		{RID: "t0", ExtendTokens: 1024},
		{RID: "t1", L1CachedTokens: 960, ExtendTokens: 64}, // 1024 − 1 floored to a page
		{RID: "t2", ExtendTokens: 1024},
		{RID: "t3", L2HostHitTokens: 960, ExtendTokens: 64}, // evicted from L1 by b, still on host
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	got, _, _ = admissiontrace.Requests(reqs, 64, admissiontrace.Config{L1CacheTokens: 1024, Window: 1})
	if got[3].L2HostHitTokens != 0 || got[3].L1CachedTokens != 0 {
		t.Errorf("no host tier: %+v", got[3])
	}
	for _, bad := range []admissiontrace.Config{{L1CacheTokens: 100, Window: 1}, {L1CacheTokens: 1024, L2CacheTokens: 512, Window: 1},
		{L1CacheTokens: 1024, L2CacheTokens: -1, Window: 1}, {L1CacheTokens: 1024}} {
		if _, _, err := admissiontrace.Requests(reqs, 64, bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestLockBound: the sum of the window largest l1 + l2.
func TestLockBound(t *testing.T) {
	rs := []spec.BenchRequest{{L1CachedTokens: 5}, {L1CachedTokens: 1, L2HostHitTokens: 9}, {L2HostHitTokens: 3}}
	if got := admissiontrace.LockBound(rs, 2); got != 15 {
		t.Errorf("LockBound = %d, want 15", got)
	}
	if got := admissiontrace.LockBound(rs, 9); got != 18 {
		t.Errorf("LockBound over a window larger than the trace = %d, want 18", got)
	}
}

// BenchmarkAdmissionBenchTrace is the target: trace-driven bench
// over the full conversation trace (12,031 requests) < 2 s — the cache
// replay and the bench, the trace already parsed. Skipped when the trace
// is absent.
func BenchmarkAdmissionBenchTrace(b *testing.B) {
	p, ok := fullTracePath(b)
	if !ok {
		b.Skip("full trace absent")
	}
	reqs, err := replay.ReadFile(p, replay.DefaultLimits())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		in, _, err := admissiontrace.Bench(reqs, traceBase(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := fast.AdmissionBench(spec.DefaultLimits(), in); err != nil {
			b.Fatal(err)
		}
	}
}

// fullTracePath finds shared/traces/mooncake_conversation_trace.jsonl
// beside the module root or above it.
func fullTracePath(tb testing.TB) (string, bool) {
	dir, err := filepath.Abs("..")
	if err != nil {
		tb.Fatal(err)
	}
	for ; ; dir = filepath.Dir(dir) {
		p := filepath.Join(dir, "shared/traces/mooncake_conversation_trace.jsonl")
		if _, err := os.Stat(p); err == nil {
			return p, true
		} else if !errors.Is(err, fs.ErrNotExist) {
			tb.Fatal(err)
		}
		if filepath.Dir(dir) == dir {
			return "", false
		}
	}
}

// TestEveryTreeGivesTheSameRequests: the caches' trees come from the
// caller (catalog.RadixTree), nil meaning the production fast tree, and
// the ref and fast trees give the same bench requests and stats.
func TestEveryTreeGivesTheSameRequests(t *testing.T) {
	reqs, err := replay.ReadFile(samplePath, replay.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	reqs = reqs[:100]
	want, wantSt, err := admissiontrace.Requests(reqs, 64, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, impl := range []catalog.Impl{catalog.Ref, catalog.Fast} {
		newTree, err := catalog.RadixTree(impl)
		if err != nil {
			t.Fatal(err)
		}
		c := cfg
		c.NewTree = newTree
		got, st, err := admissiontrace.Requests(reqs, 64, c)
		if err != nil {
			t.Fatalf("%s: %v", impl, err)
		}
		if diff := cmp.Diff(want, got); diff != "" || st != wantSt {
			t.Errorf("%s tree differs from the default (-default +%s):\n%s\nstats %+v, want %+v", impl, impl, diff, st, wantSt)
		}
	}
}
