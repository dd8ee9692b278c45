package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/equiv"
)

// htmlPage writes rep as the audit's HTML page (with the --bench file
// bench, "" for none) and returns it.
func htmlPage(t *testing.T, rep auditReport, bench string) string {
	t.Helper()
	page := filepath.Join(t.TempDir(), "r.html")
	if err := writeHTMLReport(page, rep, bench); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestHTMLReportHasASpeedSectionOnlyWithBench: an audit measures no speed,
// so its page has no speed section unless --bench names a `kvtwin bench
// --json` file; with one, the section charts its ratios, or says that the
// file has none.
func TestHTMLReportHasASpeedSectionOnlyWithBench(t *testing.T) {
	rep := unavailableReport()
	if page := htmlPage(t, rep, ""); strings.Contains(page, `id="bench"`) || strings.Contains(page, "Speed") || strings.Contains(page, "<svg") {
		t.Errorf("a page written without --bench has a speed section:\n%s", page)
	}
	dir := t.TempDir()
	ratios, noPair := filepath.Join(dir, "bench.json"), filepath.Join(dir, "ref-only.json")
	for path, body := range map[string]string{
		ratios: `[{"op":"transfer.group_contiguous","shape":"1k","impl":"ref","ns_per_op":3000},
{"op":"transfer.group_contiguous","shape":"1k","impl":"fast","ns_per_op":1000}]`,
		noPair: `[{"op":"transfer.group_contiguous","shape":"1k","impl":"ref","ns_per_op":3000}]`,
	} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	page := htmlPage(t, rep, ratios)
	if !strings.Contains(page, `<h2 id="bench">Speed: fast over ref</h2>`) || !strings.Contains(page, `aria-label="3.00×"`) {
		t.Errorf("a page written with --bench lacks its speed section or the 3.00× bar:\n%s", page)
	}
	page = htmlPage(t, rep, noPair)
	if !strings.Contains(page, `<h2 id="bench">`) || !strings.Contains(page, "times no op shape on both ref and fast") || strings.Contains(page, "<svg") {
		t.Errorf("a --bench file without a ref/fast pair: want the section saying so, no bar:\n%s", page)
	}
}

// pathsReport is a report with an adapter's mismatch shown as JSON paths,
// a value holding markup among them, and one local mismatch with only a
// go-cmp diff.
func pathsReport() auditReport {
	paths := []equiv.PathDiff{
		{Path: "$.trace[3].error.code", Ref: `"bad_slot"`, Impl: `"slot_busy"`},
		{Path: "$.trace[4].note", Ref: `"<b>x</b>"`, Impl: equiv.Absent},
	}
	remote := &equiv.Failure{Op: "hicache.layer_done_script", Impl: "exec:mine", Case: "valid/3", Input: []byte(`{"layers":2}`),
		Reason: "results differ (--errors code)", Diff: "  map[string]any{\n- \"a\": 1,\n}", Paths: paths, MorePaths: 7, Seq: 1}
	local := &equiv.Failure{Op: "transfer.group_contiguous", Impl: "fast", Case: "valid/1", Input: []byte(`{}`),
		Reason: "canonical results differ", Diff: "-\tcount: 1\n+\tcount: 2", Seq: 1}
	return auditReport{Seed: 1, Cases: 4, Ops: []opResult{
		{Op: "hicache.layer_done_script", Impl: "exec:mine", Cases: 4, Mismatches: 1, Failures: []*equiv.Failure{remote}, Shrunk: remote, ShrunkFrom: 1},
		{Op: "transfer.group_contiguous", Impl: "fast", Cases: 4, Mismatches: 1, Failures: []*equiv.Failure{local}, ShrunkFrom: -1},
	}}
}

// TestTextReportShowsAnAdaptersMismatchAsJSONPaths: one line per path,
// ref → impl, the count of the rest, and the go-cmp diff only where there
// are no paths (a case of this build).
func TestTextReportShowsAnAdaptersMismatchAsJSONPaths(t *testing.T) {
	var b bytes.Buffer
	printAudit(&b, pathsReport())
	for _, want := range []string{
		"differences (ref → exec:mine):\n  $.trace[3].error.code: \"bad_slot\" → \"slot_busy\"\n  $.trace[4].note: \"<b>x</b>\" → (absent)\n  … and 7 more",
		"diff (-ref +fast):\n-\tcount: 1",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "diff (-ref +exec:mine)") {
		t.Errorf("the adapter's mismatch shows the go-cmp diff beside its paths:\n%s", b.String())
	}
}

// TestHTMLReportColoursJSONPathDifferences: each path's reference value is
// marked old (red) and the implementation's new (green), as text, never
// markup; the go-cmp diff stays one click away, and a case of this build
// keeps its go-cmp diff.
func TestHTMLReportColoursJSONPathDifferences(t *testing.T) {
	page := htmlPage(t, pathsReport(), "")
	for _, want := range []string{
		`$.trace[3].error.code: <del>&#34;bad_slot&#34;</del> → <ins>&#34;slot_busy&#34;</ins>`,
		`$.trace[4].note: <del>&#34;&lt;b&gt;x&lt;/b&gt;&#34;</del> → <ins>(absent)</ins>`,
		"… and 7 more",
		"<details><summary>go-cmp diff (-ref +impl)</summary>",
		"<p>diff (-ref +impl)</p><pre>-\tcount: 1",
		"del{color:#a40e26", "ins{color:#116329",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "<b>x</b>") {
		t.Error("a value in a path reached the page as markup")
	}
	if n := strings.Count(page, `<pre class="paths">`); n != 2 {
		t.Errorf("%d path lists, want 2 (the minimal counterexample and the failure)", n)
	}
}
