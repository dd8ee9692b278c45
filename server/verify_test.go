package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fixtures"
	"github.com/kvtwin/kvtwin/prefix"
	"github.com/kvtwin/kvtwin/server"
	"github.com/kvtwin/kvtwin/spec"
)

// verifying serves cfg (after edit) with Serve, so the verify workers run,
// and returns its base URL and logs.
func verifying(t *testing.T, edit func(*server.Config)) (string, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	cfg := testConfig(logs)
	cfg.Verify.Rate = 1
	cfg.Verify.CPUShare = 1
	edit(&cfg)
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return "http://" + serveLoopback(t, s), logs
}

// postOp posts in to op with an X-Request-Id and returns the status.
func postOp(t *testing.T, base, op, id, in string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/ops/"+op, strings.NewReader(in))
	req.Header.Set("X-Request-Id", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// summaryOf reads GET /v1/verify.
func summaryOf(t *testing.T, base string) server.VerifySummary {
	t.Helper()
	resp, err := http.Get(base + "/v1/verify")
	if err != nil {
		t.Fatal(err)
	}
	var s server.VerifySummary
	if err := json.Unmarshal(readAll(t, resp), &s); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/v1/verify: %d %v", resp.StatusCode, err)
	}
	return s
}

func settled(t *testing.T, base string, n int64) server.VerifySummary {
	t.Helper()
	var s server.VerifySummary
	eventually(t, fmt.Sprintf("%d samples verified", n), func() bool {
		s = summaryOf(t, base)
		return s.Total.Agree+s.Total.Diverge+s.Total.Dropped+s.Total.Error >= n
	})
	return s
}

// wrongGrouping is transfer.group_contiguous whose fast twin drops the last
// run of every answer with more than one: a silent bug only a comparison
// sees.
func wrongGrouping() catalog.Entry {
	op := *catalog.TransferGroupContiguous()
	fast := op.Fast
	op.Fast = func(lim spec.Limits, in spec.TransferGroupContiguousInput) (spec.TransferGroupContiguousOutput, error) {
		out, err := fast(lim, in)
		if len(out.Runs) > 1 {
			out.Runs = out.Runs[:len(out.Runs)-1]
		}
		return out, err
	}
	return &op
}

// TestVerifyAgreesWhenTheTwinsAgree: with --verify 1 every answer of the
// real fast twin, outputs and rejections alike, is re-run on ref and
// agrees; nothing is dropped, nothing diverges.
func TestVerifyAgreesWhenTheTwinsAgree(t *testing.T) {
	base, _ := verifying(t, func(*server.Config) {})
	ins := []string{`{"src":[1,2,3,7],"dst":[10,11,12,13]}`, `{"src":[1,2],"dst":[5]}`, `{"src":[4],"dst":[4]}`}
	for i, in := range ins {
		postOp(t, base, "transfer.group_contiguous", fmt.Sprint("r", i), in)
	}
	s := settled(t, base, int64(len(ins)))
	want := server.VerifyCounts{Agree: int64(len(ins))}
	if s.Ops["transfer.group_contiguous"] != want || s.Total != want || s.Against != "ref" || len(s.Last) != 0 {
		t.Fatalf("summary %+v, want %+v on transfer.group_contiguous only", s, want)
	}
}

// TestVerifyReportsADivergenceAsAReplayableFixtureLine: a fast twin with a
// silent bug is reported once per diverging answer, as a WARN line naming
// the op, the request id and the input's SHA-256, in /v1/verify, in the
// metrics, and as a fixture line (in /v1/verify/divergences and in
// Verify.Dir) that fixtures.Check replays to the same verdict: a mismatch
// against the buggy twin, a pass against ref.
func TestVerifyReportsADivergenceAsAReplayableFixtureLine(t *testing.T) {
	dir := t.TempDir()
	bug := wrongGrouping()
	base, logs := verifying(t, func(c *server.Config) {
		c.Entries = []catalog.Entry{bug}
		c.Verify.Dir = dir
	})
	diverging := `{"src":[1,2,3,7],"dst":[10,11,12,13]}` // two runs: the bug drops one
	agreeing := `{"src":[1,2],"dst":[10,11]}`
	postOp(t, base, "transfer.group_contiguous", "req-diverge", diverging)
	postOp(t, base, "transfer.group_contiguous", "req-agree", agreeing)
	s := settled(t, base, 2)
	if s.Total != (server.VerifyCounts{Agree: 1, Diverge: 1}) || len(s.Last) != 1 || s.Last[0].RequestID != "req-diverge" {
		t.Fatalf("summary %+v", s)
	}
	if rec := logs.find(t, "WARN", "verification found a divergence"); rec["op"] != "transfer.group_contiguous" ||
		rec["request_id"] != "req-diverge" || rec["input_sha256"] != s.Last[0].InputSHA256 {
		t.Errorf("the WARN line %v does not name the op, the request id and the input's SHA-256 %s", rec, s.Last[0].InputSHA256)
	}
	if v := metricOf(t, http.DefaultClient, base, "", `kvtwin_verify_total{op="transfer.group_contiguous",result="diverge"}`); v != 1 {
		t.Errorf("kvtwin_verify_total diverge = %v, want 1", v)
	}
	resp, err := http.Get(base + "/v1/verify/divergences")
	if err != nil {
		t.Fatal(err)
	}
	served := readAll(t, resp)
	files, _ := filepath.Glob(filepath.Join(dir, "verify-*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("Verify.Dir holds %v, want one file", files)
	}
	onDisk, _ := os.ReadFile(files[0])
	if !bytes.Equal(served, onDisk) {
		t.Errorf("/v1/verify/divergences and %s differ:\n%s\n%s", files[0], served, onDisk)
	}
	cases, err := fixtures.Read(bytes.NewReader(onDisk))
	if err != nil || len(cases) != 1 || string(cases[0].In) != diverging {
		t.Fatalf("fixture lines %v (%v), want the diverging input", cases, err)
	}
	if _, mm, err := fixtures.Check(cases, entryRunner{bug, catalog.Fast}); err != nil || mm == nil {
		t.Errorf("replayed against the buggy twin: mismatch %v, err %v; want a mismatch", mm, err)
	}
	if _, mm, err := fixtures.Check(cases, entryRunner{bug, catalog.Ref}); err != nil || mm != nil {
		t.Errorf("replayed against ref: mismatch %v, err %v; want a pass", mm, err)
	}
	var extra struct {
		Impl, Diff string
		Got        json.RawMessage
	}
	_ = json.Unmarshal(onDisk, &extra)
	if extra.Impl != "fast" || !strings.Contains(extra.Diff, "dst_start") || !bytes.Contains(extra.Got, []byte(`"runs"`)) {
		t.Errorf("the line does not carry fast's answer and the diff: %s", onDisk)
	}
}

// entryRunner runs an entry's implementation for fixtures.Check.
type entryRunner struct {
	e    catalog.Entry
	impl catalog.Impl
}

func (r entryRunner) Run(op string, in []byte) (fixtures.Result, error) {
	out, err := r.e.Run(r.impl, spec.DefaultLimits(), in)
	if _, ok := spec.AsInputError(err); err != nil && !ok {
		return fixtures.Result{}, err
	}
	return fixtures.Result{Bytes: out, Rejected: err != nil}, nil
}

// TestVerifyDropsSamplesInsteadOfWaiting: while the one worker is busy
// with a re-run that does not end, the queue (one place) fills and every
// further sample is dropped and counted, and the answers keep coming at
// once.
func TestVerifyDropsSamplesInsteadOfWaiting(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	op := *catalog.TransferGroupContiguous()
	ref := op.Ref
	op.Ref = func(lim spec.Limits, in spec.TransferGroupContiguousInput) (spec.TransferGroupContiguousOutput, error) {
		<-release
		return ref(lim, in)
	}
	base, _ := verifying(t, func(c *server.Config) {
		c.Entries = []catalog.Entry{&op}
		c.Verify.Queue = 1
	})
	const n = 20
	start := time.Now()
	for i := range n {
		if code := postOp(t, base, "transfer.group_contiguous", fmt.Sprint("q", i), `{"src":[1],"dst":[2]}`); code != http.StatusOK {
			t.Fatalf("request %d: %d", i, code)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("%d answers took %s while verification was stuck", n, d)
	}
	// One sample is with the worker, one waits; the rest were dropped.
	eventually(t, "drops counted", func() bool { return summaryOf(t, base).Total.Dropped == n-2 })
	once.Do(func() { close(release) })
	s := settled(t, base, n)
	if s.Total != (server.VerifyCounts{Agree: 2, Dropped: n - 2}) {
		t.Errorf("summary %+v, want 2 agreeing and %d dropped", s.Total, n-2)
	}
}

// TestVerifyConfigNamesTheFieldAndBound: each bad --verify setting is
// refused at New with the field, the value and the bound.
func TestVerifyConfigNamesTheFieldAndBound(t *testing.T) {
	for _, c := range []struct {
		edit func(*server.VerifyConfig)
		want string
	}{
		{func(v *server.VerifyConfig) { v.Rate = 1.5 }, "Verify.Rate = 1.5: want in [0, 1]"},
		{func(v *server.VerifyConfig) { v.Rate = -0.1 }, "Verify.Rate = -0.1: want in [0, 1]"},
		{func(v *server.VerifyConfig) { v.Workers = 0 }, "Verify.Workers = 0: want in [1, 1024]"},
		{func(v *server.VerifyConfig) { v.Queue = 0 }, "Verify.Queue = 0: want in [1, 1048576]"},
		{func(v *server.VerifyConfig) { v.CPUShare = 0 }, "Verify.CPUShare = 0: want in (0, 1]"},
		{func(v *server.VerifyConfig) { v.QueueBytes = 0 }, "Verify.QueueBytes = 0: want >= 1"},
		{func(v *server.VerifyConfig) { v.Timeout = 0 }, "Verify.Timeout = 0s: want > 0"},
		{func(v *server.VerifyConfig) { v.Keep = -1 }, "Verify.Keep = -1"},
		{func(v *server.VerifyConfig) { v.Dir = "x"; v.FileBytes = 10 }, "Verify.FileBytes = 10: want >= 4096"},
		{func(v *server.VerifyConfig) { v.Against = catalog.Fast }, "Verify.Against = fast: want an implementation other than Impl (fast)"},
		{func(v *server.VerifyConfig) { v.Against = "cuda" }, "Verify.Against = cuda: want ref or fast"},
	} {
		cfg := testConfig(&logBuffer{})
		cfg.Verify.Rate = 1
		c.edit(&cfg.Verify)
		_, err := server.New(cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New: %v, want %q", err, c.want)
		}
	}
	cfg := testConfig(&logBuffer{})
	cfg.Verify.Workers = 0 // ignored while Rate is 0
	if _, err := server.New(cfg); err != nil {
		t.Errorf("verification off: %v", err)
	}
}

// TestVerifyRoutesAnswer404WhenOff: without --verify the routes say how to
// turn it on.
func TestVerifyRoutesAnswer404WhenOff(t *testing.T) {
	srv, _ := start(t, nil)
	for _, path := range []string{"/v1/verify", "/v1/verify/divergences"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp)
		if resp.StatusCode != http.StatusNotFound || !bytes.Contains(body, []byte("--verify RATE")) {
			t.Errorf("%s: %d %s", path, resp.StatusCode, body)
		}
	}
}

// TestVerifyWorkersKeepToTheirCPUShare: a worker at share 0.25 whose
// re-runs take 50 ms rests 150 ms after each, so 250 ms after four samples
// arrive at most two have been checked (a slower machine checks fewer).
func TestVerifyWorkersKeepToTheirCPUShare(t *testing.T) {
	op := *catalog.TransferGroupContiguous()
	ref := op.Ref
	op.Ref = func(lim spec.Limits, in spec.TransferGroupContiguousInput) (spec.TransferGroupContiguousOutput, error) {
		time.Sleep(50 * time.Millisecond)
		return ref(lim, in)
	}
	base, _ := verifying(t, func(c *server.Config) {
		c.Entries = []catalog.Entry{&op}
		c.Verify.CPUShare = 0.25
	})
	start := time.Now()
	for i := range 4 {
		postOp(t, base, "transfer.group_contiguous", fmt.Sprint("s", i), `{"src":[1],"dst":[2]}`)
	}
	time.Sleep(250*time.Millisecond - time.Since(start))
	if n := summaryOf(t, base).Total.Agree; n > 2 {
		t.Errorf("%d samples checked in 250 ms at share 0.25 with 50 ms re-runs; want at most 2", n)
	}
	settled(t, base, 4)
}

// TestVerifyStateFlagsACorruptedPoolWithinOneDigestInterval: with
// --verify-state, a pool whose fast tree a test fault corrupts behind the
// pool's back (a lock no request took: no answer shows it yet) is flagged
// by the first digest after one interval, in the pool's status, its metric
// and /readyz's detail, and keeps serving (and /readyz stays 200).
func TestVerifyStateFlagsACorruptedPoolWithinOneDigestInterval(t *testing.T) {
	const interval = 100 * time.Millisecond
	var mu sync.Mutex
	var trees []spec.RadixTree
	base, _ := verifying(t, func(c *server.Config) {
		c.Verify.State = true
		c.Verify.DigestInterval = interval
		c.NewRadixTree = func(cfg spec.TreeConfig) (spec.RadixTree, error) {
			newFast, _ := catalog.RadixTree(catalog.Fast)
			tr, err := newFast(cfg)
			mu.Lock()
			trees = append(trees, tr)
			mu.Unlock()
			return tr, err
		}
	})
	call := func(path, body string) string {
		t.Helper()
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b := readAll(t, resp)
		if resp.StatusCode/100 != 2 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	call("/v1/prefix/p", `{"page_size":4,"capacity_tokens":256}`)
	ins := call("/v1/prefix/p/insert", `{"tokens":[1,2,3,4,5,6,7,8,9]}`)
	call("/v1/prefix:score", `{"tokens":[1,2,3,4,5,6,7,8]}`)
	shadowOf := func() prefix.ShadowStatus {
		var st prefix.Stats
		resp, err := http.Get(base + "/v1/prefix/p")
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(readAll(t, resp), &st); err != nil || st.Shadow == nil {
			t.Fatalf("pool status without its shadow: %v", err)
		}
		return *st.Shadow
	}
	eventually(t, "the shadow compares the first operations", func() bool { return shadowOf().Compared >= 2 })
	if s := shadowOf(); s.State != prefix.ShadowAgree {
		t.Fatalf("before the fault: %+v", s)
	}
	var inserted struct {
		LastNode spec.NodeID `json:"last_node"`
	}
	_ = json.Unmarshal([]byte(ins), &inserted)
	mu.Lock()
	_, err := trees[0].IncLockRef(inserted.LastNode) // the fault: a lock no request took
	mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(interval)
	call("/v1/prefix/p/insert", `{"tokens":[1,2,3,4]}`) // the next operation takes the digest
	eventually(t, "the digest flags the pool", func() bool { return shadowOf().State == prefix.ShadowDiverged })
	if s := shadowOf(); !strings.HasPrefix(s.Detail, "digest:") {
		t.Errorf("flagged at %q, want the digest", s.Detail)
	}
	if v := metricOf(t, http.DefaultClient, base, "", `kvtwin_prefix_shadow_diverged{pool="p"}`); v != 1 {
		t.Errorf("kvtwin_prefix_shadow_diverged = %v, want 1", v)
	}
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	var rd server.Readiness
	if err := json.Unmarshal(readAll(t, resp), &rd); err != nil || resp.StatusCode != http.StatusOK ||
		rd.Shadows == nil || len(rd.Shadows.Diverged) != 1 || rd.Shadows.Diverged[0] != "p" {
		t.Errorf("/readyz %d %+v (%v), want ready with p listed as diverged", resp.StatusCode, rd.Shadows, err)
	}
	call("/v1/prefix:score", `{"tokens":[1,2,3,4]}`) // still serving
}

// TestVerifyDropsWhatExceedsTheQueueBytes: a sample whose input and answer
// would take the waiting samples past Verify.QueueBytes is dropped and
// counted, and a small one after it still queues (the budget is given
// back, never left short).
func TestVerifyDropsWhatExceedsTheQueueBytes(t *testing.T) {
	base, _ := verifying(t, func(c *server.Config) { c.Verify.QueueBytes = 200 })
	big := `{"src":[` + strings.Repeat("1,", 100) + `1],"dst":[` + strings.Repeat("2,", 100) + `2]}`
	postOp(t, base, "transfer.group_contiguous", "big", big)
	postOp(t, base, "transfer.group_contiguous", "small", `{"src":[1],"dst":[2]}`)
	if s := settled(t, base, 2); s.Total != (server.VerifyCounts{Agree: 1, Dropped: 1}) {
		t.Errorf("%+v, want the large sample dropped and the small one checked", s.Total)
	}
}
