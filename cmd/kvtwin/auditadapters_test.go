package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/remote"
)

// unavailableReport is a report with an op its adapter's breaker made
// unavailable and an adapter that failed outside every call, whose stderr
// holds markup.
func unavailableReport() auditReport {
	return auditReport{Seed: 1, Cases: 10, Ops: []opResult{
		{Op: "transfer.group_contiguous", Impl: "exec:hung", Cases: 10, Tables: 21, TransportErrors: 3, NotSent: 28, ShrunkFrom: -1,
			Unavailable: "3 failures in a row without a usable answer (the last: transfer.group_contiguous: timeout: no reply within 1s)"},
		{Op: "radix.script", Impl: "exec:hung", Cases: 10, Tables: 38, Passed: true, ShrunkFrom: -1},
	}, Adapters: []adapterReport{{Impl: "exec:hung", Log: remote.Log{Runs: 4, Unattributed: 1,
		FirstUnattributed: "process 4: protocol: second reply to call 9 (radix.script)",
		Kept: []remote.Run{{Run: 1, PID: 7, Ended: "killed: timeout: no reply", Kind: remote.KindTimeout, StderrBytes: 30, StderrLines: 1,
			Stderr: "<script>alert(1)</script> oops\n"}}}}}}
}

// TestTextReportNamesUnavailableOpsAndAdapterFailures: the text report
// marks the op UNAVAILABLE in its row, says why and how many cases were
// not sent, and names an adapter's failure outside every call.
func TestTextReportNamesUnavailableOpsAndAdapterFailures(t *testing.T) {
	var b bytes.Buffer
	printAudit(&b, unavailableReport())
	for _, want := range []string{
		"UNAVAILABLE (28 cases not sent; 0 mismatches, 3 transport errors)",
		"UNAVAILABLE: transfer.group_contiguous on exec:hung: 3 failures in a row without a usable answer (the last: transfer.group_contiguous: timeout: no reply within 1s); 28 cases not sent",
		"ADAPTER FAILED: exec:hung: 1 failures outside every call, which no case carries (the first: process 4: protocol: second reply to call 9 (radix.script))",
		"adapter exec:hung: 4 processes (3 restarts)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, b.String())
		}
	}
}

// TestHTMLReportShowsUnavailableOpsAndAdapterStderrEscaped: the page marks
// the cell UNAVAILABLE, gives the reason, and carries each kept process's
// stderr as text, never as markup.
func TestHTMLReportShowsUnavailableOpsAndAdapterStderrEscaped(t *testing.T) {
	page := filepath.Join(t.TempDir(), "r.html")
	if err := writeHTMLReport(page, unavailableReport(), ""); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"UNAVAILABLE · 28 not sent · 0 mismatches, 3 transport errors",
		"<b>UNAVAILABLE</b>: 3 failures in a row",
		"process 1 (pid 7): killed: timeout: no reply",
		"&lt;script&gt;alert(1)&lt;/script&gt; oops",
		"<b>ADAPTER FAILED</b>: 1 failures outside every call",
	} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("page lacks %q", want)
		}
	}
	if bytes.Contains(b, []byte("<script>")) {
		t.Error("the adapter's stderr reached the page as markup")
	}
}

// TestMergeKeepsAnOpUnavailableAndEveryShardsAdapters: an op unavailable
// in one shard is unavailable merged, the cases not sent add up, each
// shard's adapter log is kept, and an adapter failure outside every call
// fails the merged verdict.
func TestMergeKeepsAnOpUnavailableAndEveryShardsAdapters(t *testing.T) {
	a, b := unavailableReport(), unavailableReport()
	a.Shard, b.Shard = &shardSpec{Index: 0, Count: 2}, &shardSpec{Index: 1, Count: 2}
	b.Ops[0].Unavailable, b.Ops[0].NotSent, b.Ops[0].TransportErrors = "", 0, 0
	b.Adapters[0].Shard, b.Adapters[0].Unattributed = 1, 0
	for _, r := range []auditReport{a, b} { // each shard ran 5 of the 10 cases, shard 0 the tables
		for i := range r.Ops {
			r.Ops[i].Cases = r.Shard.size(r.Cases)
			if r.Shard.Index != 0 {
				r.Ops[i].Tables = 0
			}
		}
	}
	m, err := mergeReports([]auditReport{a, b}, 5)
	if err != nil {
		t.Fatal(err)
	}
	var gc opResult
	for _, r := range m.Ops {
		if r.Op == "transfer.group_contiguous" {
			gc = r
		}
	}
	if gc.Unavailable == "" || gc.NotSent != 28 || gc.Passed || m.Passed || len(m.Adapters) != 2 {
		t.Errorf("merged: unavailable %q, not sent %d, op passed %v, audit passed %v, %d adapter logs", gc.Unavailable, gc.NotSent, gc.Passed, m.Passed, len(m.Adapters))
	}
	a.Ops[0] = b.Ops[0]
	if m, _ := mergeReports([]auditReport{a, b}, 5); m.Passed {
		t.Error("a merge whose only failure is an adapter's outside every call passed")
	}
}

// TestNotSentGateTakesOnlyRefusedCalls: a failure is "not sent" only when
// the breaker refused its very input, once per refusal.
func TestNotSentGateTakesOnlyRefusedCalls(t *testing.T) {
	g := newNotSentGate(nil)
	g.refused[`{"a":1}`] = 2
	refused := &equiv.Failure{Input: []byte(`{"a":1}`), Transport: true}
	for i, c := range []struct {
		f    *equiv.Failure
		want bool
	}{
		{nil, false},
		{&equiv.Failure{Input: []byte(`{"a":1}`)}, false}, // a mismatch, not a refusal
		{&equiv.Failure{Input: []byte(`{"a":2}`), Transport: true}, false},
		{refused, true},
		{refused, true},
		{refused, false}, // both refusals taken
	} {
		if got := g.take(c.f); got != c.want {
			t.Errorf("step %d: take = %v, want %v", i, got, c.want)
		}
	}
}

// TestAuditRefusesAnUnavailableAfterOutsideItsBounds: --unavailable-after
// is a number a user types; 0 and a typo past the bound are refused with
// the flag, the value and the bound.
func TestAuditRefusesAnUnavailableAfterOutsideItsBounds(t *testing.T) {
	for _, v := range []string{"0", "-1", "1001"} {
		code, _, stderr := runCLI(t, "audit", "--unavailable-after", v, "--ops", "^transfer.group_contiguous$", "--cases", "1")
		if code == 0 || !strings.Contains(stderr, "--unavailable-after "+v+": want 1..1000") {
			t.Errorf("--unavailable-after %s: exit %d, %q", v, code, stderr)
		}
	}
}
