package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/spec"
)

// TestBenchAdmissionInput runs `kvtwin bench admission --input` on A3.2's
// example, with and without a budget flag overriding the file.
func TestBenchAdmissionInput(t *testing.T) {
	b, err := catalog.Marshal(catalog.AdmissionBenchA32())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "a32.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI(t, "bench", "admission", "--input", path, "--impl", "ref")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got spec.AdmissionBenchOutput
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Rounds) != 2 || got.Rounds[0].Stop.Detail != spec.DetailCPMaxCachedTokens || got.Rounds[0].EstimatedBufferBytes != 4066936 {
		t.Fatalf("A3.4 output not reproduced: %s", out)
	}
	// Lifting the cached budget admits both in one round.
	code, out, stderr = runCLI(t, "bench", "admission", "--input", path, "--cp-max-total-cached-tokens", "8192", "--summary")
	if code != 0 || !strings.Contains(out, `"rounds": 1`) {
		t.Fatalf("exit %d: %s %s", code, out, stderr)
	}
}

// TestBenchAdmissionTrace runs trace mode on the committed 500-request
// sample and checks the summary is a drained bench that admitted them all.
func TestBenchAdmissionTrace(t *testing.T) {
	code, out, stderr := runCLI(t, "bench", "admission", "--trace", replaySample, "--cp-max-total-cached-tokens", "65536", "--summary")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		Trace       struct{ Requests int }
		Termination string
		Summary     spec.BenchSummary
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Trace.Requests != 500 || got.Termination != spec.BenchDrained || got.Summary.RequestsAdmitted != 500 {
		t.Fatalf("got %s", out)
	}
}

// TestBenchAdmissionUsage: exactly one of --input and --trace; plain
// `kvtwin bench` still has its own flags.
func TestBenchAdmissionUsage(t *testing.T) {
	if code, _, _ := runCLI(t, "bench", "admission"); code == 0 {
		t.Error("no input accepted")
	}
	if code, _, _ := runCLI(t, "bench", "admission", "--input", "x", "--trace", "y"); code == 0 {
		t.Error("both inputs accepted")
	}
	if code, _, stderr := runCLI(t, "bench", "--ops", "^nothing$"); code == 0 || !strings.Contains(stderr, "select nothing") {
		t.Errorf("plain bench: exit %d, %s", code, stderr)
	}
}
