package main

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kvtwin/kvtwin/internal/hostile"
)

// TestSoakShortRunCountsEveryClass builds kvtwin and runs `kvtwin soak` for
// three seconds with three clients and every hostile kind turned up, the
// KV-event publishers and the adapter audit beside them: every class must
// have requests (the checked scores of the event-fed index included),
// every hostile kind of both the HTTP clients and the hostile publisher
// must have been sent, every well-behaved source applied, every pinned
// prompt scored at its published length, every audit run passed, nothing
// may answer 5xx, the run must pass, and no goroutine may outlive it.
func TestSoakShortRunCountsEveryClass(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := builtKvtwin(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(),
		// signal.NotifyContext starts the runtime's signal watcher once per process; it never ends.
		goleak.IgnoreTopFunction("os/signal.signal_recv"), goleak.IgnoreTopFunction("runtime.ensureSigM"))

	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run([]string{"soak", "--bin", bin, "--duration", "3s", "--clients", "3",
		"--slow-interval", "200ms", "--hostile-fraction", "0.2", "--deep-bytes", "64KiB",
		"--events-hostile-every", "100ms", "--events-huge-events", "20000", "--audit-interval", "1s", "--json"}, &stdout, &stderr)
	t.Logf("soak ran %s, exit %d; stderr: %s", time.Since(start).Round(time.Millisecond), code, stderr.String())
	var rep soakReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, stdout.String())
	}
	if code != 0 || !rep.Pass {
		t.Errorf("exit %d, failures %q, notes %q", code, rep.Failures, rep.Notes)
	}
	for _, c := range rep.Classes {
		if c.Requests == 0 {
			t.Errorf("class %s: no requests", c.Class)
		}
		if c.S5xx != 0 {
			t.Errorf("class %s: %d 5xx", c.Class, c.S5xx)
		}
	}
	if len(rep.Hostile) != int(numHostileKinds)-1 {
		t.Fatalf("hostile rows %+v, want every kind", rep.Hostile)
	}
	for _, k := range rep.Hostile {
		if k.Requests == 0 {
			t.Errorf("hostile %s: none sent", k.Kind)
		}
	}
	if rep.RSS.Samples == 0 || rep.RSS.MaxBytes == 0 {
		t.Errorf("no RSS samples: %+v", rep.RSS)
	}
	if rep.InFlightAfter != 0 || rep.ChildExit != "exited cleanly after SIGTERM" {
		t.Errorf("after the run: %d slots in flight, child %q", rep.InFlightAfter, rep.ChildExit)
	}
	checkShortRunEvents(t, rep.Events)
	if a := rep.Audit; a == nil || a.Runs == 0 || a.Failed != 0 || a.Ops != 3 || a.P50Ms <= 0 {
		t.Errorf("audit %+v: want runs of the example's 3 ops, all passed", a)
	}
}

// checkShortRunEvents: each publisher sent and the server applied, every
// hostile kind was sent and the hostile stream refused some, and every
// pinned prompt scored its published blocks at the end.
func checkShortRunEvents(t *testing.T, ev *eventsReport) {
	t.Helper()
	if ev == nil {
		t.Fatal("no events in the report")
	}
	for _, s := range ev.Sources {
		if s.Sent == 0 || s.Applied == 0 || s.LiveReceived == 0 || s.Failed {
			t.Errorf("source %s: %+v; want batches sent, received and applied", s.Source, s)
		}
		if s.Role == roleHostile.String() && s.Refused == 0 {
			t.Errorf("hostile source refused nothing: %+v", s)
		}
	}
	for kind, n := range ev.HostileSent {
		if n == 0 {
			t.Errorf("hostile %s: none sent", kind)
		}
	}
	if p := ev.Pinned; p.Prompts == 0 || p.Complete != p.Prompts || p.PublishedBlocks == 0 || p.ScoredBlocks != p.PublishedBlocks {
		t.Errorf("pinned prompts %+v: want all complete", p)
	}
}

// TestSoakFailsOnAFailedAuditRun: an adapter with a historic bug fails its
// audit run, and the soak with it, naming the run's seed.
func TestSoakFailsOnAFailedAuditRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := builtKvtwin(t)
	example, err := findRepoFile(auditExample, "")
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"soak", "--bin", bin, "--duration", "1s", "--clients", "1", "--hostile", "none", "--events=false",
		"--audit-impl", "exec:" + defaultPython + " " + example + " --bug group-length-mismatch", "--audit-cases", "20", "--json"}, &stdout, &stderr)
	var rep soakReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, stdout.String())
	}
	if code == 0 || rep.Pass || rep.Audit == nil || rep.Audit.Failed == 0 || len(rep.Audit.FailedSeeds) == 0 {
		t.Fatalf("exit %d, pass %v, audit %+v: want a failed run", code, rep.Pass, rep.Audit)
	}
	if !strings.Contains(strings.Join(rep.Failures, "\n"), "transfer.group_contiguous") || !strings.Contains(stderr.String(), "audit run 1 (seed") {
		t.Errorf("failures %q, stderr %q: want the failed op and the run's seed named", rep.Failures, stderr.String())
	}
}

// TestSoakRefusesToRunWithoutItsPublisher: a publisher that cannot start
// fails the soak before the load, naming the way out.
func TestSoakRefusesToRunWithoutItsPublisher(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"soak", "--bin", "/bin/true", "--duration", "1s", "--python", "/no/such/python3", "--audit=false"}, &stdout, &stderr)
	if code == 0 || !strings.Contains(stderr.String(), "could not run") || !strings.Contains(stderr.String(), "--events=false") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}

// TestSoakRefusesAServerOffLoopback: the address and log format are the soak's own.
func TestSoakRefusesAServerOffLoopback(t *testing.T) {
	for _, args := range [][]string{{"--addr", "0.0.0.0:80"}, {"--addr=0.0.0.0:80"}, {"--log-format=text"}} {
		if err := checkServeArgs(args); err == nil {
			t.Errorf("--serve-arg %q accepted", args)
		}
	}
	if err := checkServeArgs([]string{"--max-concurrent=4", "--address-like-but-not"}); err != nil {
		t.Errorf("harmless serve args refused: %v", err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"soak", "--serve-arg=--addr=0.0.0.0:1"}, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "--addr") {
		t.Errorf("soak --serve-arg=--addr: exit %d, stderr %q", code, stderr.String())
	}
}

func TestSoakHostileSet(t *testing.T) {
	all, err := parseHostileSet(allHostile)
	if err != nil {
		t.Fatal(err)
	}
	for k := hostileNone + 1; k < numHostileKinds; k++ {
		if !all.has(k) {
			t.Errorf("default set lacks %s", k)
		}
	}
	if got := all.kinds(true); !slices.Equal(got, []hostileKind{hostileSlowWrite, hostileSlowRead}) {
		t.Errorf("slow kinds %v", got)
	}
	if none, err := parseHostileSet("none"); err != nil || none != 0 {
		t.Errorf("none: %v %v", none, err)
	}
	if _, err := parseHostileSet("deep,bogus"); err == nil {
		t.Error("unknown kind accepted")
	}
	fl := soakFlags{cfg: soakConfig{bin: "x", duration: time.Second, clients: 1, maxRSSGrowthPct: 50,
		slowInterval: time.Second, slowReadRate: 1, slowWriteRate: 1, requestTimeout: time.Second},
		maxRSS: "1GiB", deep: "1MiB", hostile: allHostile, noDeep: true}
	cfg, err := fl.config()
	if err != nil || cfg.hostile.has(hostileDeep) || !cfg.hostile.has(hostileHuge) || cfg.deepBytes != 1<<20 || cfg.maxRSS != 1<<30 {
		t.Errorf("--no-deep config %+v, %v", cfg, err)
	}
}

// TestSoakDeepBodyIsFlat: the nesting is built by repetition, to the size asked.
func TestSoakDeepBodyIsFlat(t *testing.T) {
	b := deepBody(1<<20, false)
	if len(b) != 1<<20 || bytes.Count(b, []byte("[")) != 1<<19 || !bytes.HasPrefix(b, []byte("[[")) || !bytes.HasSuffix(b, []byte("]]")) {
		t.Errorf("bare: %d bytes, starts %q", len(b), b[:4])
	}
	w := deepBody(100, true)
	if want := `{"tokens":` + strings.Repeat("[", 50) + strings.Repeat("]", 50) + "}"; string(w) != want {
		t.Errorf("wrapped: %s", w)
	}
}

// TestSoakHugeNumberReplacesOneLiteral: digits inside strings are not numbers.
func TestSoakHugeNumberReplacesOneLiteral(t *testing.T) {
	valid := []byte(`{"a":[1,-2.5e3],"s":"x9\"7","b":{"c":40}}`)
	if n := hostile.NumberLeaves(valid); n != 3 {
		t.Fatalf("%d number literals, want 3 (1, -2.5e3, 40)", n)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		got := hugeNumber(rng, valid)
		var v any
		if err := json.Unmarshal(got, &v); err != nil && !strings.Contains(string(got), "1e309") {
			t.Fatalf("%s: %v", got, err) // 1e309 is the one extreme Go cannot decode
		}
		if n := hostile.NumberLeaves(got); n != 3 || bytes.Equal(got, valid) {
			t.Fatalf("%s: %d numbers", got, n)
		}
	}
	if got := string(hugeNumber(rng, []byte(`{"s":"t"}`))); !strings.HasPrefix(got, `{"soak_huge":`) {
		t.Errorf("no-number body: %s", got)
	}
}

func TestSoakTruncatedAndUnknownBodiesAreInvalid(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	valid := []byte(`{"a":1,"b":[2,3]}`)
	for range 100 {
		if b := truncated(rng, valid); len(b) == 0 || len(b) >= len(valid) || json.Valid(b) {
			t.Fatalf("truncated %q", b)
		}
	}
	if got := string(withUnknownMember(valid)); got != `{"soak_unknown_field":{"x":1},"a":1,"b":[2,3]}` {
		t.Errorf("unknown member: %s", got)
	}
	if got := string(withUnknownMember([]byte(`{ }`))); got != `{"soak_unknown_field":{"x":1} }` {
		t.Errorf("unknown member in {}: %s", got)
	}
}

func TestSoakPreflightAndPrefixBodiesAreJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	bodies := preflightBodies(rng, 64)
	over := 0
	for _, b := range bodies {
		if !json.Valid(b.body) {
			t.Fatalf("not JSON: %.200s", b.body)
		}
		if b.want == 413 {
			over++
		}
	}
	if over == 0 || over == len(bodies) {
		t.Errorf("%d of %d bodies over the context", over, len(bodies))
	}
	l := &soakLoad{bases: [][]int64{randomTokens(rng, nil, maxPromptTokens)}}
	for range 20 {
		p := l.prompt(rng)
		if len(p) < minPromptTokens || len(p) > maxPromptTokens {
			t.Fatalf("prompt of %d tokens", len(p))
		}
		var v struct{ Tokens []int64 }
		if err := json.Unmarshal(tokensBody(p), &v); err != nil || !slices.Equal(v.Tokens, p) {
			t.Fatalf("tokens body: %v", err)
		}
	}
}

func TestSoakLatencyQuantiles(t *testing.T) {
	var h latencyHist
	if h.quantile(0.5) != 0 {
		t.Error("empty histogram has a median")
	}
	for i := range 100 {
		h.add(time.Duration(i+1) * time.Millisecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}} {
		got := h.quantile(c.q)
		if got < c.want || got > c.want*110/100 {
			t.Errorf("q%.2f = %s, want %s to +10%%", c.q, got, c.want)
		}
	}
}

func TestSoakRSSTrend(t *testing.T) {
	const m = 1 << 20
	flat := []int64{20 * m, 80 * m, 90 * m, 85 * m, 88 * m, 90 * m, 87 * m, 91 * m, 89 * m}
	if tr := judgeTrend(flat, 50); !tr.Checked || tr.Exceeded {
		t.Errorf("warm-up then flat: %+v", tr)
	}
	leak := []int64{20 * m, 40 * m, 60 * m, 80 * m, 100 * m, 120 * m, 140 * m, 160 * m, 180 * m}
	if tr := judgeTrend(leak, 50); !tr.Exceeded {
		t.Errorf("steady growth: %+v", tr)
	}
	small := []int64{10 * m, 10 * m, 10 * m, 15 * m, 20 * m, 25 * m, 30 * m, 30 * m, 30 * m}
	if tr := judgeTrend(small, 50); tr.Exceeded {
		t.Errorf("+20 MiB on a small heap flagged: %+v", tr)
	}
	if tr := judgeTrend(leak[:5], 50); tr.Checked {
		t.Errorf("5 samples judged: %+v", tr)
	}
}

func TestSoakParsesProcAndMetrics(t *testing.T) {
	status := "Name:\tkvtwin\nVmPeak:\t  9000 kB\nVmRSS:\t   12345 kB\nThreads:\t7\n"
	if got, err := parseProcStatus([]byte(status), "VmRSS"); err != nil || got != 12345<<10 {
		t.Errorf("VmRSS: %d %v", got, err)
	}
	if _, err := parseProcStatus([]byte("Name:\tx\n"), "VmRSS"); err == nil {
		t.Error("no VmRSS line accepted")
	}
	metrics := "# HELP kvtwin_op_requests_in_flight x\n# TYPE kvtwin_op_requests_in_flight gauge\nkvtwin_op_requests_in_flight 3\n"
	if got, err := parseInFlight(strings.NewReader(metrics)); err != nil || got != 3 {
		t.Errorf("in flight: %d %v", got, err)
	}
	if _, err := parseInFlight(strings.NewReader("up 1\n")); err == nil {
		t.Error("missing gauge accepted")
	}
}

func TestSoakLogRingKeepsTheEndAndTheCrash(t *testing.T) {
	r := newLogRing()
	r.add("panic: boom")
	r.add("SIGSEGV: segmentation violation")
	r.add(`{"level":"WARN","msg":"request failed"}`)
	for i := range 100 {
		r.add(strconv.Itoa(i))
	}
	if got := r.crashLines(); !slices.Equal(got, []string{"panic: boom", "SIGSEGV: segmentation violation"}) {
		t.Errorf("crash lines %q", got)
	}
	if got := r.tail(3); got != "97 | 98 | 99" {
		t.Errorf("tail %q", got)
	}
	if addr := servingAddr(`{"time":"t","level":"INFO","msg":"serving","addr":"127.0.0.1:5"}`); addr != "127.0.0.1:5" {
		t.Errorf("serving addr %q", addr)
	}
}
