package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv/mutants"
	"github.com/kvtwin/kvtwin/fixtures"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestAuditJSONReportsEveryOpPassingAndEveryMutantKilled is the issue's
// "kvtwin audit --json" acceptance check, on a smaller case count.
func TestAuditJSONReportsEveryOpPassingAndEveryMutantKilled(t *testing.T) {
	code, out, stderr := runCLI(t, "audit", "--json", "--cases", "40")
	if code != 0 {
		t.Fatalf("audit exited %d: %s\n%s", code, stderr, out)
	}
	var rep auditReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, e := range catalog.All() {
		for _, impl := range e.Impls() {
			want[e.Name()+"/"+string(impl)] = true
		}
	}
	for _, r := range rep.Ops {
		if !r.Passed {
			t.Errorf("%s on %s failed: %v", r.Op, r.Impl, r.Failures)
		}
		delete(want, r.Op+"/"+r.Impl)
	}
	if len(want) > 0 {
		t.Errorf("audit skipped %v", want)
	}
	if len(rep.Mutants) != len(mutants.All()) {
		t.Errorf("audit hunted %d mutants, the zoo has %d", len(rep.Mutants), len(mutants.All()))
	}
	for _, m := range rep.Mutants {
		if !m.Killed || !m.RegressionKills {
			t.Errorf("mutant %s: killed=%v regression_kills=%v", m.Mutant, m.Killed, m.RegressionKills)
		}
	}
}

// TestFixturesCheckExitsNonZeroWithADiffOnAMismatch tampers with a golden
// line and expects exit status 1 and the diff on stdout.
func TestFixturesCheckExitsNonZeroWithADiffOnAMismatch(t *testing.T) {
	cases, err := fixtures.ReadFile("../../fixtures/testdata/transfer.filter_cp_rank.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	c := cases[len(cases)-1]
	bad := fixtures.NewCase(c.Op, c.Spec, c.Case, c.Seed, c.In, fixtures.Result{Bytes: []byte(`{"owned":[],"positions":[]}`)})
	if !c.Want().Rejected && string(c.Out) == `{"owned":[],"positions":[]}` {
		bad = fixtures.NewCase(c.Op, c.Spec, c.Case, c.Seed, c.In, fixtures.Result{Bytes: []byte(`{"owned":[1],"positions":[1]}`)})
	}
	path := filepath.Join(t.TempDir(), "tampered.jsonl")
	if err := fixtures.WriteFile(path, append(cases[:len(cases)-1:len(cases)-1], bad)); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "fixtures", "check", "--impl", "fast", path)
	if code != 1 || !strings.Contains(out, "FAIL") || !strings.Contains(out, "-want +got") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
	if code, _, stderr := runCLI(t, "fixtures", "check", "--impl", "cuda", path); code == 0 || !strings.Contains(stderr, "-tags cuda") {
		t.Errorf("--impl cuda on a CPU build: exit %d, %s", code, stderr)
	}
}

// TestFixturesGenIsDeterministicPerSeed generates twice into fresh
// directories and compares the bytes.
func TestFixturesGenIsDeterministicPerSeed(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, dir := range []string{a, b} {
		if code, _, stderr := runCLI(t, "fixtures", "gen", "--dir", dir, "--seed", "9", "--valid", "5", "--invalid", "5"); code != 0 {
			t.Fatal(stderr)
		}
	}
	files, _ := filepath.Glob(filepath.Join(a, "*.jsonl"))
	if len(files) != len(catalog.All()) {
		t.Fatalf("%d files for %d ops", len(files), len(catalog.All()))
	}
	for _, f := range files {
		x, _ := os.ReadFile(f)
		y, _ := os.ReadFile(filepath.Join(b, filepath.Base(f)))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs with the same seed", filepath.Base(f))
		}
	}
}

// TestBenchJSONHasOneRowPerOpShapeImpl checks the row schema on a tiny benchtime.
func TestBenchJSONHasOneRowPerOpShapeImpl(t *testing.T) {
	code, out, stderr := runCLI(t, "bench", "--json", "--benchtime", "1ms", "--ops", "filter_cp_rank")
	if code != 0 {
		t.Fatal(stderr)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	e, _ := catalog.Lookup("transfer.filter_cp_rank")
	if want := len(e.Benchmarks()) * len(e.Impls()); len(rows) != want {
		t.Errorf("%d rows, want %d", len(rows), want)
	}
	for _, r := range rows {
		for _, k := range []string{"op", "shape", "impl", "ns_per_op", "bytes_per_op", "allocs_per_op"} {
			if _, ok := r[k]; !ok {
				t.Errorf("row %v lacks %s", r, k)
			}
		}
	}
}
