package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/equiv"
)

// stepDeletionReport is a report of two failing script ops whose shrunk
// counterexamples went through step deletion: one pass finished, one
// stopped at its cap.
func stepDeletionReport() auditReport {
	shrunk := func(op string, d equiv.StepDeletion) *equiv.Failure {
		return &equiv.Failure{Op: op, Impl: "exec:x", Case: "shrunk", Input: json.RawMessage(`{"steps":[]}`),
			Reason: "results differ (--errors code)", StepDeletion: &d}
	}
	return auditReport{Seed: 1, Cases: 10, Ops: []opResult{
		{Op: "radix.script", Impl: "exec:x", Cases: 10, Mismatches: 1, ShrunkFrom: 0,
			Shrunk: shrunk("radix.script", equiv.StepDeletion{From: 11, To: 4, Checks: 20})},
		{Op: "kvev.apply", Impl: "exec:x", Cases: 10, Mismatches: 1, ShrunkFrom: 0,
			Shrunk: shrunk("kvev.apply", equiv.StepDeletion{From: 60, To: 9, Checks: equiv.MaxStepDeletionChecks, Capped: true})},
	}}
}

// TestReportsSayWhatStepDeletionDid: the text and HTML reports say, under
// a stateful op's minimal counterexample, how many steps step deletion
// left of rapid's, and that a pass stopped at its cap may have left a
// removable step.
func TestReportsSayWhatStepDeletionDid(t *testing.T) {
	var text bytes.Buffer
	printAudit(&text, stepDeletionReport())
	page := filepath.Join(t.TempDir(), "r.html")
	if err := writeHTMLReport(page, stepDeletionReport(), ""); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"step deletion: 11 → 4 steps in 20 checks; no single step can be removed with the failure kept (1-minimal)",
		"step deletion: 60 → 9 steps in 1000 checks; stopped at its cap of 1000 checks, so a step may still be removable",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("HTML report lacks %q", want)
		}
	}
}
