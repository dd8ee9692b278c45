package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/server"
)

// kvtwinCmd runs the test binary as `kvtwin args…` (role "kvtwin": the
// command line as main runs it, flags not parsed by `go test`).
func kvtwinCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), roleEnv+"=kvtwin")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errb.String()
	}
	if err != nil {
		t.Fatalf("run kvtwin %v: %v", args, err)
	}
	return 0, out.String(), errb.String()
}

// selfAdapter is the --impl target that re-executes this test binary as
// the adapter of the given role.
func selfAdapter(role string) string {
	return "exec:env " + roleEnv + "=" + role + " " + os.Args[0]
}

func auditReportOf(t *testing.T, out string) auditReport {
	t.Helper()
	var rep auditReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("audit --json printed no report (%v):\n%s", err, out)
	}
	return rep
}

// TestAuditOfABrokenAdapterReportsSeedFixtureDiffAndMinimalCase is the
// failure path end to end, in the binary as users run it: a pure op, a
// script op and a state-machine op, each served over exec with a historic
// bug, must each produce failures carrying the seed, a fixture line, a
// go-cmp diff and the differences as JSON paths (which the text shows),
// plus a shrunk counterexample, and the audit must exit 1 (it used to
// panic on rapid's testing.Short before any of that was printed).
func TestAuditOfABrokenAdapterReportsSeedFixtureDiffAndMinimalCase(t *testing.T) {
	skipUnderRace(t)
	code, out, stderr := kvtwinCmd(t, "audit", "--impl", selfAdapter("adapter-broken"), "--ops", auditedOps,
		"--cases", "24", "--seed", "7", "--json", "--no-progress")
	if code != 1 {
		t.Fatalf("audit of a broken adapter exited %d, want 1\nstderr: %s\n%s", code, stderr, out)
	}
	rep := auditReportOf(t, out)
	if rep.Seed != 7 || rep.Passed {
		t.Errorf("report seed %d passed %v, want seed 7 and a failed audit", rep.Seed, rep.Passed)
	}
	if len(rep.Ops) != 3 {
		t.Fatalf("audited %d ops, want the adapter's 3: %+v", len(rep.Ops), rep.Ops)
	}
	for _, r := range rep.Ops {
		if r.Passed || r.Mismatches == 0 || r.TransportErrors != 0 {
			t.Errorf("%s: passed %v, %d mismatches, %d transport errors; want mismatches only", r.Op, r.Passed, r.Mismatches, r.TransportErrors)
			continue
		}
		for _, f := range append(r.Failures, r.Shrunk) {
			if f == nil {
				t.Errorf("%s: no shrunk counterexample", r.Op)
				continue
			}
			if len(f.Fixture) == 0 || f.Diff == "" || len(f.Paths) == 0 || len(f.Input) == 0 {
				t.Errorf("%s case %s: fixture %q, diff %q, paths %v, input %q; want all four", r.Op, f.Case, f.Fixture, f.Diff, f.Paths, f.Input)
			}
			var fx struct {
				Op string `json:"op"`
			}
			if err := json.Unmarshal(f.Fixture, &fx); err != nil || fx.Op != r.Op {
				t.Errorf("%s: fixture %s is not a fixture of the op (%v)", r.Op, f.Fixture, err)
			}
		}
	}

	code, text, _ := kvtwinCmd(t, "audit", "--impl", selfAdapter("adapter-broken"), "--ops", `^transfer\.group_contiguous$`,
		"--cases", "16", "--seed", "7", "--no-progress")
	for _, want := range []string{"minimal counterexample (rapid, seed 7)", "fixture: {", "differences (ref → exec:", "\n  $: {\"code\":\"length_mismatch\"", "audit FAILED: seed 7"} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q (exit %d):\n%s", want, code, text)
		}
	}
}

// TestAuditOfAnOpTheAdapterLacksFailsAsNothingAudited: --ops asks for an
// op the adapter does not declare, so no case of it runs; the audit says
// "nothing audited" with the reason and exits 1, in text and in JSON, and
// an --ops that selects one op it has and one it lacks fails the same way
// while auditing the one it has. (Without --ops, ops an adapter lacks are
// only listed: TestAuditOfTheGoKitServingFastPasses.)
func TestAuditOfAnOpTheAdapterLacksFailsAsNothingAudited(t *testing.T) {
	html := filepath.Join(t.TempDir(), "report.html")
	code, out, _ := kvtwinCmd(t, "audit", "--impl", selfAdapter("adapter-fast"), "--ops", `^cp\.split$`,
		"--cases", "8", "--no-progress", "--html", html)
	if code != 1 || !strings.Contains(out, "nothing audited: cp.split on ") || !strings.Contains(out, "audit FAILED") {
		t.Errorf("an op the adapter lacks: exit %d, want 1 with a nothing-audited line:\n%s", code, out)
	}
	if page, err := os.ReadFile(html); err != nil || !strings.Contains(string(page), `<h2 id="not-audited">Nothing audited</h2>`) || !strings.Contains(string(page), "cp.split on ") {
		t.Errorf("the HTML report does not say what was not audited (%v)", err)
	}
	code, out, _ = kvtwinCmd(t, "audit", "--impl", selfAdapter("adapter-fast"), "--ops", `^(cp\.split|transfer\.group_contiguous)$`,
		"--cases", "8", "--json", "--no-progress")
	rep := auditReportOf(t, out)
	if code != 1 || rep.Passed || len(rep.Ops) != 1 || !rep.Ops[0].Passed || len(rep.NotAudited) != 1 || !strings.HasPrefix(rep.NotAudited[0], "cp.split on ") {
		t.Errorf("one op it has, one it lacks: exit %d, passed %v, %d ops, not audited %q", code, rep.Passed, len(rep.Ops), rep.NotAudited)
	}
}

// TestAStatefulAdapterInItsOwnWordsPassesUnderErrorsCode: an adapter of
// hicache.layer_done_script that gets every state and every error code
// right (a rejected script's and each rejected step's), but words every
// error object itself (another message, no value or bound: nothing copied
// from a diff), passes the audit under --errors code and fails it under
// --errors exact.
func TestAStatefulAdapterInItsOwnWordsPassesUnderErrorsCode(t *testing.T) {
	for _, c := range []struct {
		mode string
		code int
	}{{"code", 0}, {"exact", 1}} {
		code, out, stderr := kvtwinCmd(t, "audit", "--impl", selfAdapter("adapter-messages"), "--ops", `^hicache\.layer_done_script$`,
			"--errors", c.mode, "--cases", "60", "--json", "--no-progress")
		rep := auditReportOf(t, out)
		if code != c.code || len(rep.Ops) != 1 || rep.Ops[0].Cases == 0 {
			t.Errorf("--errors %s: exit %d, want %d (%d ops)\n%s\n%.2000s", c.mode, code, c.code, len(rep.Ops), stderr, out)
		}
	}
}

// TestAdapterCheckDescribesADeadAdapter: an adapter that dies on a line
// that is not a request fails adapter check's malformed-request check
// with its exit status and the end of its stderr (the traceback's last
// line), not as an empty first reply.
func TestAdapterCheckDescribesADeadAdapter(t *testing.T) {
	code, out, _ := runCLI(t, "adapter", "check", "--impl", selfAdapter("adapter-crash-on-garbage"), "--timeout", "5s")
	for _, want := range []string{"malformed request", "exit status 1", "JSONDecodeError: Expecting value"} {
		if code == 0 || !strings.Contains(out, want) {
			t.Errorf("exit %d, want non-zero and %q in:\n%s", code, want, out)
		}
	}
}

// TestAuditOfTheGoKitServingFastPasses: the same ops served correctly over
// exec pass, and every op the adapter does not declare is listed as not
// implemented, not failed.
func TestAuditOfTheGoKitServingFastPasses(t *testing.T) {
	code, out, stderr := kvtwinCmd(t, "audit", "--impl", selfAdapter("adapter-fast"), "--errors", "exact",
		"--cases", "40", "--json", "--no-progress")
	if code != 0 {
		t.Fatalf("audit of the fast adapter exited %d\nstderr: %s\n%s", code, stderr, out)
	}
	rep := auditReportOf(t, out)
	if len(rep.Ops) != 3 {
		t.Errorf("audited %d ops, want 3", len(rep.Ops))
	}
	for _, r := range rep.Ops {
		if !r.Passed {
			t.Errorf("%s failed: %v", r.Op, r.Failures)
		}
	}
	if n := len(rep.NotImplemented[selfAdapter("adapter-fast")]); n < 40 {
		t.Errorf("%d ops listed as not implemented, want every op but the 3", n)
	}
	if rep.ZooSkipped == "" || len(rep.Mutants) != 0 {
		t.Errorf("the bug zoo ran on an outside audit: %d mutants, skipped %q", len(rep.Mutants), rep.ZooSkipped)
	}
	if len(rep.NotAudited) != 0 {
		t.Errorf("without --ops, ops the adapter lacks are listed, not failed: %q", rep.NotAudited)
	}
}

// TestAuditCatchesThePythonExampleBugsWithMinimalCounterexamples audits the
// Python kit's example (adapters/python/example.py) with its two historic
// bugs switched on: both ops fail, shrunk to inputs no larger than the
// spec's minimal distinguishing inputs (the regression cases); with the
// bugs off all three ops pass.
func TestAuditCatchesThePythonExampleBugsWithMinimalCounterexamples(t *testing.T) {
	python := requirePython(t)
	example := "exec:" + python + " ../../adapters/python/example.py"
	code, out, stderr := kvtwinCmd(t, "audit", "--impl", example+" --bug group-length-mismatch --bug chunk-page-start-zero",
		"--cases", "100", "--json", "--no-progress")
	if code != 1 {
		t.Fatalf("audit of the buggy example exited %d, want 1\nstderr: %s\n%s", code, stderr, out)
	}
	rep := auditReportOf(t, out)
	failed := map[string]*equiv.Failure{}
	for _, r := range rep.Ops {
		if !r.Passed {
			failed[r.Op] = r.Shrunk
		}
	}
	for op, maxSize := range map[string]int{
		// regression/group-length-mismatch: {"src":[1,2,3],"dst":[5,6]}
		"transfer.group_contiguous": 5,
		// regression/chunk-page-start-zero: kv of 4 pages
		"transfer.filter_cp_rank": 4,
	} {
		shrunk, ok := failed[op]
		if !ok {
			t.Errorf("%s passed with its bug switched on", op)
			continue
		}
		if shrunk == nil {
			t.Errorf("%s: no minimal counterexample", op)
			continue
		}
		if n := listElements(t, shrunk.Input); n > maxSize {
			t.Errorf("%s: shrunk input has %d list elements, the spec's minimal input %d: %s", op, n, maxSize, shrunk.Input)
		}
	}
	if _, ok := failed["radix.bigram_key"]; ok {
		t.Errorf("radix.bigram_key failed though no bug touches it")
	}

	code, out, stderr = kvtwinCmd(t, "audit", "--impl", example, "--cases", "100", "--json", "--no-progress")
	if code != 0 {
		t.Fatalf("audit of the correct example exited %d\nstderr: %s\n%s", code, stderr, out)
	}
	if n := len(auditReportOf(t, out).Ops); n != 3 {
		t.Errorf("audited %d ops of the example, want 3", n)
	}
}

// requirePython returns python3's path; the Python kit is part of the
// product, so its absence fails the suite (.ci/run checks for it first).
func requirePython(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is required to test adapters/python: %v", err)
	}
	return p
}

// pythonKitHTTP serves the Python kit's example over HTTP under prefix on
// a free port, until the test ends, and returns its URL once it answers.
func pythonKitHTTP(t *testing.T, prefix string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // the port is free again for the child; nothing else here binds ports
	cmd := exec.Command(requirePython(t), "../../adapters/python/example.py", "--http", addr, "--prefix", prefix)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := "http://" + addr + prefix
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if r, err := http.Get(url + "/v1/ops"); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return url
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Python kit did not serve %s within 20 s", url)
		}
	}
}

// listElements counts the elements of every JSON array in a document.
func listElements(t *testing.T, doc []byte) int {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatal(err)
	}
	var count func(any) int
	count = func(v any) int {
		n := 0
		switch v := v.(type) {
		case []any:
			n += len(v)
			for _, e := range v {
				n += count(e)
			}
		case map[string]any:
			for _, e := range v {
				n += count(e)
			}
		}
		return n
	}
	return count(v)
}

// TestAdapterCheckPassesOnBothKitsAndOnServe runs the conformance command
// against each kit over each transport (the Python kit's example and the Go
// kit, over exec and over HTTP) and against kvtwin's own server.
func TestAdapterCheckPassesOnBothKitsAndOnServe(t *testing.T) {
	srv, err := server.New(server.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	kvtwinServe := httptest.NewServer(srv.Handler())
	defer kvtwinServe.Close()
	goKitHTTP := httptest.NewServer(fastAdapter().Handler("/kit"))
	defer goKitHTTP.Close()
	for _, target := range []string{
		"exec:" + requirePython(t) + " ../../adapters/python/example.py",
		selfAdapter("adapter-fast"),
		goKitHTTP.URL + "/kit",
		pythonKitHTTP(t, "/kit"),
		kvtwinServe.URL,
	} {
		code, out, stderr := runCLI(t, "adapter", "check", "--impl", target)
		if code != 0 || !strings.Contains(out, "adapter conforms") {
			t.Errorf("adapter check --impl %s exited %d:\n%s%s", target, code, out, stderr)
		}
	}
}

// TestAuditOfKvtwinServeOverHTTPPassesInExactMode: kvtwin's own server,
// audited as an outside implementation, agrees with ref byte for byte,
// error objects included.
func TestAuditOfKvtwinServeOverHTTPPassesInExactMode(t *testing.T) {
	srv, err := server.New(server.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	code, out, stderr := runCLI(t, "audit", "--impl", ts.URL, "--errors", "exact", "--cases", "10", "--json", "--no-progress")
	if code != 0 {
		t.Fatalf("audit of kvtwin serve exited %d: %s\n%s", code, stderr, out)
	}
	if rep := auditReportOf(t, out); len(rep.Ops) != len(catalog.All()) || len(rep.NotImplemented) != 0 {
		t.Errorf("audited %d ops (%d not implemented), want all %d", len(rep.Ops), len(rep.NotImplemented), len(catalog.All()))
	}
}

// TestAdapterCheckFailsOnAnAdapterThatBreaksTheProtocol: a mute adapter (a
// shell that reads its requests and never answers) fails the check within
// the timeout instead of hanging it.
func TestAdapterCheckFailsOnAnAdapterThatBreaksTheProtocol(t *testing.T) {
	code, out, _ := runCLI(t, "adapter", "check", "--impl", "exec:sh -c 'cat >/dev/null'", "--timeout", "1s")
	if code != 1 || !strings.Contains(out, "DOES NOT CONFORM") {
		t.Errorf("adapter check of a mute adapter exited %d:\n%s", code, out)
	}
}

// skipUnderRace leaves a subprocess end-to-end test to `make test-e2e`
// (see raceEnabled).
func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("end-to-end through subprocesses: runs without -race in make test-e2e")
	}
}

// TestFixturesCheckReplaysOverExec: `kvtwin fixtures check --impl exec:…`
// replays fixture files through an adapter subprocess, byte for byte: the
// Go kit serving fast's twins passes the group and radix-script fixtures,
// the adapter with the historic grouping bug fails on the group fixtures
// with a diff, and an op the adapter lacks is reported, not passed.
func TestFixturesCheckReplaysOverExec(t *testing.T) {
	skipUnderRace(t)
	group, script := "../../fixtures/testdata/transfer.group_contiguous.jsonl", "../../fixtures/testdata/radix.script.jsonl"
	code, out, stderr := runCLI(t, "fixtures", "check", "--impl", selfAdapter("adapter-fast"), group, script)
	if code != 0 || strings.Count(out, "ok   ") != 2 {
		t.Fatalf("fast adapter: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = runCLI(t, "fixtures", "check", "--impl", selfAdapter("adapter-broken"), group)
	if code != 1 || !strings.Contains(out, "FAIL "+group) {
		t.Errorf("broken adapter: exit %d, want 1 and a FAIL line:\n%s", code, out)
	}
	code, _, stderr = runCLI(t, "fixtures", "check", "--impl", selfAdapter("adapter-fast"), "../../fixtures/testdata/cp.split.jsonl")
	if code != 1 || !strings.Contains(stderr, "not implemented") {
		t.Errorf("an op the adapter lacks: exit %d, want 1 naming it not implemented:\n%s", code, stderr)
	}
}
