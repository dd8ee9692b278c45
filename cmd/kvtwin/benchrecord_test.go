package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
)

// sampleGoBench is go test -bench output as `make bench` prints it: two
// packages, GOMAXPROCS suffixes, custom units, -count 4, PASS/ok lines.
// Times are divided by speedup, rates multiplied, so two calls make an
// old and a new run.
func sampleGoBench(speedup float64) string {
	var b strings.Builder
	b.WriteString("goos: linux\ngoarch: amd64\npkg: github.com/kvtwin/kvtwin/fast\ncpu: Test CPU @ 1.00GHz\n")
	for i := range 4 {
		jitter := 1 + float64(i)/100
		fmt.Fprintf(&b, "BenchmarkMatchFullHit64K/nodes=128/impl=fast-append-2 \t     100\t %.0f ns/op\t         0 copied-units/op\t       0 B/op\t       0 allocs/op\n", 36000*jitter/speedup)
		fmt.Fprintf(&b, "BenchmarkMatchFullHit64K/nodes=128/impl=ref-2 \t     100\t %.0f ns/op\t36686846 B/op\t    8629 allocs/op\n", 17e6*jitter/speedup)
	}
	b.WriteString("PASS\nok  \tgithub.com/kvtwin/kvtwin/fast\t6.819s\n")
	b.WriteString("goos: linux\ngoarch: amd64\npkg: github.com/kvtwin/kvtwin/prefix\ncpu: Test CPU @ 1.00GHz\n")
	for i := range 4 {
		jitter := 1 + float64(i)/100
		fmt.Fprintf(&b, "BenchmarkScore240K8Pools/tree=fast-2 \t 3000\t %.0f ns/op\t 1024 B/op\t 9 allocs/op\n", 400000*jitter/speedup)
	}
	b.WriteString("PASS\nok  \tgithub.com/kvtwin/kvtwin/prefix\t3.1s\n")
	b.WriteString("goos: linux\ngoarch: amd64\npkg: github.com/kvtwin/kvtwin/replay\ncpu: Test CPU @ 1.00GHz\n")
	for i := range 4 {
		jitter := 1 + float64(i)/100
		fmt.Fprintf(&b, "BenchmarkReplayBlocks/mixed-2 \t 10\t %.0f ns/op\t %.0f block-ops/s\t 0 B/op\t 0 allocs/op\n", 2e8*jitter/speedup, 4.95e6*speedup/jitter)
	}
	b.WriteString("PASS\nok  \tgithub.com/kvtwin/kvtwin/replay\t4.0s\n")
	return b.String()
}

// sampleRows are catalog rows of `kvtwin bench --json`, with a relayout
// shape and its copy yardstick, times divided by speedup.
func sampleRows(speedup float64) []benchRow {
	return []benchRow{
		{Op: "transfer.filter_cp_rank", Shape: "1024-pages-contiguous", Impl: "ref", NsPerOp: 15200, BytesPerOp: 6080, AllocsPerOp: 9},
		{Op: "transfer.filter_cp_rank", Shape: "1024-pages-contiguous", Impl: "fast", NsPerOp: 947 / speedup, BytesPerOp: 1024, AllocsPerOp: 1},
		{Op: "layout.convert", Shape: "relayout-lf-to-lpf-mla-64MiB", Impl: "ref", NsPerOp: 8.2e9, BytesPerOp: 67461120, AllocsPerOp: 1},
		{Op: "layout.convert", Shape: "relayout-lf-to-lpf-mla-64MiB", Impl: "fast", NsPerOp: 3e7 / speedup, BytesPerOp: 67461120, AllocsPerOp: 1},
		{Op: "layout.convert", Shape: "relayout-lf-to-lpf-mla-64MiB", Impl: "copy", NsPerOp: 1.9e7},
		{Op: "layout.convert", Shape: "relayout-lf-to-lpf-mla-64MiB", Impl: "clone", NsPerOp: 7.6e7, BytesPerOp: 67461120, AllocsPerOp: 1},
	}
}

// recordSample records a sample run through the CLI into dir and returns
// the record's path.
func recordSample(t *testing.T, dir, date string, speedup float64, extra ...string) string {
	t.Helper()
	in := t.TempDir()
	rows, err := json.Marshal(sampleRows(speedup))
	if err != nil {
		t.Fatal(err)
	}
	catalogPath, goPath := filepath.Join(in, "catalog.json"), filepath.Join(in, "go.txt")
	writeFile(t, catalogPath, rows)
	writeFile(t, goPath, []byte(sampleGoBench(speedup)))
	args := append([]string{"bench", "record", "--catalog", catalogPath, "--go-bench", goPath, "--dir", dir,
		"--commit", "0123456789abcdef", "--date", date}, extra...)
	code, _, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("bench record exited %d: %s", code, stderr)
	}
	path := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(stderr), "kvtwin bench record: wrote"))
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("record not written (stderr %q): %v", stderr, err)
	}
	return path
}

// writeFile writes a test input.
func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// benchText runs `kvtwin bench text` on a record.
func benchText(t *testing.T, path string) string {
	t.Helper()
	code, out, stderr := runCLI(t, "bench", "text", path)
	if code != 0 {
		t.Fatalf("bench text exited %d: %s", code, stderr)
	}
	return out
}

// parsedResult is a benchfmt result reduced to what must survive a round
// trip: file configuration, name, iterations and values.
type parsedResult struct {
	Config map[string]string
	Name   string
	Iters  int
	Values []benchfmt.Value
}

// parseAll reads Go benchmark text with benchfmt, failing on syntax errors.
func parseAll(t *testing.T, text string) []parsedResult {
	t.Helper()
	rd := benchfmt.NewReader(strings.NewReader(text), "text")
	var out []parsedResult
	for rd.Scan() {
		switch r := rd.Result().(type) {
		case *benchfmt.SyntaxError:
			t.Fatalf("benchfmt: %v", r)
		case *benchfmt.Result:
			cfg := map[string]string{}
			for _, c := range r.Config {
				if c.File {
					cfg[c.Key] = string(c.Value)
				}
			}
			out = append(out, parsedResult{cfg, r.Name.String(), r.Iters, append([]benchfmt.Value(nil), r.Values...)})
		}
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBenchRecordRoundTrip: a recorded run prints back as text benchfmt
// parses into the go test results unchanged, followed by one result per
// catalog row with its ns/op, B/op and allocs/op.
func TestBenchRecordRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := recordSample(t, dir, "2026-12-01T10:00:00Z", 1)
	if got, want := filepath.Base(path), "2026-12-01-0123456.json"; got != want {
		t.Fatalf("record named %s, want %s", got, want)
	}
	rec, err := loadRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	if rec.CPU != "Test CPU @ 1.00GHz" || rec.GoVersion == "" || rec.NumCPU < 1 || rec.GOMAXPROCS < 1 || rec.Dirty {
		t.Fatalf("metadata not recorded: %+v", rec)
	}
	goResults := parseAll(t, sampleGoBench(1))
	got := parseAll(t, benchText(t, path))
	rows := sampleRows(1)
	if len(got) != len(goResults)+len(rows) {
		t.Fatalf("%d results, want %d go + %d catalog", len(got), len(goResults), len(rows))
	}
	for i, want := range goResults {
		if fmt.Sprint(got[i]) != fmt.Sprint(want) {
			t.Errorf("result %d:\n got %v\nwant %v", i, got[i], want)
		}
	}
	for i, row := range rows {
		checkCatalogResult(t, got[len(goResults)+i], row)
	}
}

// checkCatalogResult checks one catalog row read back through benchfmt.
func checkCatalogResult(t *testing.T, r parsedResult, row benchRow) {
	t.Helper()
	wantName := "Catalog/op=" + row.Op + "/shape=" + row.Shape + "/impl=" + row.Impl
	if r.Name != wantName || r.Config["pkg"] != catalogPkg || r.Config["cpu"] != "Test CPU @ 1.00GHz" {
		t.Errorf("catalog result %s %v, want %s", r.Name, r.Config, wantName)
	}
	want := map[string]float64{"ns/op": row.NsPerOp, "B/op": float64(row.BytesPerOp), "allocs/op": float64(row.AllocsPerOp)}
	for _, v := range r.Values {
		unit, val := v.Unit, v.Value
		if v.OrigUnit != "" {
			unit, val = v.OrigUnit, v.OrigValue
		}
		if val != want[unit] {
			t.Errorf("%s: %s = %v, want %v", r.Name, unit, val, want[unit])
		}
		delete(want, unit)
	}
	if len(want) > 0 {
		t.Errorf("%s: missing %v", r.Name, want)
	}
}

// TestBenchRecordNames: a dirty tree is named -dirty, and a second run of
// the same day and commit gets -2 rather than replacing the first.
func TestBenchRecordNames(t *testing.T) {
	dir := t.TempDir()
	recordSample(t, dir, "2026-12-01T10:00:00Z", 1)
	second := recordSample(t, dir, "2026-12-01T11:00:00Z", 1)
	dirty := recordSample(t, dir, "2026-12-01T12:00:00Z", 1, "--dirty")
	if filepath.Base(second) != "2026-12-01-0123456-2.json" || filepath.Base(dirty) != "2026-12-01-0123456-dirty.json" {
		t.Fatalf("named %s and %s", second, dirty)
	}
}

// TestBenchTextComparesWithBenchstat: the text of two records, read as
// benchstat reads it (benchfmt) and compared with benchstat's statistics
// (benchmath, the Mann-Whitney test benchstat applies), shows the new
// run's halved times as a significant -50% and a catalog delta.
func TestBenchTextComparesWithBenchstat(t *testing.T) {
	dir := t.TempDir()
	old := samplesByName(t, benchText(t, recordSample(t, dir, "2026-12-01T10:00:00Z", 1)))
	cur := samplesByName(t, benchText(t, recordSample(t, dir, "2026-12-02T10:00:00Z", 2)))
	const headline = "MatchFullHit64K/nodes=128/impl=fast-append-2 sec/op"
	if _, ok := old[headline]; !ok {
		t.Fatalf("no %s in %v", headline, old)
	}
	compared := 0
	for name, o := range old {
		n, ok := cur[name]
		if !ok {
			t.Errorf("%s only in the old run", name)
			continue
		}
		compared++
		so, sn := benchmath.NewSample(o, &benchmath.DefaultThresholds), benchmath.NewSample(n, &benchmath.DefaultThresholds)
		cmp := benchmath.AssumeNothing.Compare(so, sn)
		delta := cmp.FormatDelta(benchmath.AssumeNothing.Summary(so, 0.95).Center, benchmath.AssumeNothing.Summary(sn, 0.95).Center)
		if name == headline && delta != "-50.00%" {
			t.Errorf("%s: delta %s (%v), want -50.00%%", name, delta, cmp)
		}
	}
	if compared < len(sampleRows(1))*3 {
		t.Fatalf("compared %d benchmark×unit pairs", compared)
	}
}

// samplesByName groups benchfmt values by benchmark name and unit, as
// benchstat's rows do.
func samplesByName(t *testing.T, text string) map[string][]float64 {
	t.Helper()
	out := map[string][]float64{}
	for _, r := range parseAll(t, text) {
		for _, v := range r.Values {
			key := r.Name + " " + v.Unit
			out[key] = append(out[key], v.Value)
		}
	}
	return out
}

// TestBenchChart: the chart of three runs is well-formed XML with one
// series per headline, a point per run for each, and nothing external.
func TestBenchChart(t *testing.T) {
	dir := t.TempDir()
	for i, date := range []string{"2026-12-01T10:00:00Z", "2026-12-02T10:00:00Z", "2026-12-03T10:00:00Z"} {
		recordSample(t, dir, date, 1+float64(i)/2)
	}
	writeFile(t, filepath.Join(dir, "README.md"), []byte("not a record"))
	out := filepath.Join(t.TempDir(), "chart.svg")
	if code, _, stderr := runCLI(t, "bench", "chart", "--dir", dir, "--out", out); code != 0 {
		t.Fatalf("bench chart exited %d: %s", code, stderr)
	}
	svg, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	series := svgSeries(t, svg)
	if len(series) != len(headlines()) {
		t.Fatalf("%d series, want %d (one per headline): %v", len(series), len(headlines()), series)
	}
	for _, h := range headlines() {
		if series[h.id] != 3 {
			t.Errorf("series %s has %d points, want 3", h.id, series[h.id])
		}
	}
	for _, bad := range []string{"<script", "href", "http://", "https://"} {
		if bytes.Contains(bytes.ReplaceAll(svg, []byte(`xmlns="http://www.w3.org/2000/svg"`), nil), []byte(bad)) {
			t.Errorf("chart contains %q", bad)
		}
	}
}

// TestBenchChartNoRuns: with no record yet the chart is still valid, with
// every series present and empty.
func TestBenchChartNoRuns(t *testing.T) {
	var buf bytes.Buffer
	if err := renderChart(&buf, buildChart(nil, headlines())); err != nil {
		t.Fatal(err)
	}
	series := svgSeries(t, buf.Bytes())
	if len(series) != len(headlines()) {
		t.Fatalf("%d series, want %d", len(series), len(headlines()))
	}
}

// svgSeries parses the SVG with encoding/xml to its end and counts the
// circles (points) of each <g data-series> element.
func svgSeries(t *testing.T, svg []byte) map[string]int {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	series, current := map[string]int{}, ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return series
		}
		if err != nil {
			t.Fatalf("chart is not valid XML: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok {
			for _, a := range se.Attr {
				if se.Name.Local == "g" && a.Name.Local == "data-series" {
					current = a.Value
					series[current] = 0
				}
			}
			if se.Name.Local == "circle" {
				series[current]++
			}
		}
	}
}

// TestBenchRecordBadInput: each kind of bad input fails with an error
// naming the file and, where one is at fault, the field.
func TestBenchRecordBadInput(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile(recordSample(t, dir, "2026-12-01T10:00:00Z", 1))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(good, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		name string
		body []byte
		want string
	}{
		{"not-json", []byte("BenchmarkX 1 2 ns/op\n"), "not a JSON object"},
		{"missing-commit", edit(func(m map[string]any) { delete(m, "commit") }), `field "commit" missing`},
		{"missing-dirty", edit(func(m map[string]any) { delete(m, "dirty") }), `field "dirty" missing`},
		{"wrong-type", edit(func(m map[string]any) { m["num_cpu"] = "two" }), `field "num_cpu"`},
		{"wrong-format", edit(func(m map[string]any) { m["format"] = "other/9" }), `field "format"`},
		{"bad-row", edit(func(m map[string]any) { m["catalog"].([]any)[1].(map[string]any)["ns_per_op"] = 0 }), "catalog[1].ns_per_op"},
		{"not-bench-text", edit(func(m map[string]any) { m["go_bench"] = "hello\n" }), "go_bench: no benchmark results"},
		{"oversized", append(good, bytes.Repeat([]byte(" "), maxBenchInput)...), "cap"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), c.name+".json")
			writeFile(t, path, c.body)
			code, _, stderr := runCLI(t, "bench", "text", path)
			if code == 0 || !strings.Contains(stderr, path) || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d, stderr %q; want the path and %q", code, stderr, c.want)
			}
		})
	}
}

// TestBenchRecordRefusesFailedRun: go test text with a FAIL line, text
// without results, or nothing at all is not recorded.
func TestBenchRecordRefusesFailedRun(t *testing.T) {
	in, dir := t.TempDir(), t.TempDir()
	for name, text := range map[string]string{
		"fail":  sampleGoBench(1) + "--- FAIL: BenchmarkX\nFAIL\tgithub.com/kvtwin/kvtwin/fast\t1.0s\n",
		"empty": "PASS\n",
	} {
		path := filepath.Join(in, name+".txt")
		writeFile(t, path, []byte(text))
		code, _, stderr := runCLI(t, "bench", "record", "--go-bench", path, "--dir", dir, "--commit", "abc")
		if code == 0 || !strings.Contains(stderr, path) {
			t.Errorf("%s: exit %d, stderr %q", name, code, stderr)
		}
	}
	code, _, stderr := runCLI(t, "bench", "record", "--go-bench", "", "--dir", dir, "--commit", "abc")
	if code == 0 || !strings.Contains(stderr, "nothing to record") {
		t.Errorf("no input: exit %d, stderr %q", code, stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("recorded %d files from bad input", len(entries))
	}
}

// TestBenchChartNamesBadRecord: one bad file in the directory stops the
// chart with its name, rather than draw a history with a run missing.
func TestBenchChartNamesBadRecord(t *testing.T) {
	dir := t.TempDir()
	recordSample(t, dir, "2026-12-01T10:00:00Z", 1)
	bad := filepath.Join(dir, "2026-12-02-bad.json")
	writeFile(t, bad, []byte("{"))
	code, _, stderr := runCLI(t, "bench", "chart", "--dir", dir, "--out", filepath.Join(t.TempDir(), "c.svg"))
	if code == 0 || !strings.Contains(stderr, bad) {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}
