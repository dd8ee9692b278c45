package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
