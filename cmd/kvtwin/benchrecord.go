package main

// `kvtwin bench record|text|chart`: a benchmark run kept as a JSON file in
// docs/bench/ (metadata, the catalog rows of `kvtwin bench --json`, the raw
// `go test -bench` text), turned back into benchstat input, and drawn as the
// history chart docs/img/bench-history.svg. Go benchmark text is read and
// written with golang.org/x/perf/benchfmt, the format's maintained library.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/perf/benchfmt"

	"github.com/kvtwin/kvtwin/internal/bounded"
)

const (
	// benchRecordFormat names the layout of a record file, so a reader can
	// tell a record from other JSON and a later layout from this one.
	benchRecordFormat = "kvtwin-bench-record/1"
	// maxBenchInput caps every file and stream these commands read: a full
	// `make bench` run is well under 1 MiB, and a cap keeps a wrong path
	// (a trace, a binary) from being read whole into memory.
	maxBenchInput = 16 << 20
	// catalogPkg is the pkg: key of the catalog rows in benchstat text, so
	// benchstat puts them in a table of their own, apart from go test's.
	catalogPkg = "github.com/kvtwin/kvtwin/catalog"
)

// benchRecord is one recorded `make bench` run (docs/bench/README.md).
type benchRecord struct {
	Format     string     `json:"format"`
	Date       time.Time  `json:"date"`
	Commit     string     `json:"commit"`
	Dirty      bool       `json:"dirty"`
	GoVersion  string     `json:"go_version"`
	GOOS       string     `json:"goos"`
	GOARCH     string     `json:"goarch"`
	CPU        string     `json:"cpu"`
	NumCPU     int        `json:"num_cpu"`
	GOMAXPROCS int        `json:"gomaxprocs"`
	Catalog    []benchRow `json:"catalog"`
	GoBench    string     `json:"go_bench"`
}

// requiredRecordFields are the members a record must carry; checked by
// presence, because false and 0 are values a reader cannot tell from absence.
var requiredRecordFields = []string{"format", "date", "commit", "dirty", "go_version", "goos", "goarch", "num_cpu", "gomaxprocs", "catalog", "go_bench"}

// newBenchRecordCmd is `kvtwin bench record`: the Makefile's bench target
// pipes go test into it so the run is both shown and kept.
func newBenchRecordCmd() *cobra.Command {
	var o recordOptions
	cmd := &cobra.Command{
		Use:   "record",
		Short: "Record a benchmark run (catalog rows + go test -bench text) as docs/bench/DATE-COMMIT[-dirty].json",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runRecord(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.catalog, "catalog", "", "catalog rows written by kvtwin bench --json (optional)")
	f.StringVar(&o.goBench, "go-bench", "-", "go test -bench output to record; - reads stdin, empty records none")
	f.StringVar(&o.dir, "dir", "docs/bench", "directory of records; the file is named DATE-COMMIT[-dirty][-N].json")
	f.StringVar(&o.out, "out", "", "write exactly this file instead of a new one in --dir")
	f.StringVar(&o.commit, "commit", "", "commit to record (default: git rev-parse HEAD, dirty from git status)")
	f.BoolVar(&o.dirty, "dirty", false, "with --commit: record the tree as having uncommitted changes")
	f.StringVar(&o.date, "date", "", "RFC 3339 time of the run (default: now)")
	f.BoolVar(&o.tee, "tee", false, "copy the Go benchmark text to stdout as it is read")
	f.BoolVar(&o.table, "table", false, "first print the catalog rows as kvtwin bench prints them")
	return cmd
}

// newBenchTextCmd is `kvtwin bench text`: a record back as benchstat input,
// which is how `make bench-compare` feeds recorded runs to benchstat.
func newBenchTextCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "text FILE.json",
		Short: "Print a recorded run as Go benchmark text for benchstat (go test lines, then the catalog rows)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rec, err := loadRecord(args[0])
			if err != nil {
				return err
			}
			return writeBenchText(cmd.OutOrStdout(), rec)
		},
	}
}

// newBenchChartCmd is `kvtwin bench chart`: redraws the history chart from
// every record, so the chart never drifts from the files it summarises.
func newBenchChartCmd() *cobra.Command {
	var dir, out string
	cmd := &cobra.Command{
		Use:   "chart",
		Short: "Draw the headline ratios of every recorded run as an SVG line chart",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return writeChartFile(dir, out, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "docs/bench", "directory of records (*.json)")
	cmd.Flags().StringVar(&out, "out", "docs/img/bench-history.svg", "SVG file to write")
	return cmd
}

// recordOptions are `kvtwin bench record`'s flags.
type recordOptions struct {
	catalog, goBench, dir, out, commit, date string
	dirty, tee, table                        bool
}

// runRecord reads both inputs, fills in the metadata and writes the record;
// it prints the path on stderr so stdout stays the benchmarks' own output.
func runRecord(cmd *cobra.Command, o recordOptions) error {
	rows, err := loadCatalogRows(o.catalog)
	if err != nil {
		return err
	}
	if o.table && len(rows) > 0 {
		printBench(cmd.OutOrStdout(), rows)
	}
	text, err := readGoBench(cmd, o)
	if err != nil {
		return err
	}
	if len(rows) == 0 && len(text) == 0 {
		return errors.New("nothing to record: give --catalog, --go-bench or both")
	}
	rec, err := newRecord(o, rows, text)
	if err != nil {
		return err
	}
	path, err := writeRecord(o, rec)
	if err != nil {
		return err
	}
	fmt.Fprintln(cmd.ErrOrStderr(), "kvtwin bench record: wrote", path)
	return nil
}

// readGoBench reads and checks the go test text: it must parse as Go
// benchmark format, hold results, and come from a run that did not fail.
func readGoBench(cmd *cobra.Command, o recordOptions) ([]byte, error) {
	if o.goBench == "" {
		return nil, nil
	}
	name, text, err := readGoBenchInput(cmd, o)
	if err != nil {
		return nil, err
	}
	if err := checkGoBenchPassed(name, text); err != nil {
		return nil, err
	}
	if _, err := parseGoBench(name, text); err != nil {
		return nil, err
	}
	return text, nil
}

// readGoBenchInput reads --go-bench (a file, or stdin for -), copying it to
// stdout as it arrives with --tee so `make bench` shows progress live.
func readGoBenchInput(cmd *cobra.Command, o recordOptions) (string, []byte, error) {
	if o.goBench != "-" {
		b, err := readCappedFile(o.goBench)
		return o.goBench, b, err
	}
	var in io.Reader = cmd.InOrStdin()
	if o.tee {
		in = io.TeeReader(in, cmd.OutOrStdout())
	}
	b, err := readCapped(in, "stdin")
	return "stdin", b, err
}

// checkGoBenchPassed refuses text of a failed go test run: its numbers would
// be kept beside a failure nobody sees in the record.
func checkGoBenchPassed(name string, text []byte) error {
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(nil, maxBenchInput)
	for line := 1; sc.Scan(); line++ {
		l := sc.Text()
		if strings.HasPrefix(l, "FAIL") || strings.HasPrefix(l, "--- FAIL") || strings.HasPrefix(l, "panic:") {
			return fmt.Errorf("%s:%d: go test failed (%q); not recording", name, line, l)
		}
	}
	return sc.Err()
}

// parseGoBench parses Go benchmark text with benchfmt and keeps copies of
// the results (the Reader reuses its own); a syntax error or no result at
// all is an error naming the input, so garbage is never recorded.
func parseGoBench(name string, text []byte) ([]*benchfmt.Result, error) {
	rd := benchfmt.NewReader(bytes.NewReader(text), name)
	var out []*benchfmt.Result
	for rd.Scan() {
		switch r := rd.Result().(type) {
		case *benchfmt.SyntaxError:
			return nil, fmt.Errorf("%s: field go_bench, line %d: %s", name, r.Line, r.Msg)
		case *benchfmt.Result:
			out = append(out, r.Clone())
		}
	}
	if err := rd.Err(); err != nil {
		return nil, fmt.Errorf("%s: go_bench: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: go_bench: no benchmark results (is this `go test -bench` output?)", name)
	}
	return out, nil
}

// loadCatalogRows reads `kvtwin bench --json` output; an empty path means
// the run has no catalog part.
func loadCatalogRows(path string) ([]benchRow, error) {
	if path == "" {
		return nil, nil
	}
	b, err := readCappedJSON(path, map[string]int{"[]": maxBenchRows})
	if err != nil {
		return nil, err
	}
	var rows []benchRow
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, fmt.Errorf("%s: not the JSON rows of `kvtwin bench --json`: %w", path, err)
	}
	return rows, validateRows(path, rows)
}

// validateRows checks what benchstat and the chart rely on: every row
// names its op, shape and implementation and has a positive time.
func validateRows(name string, rows []benchRow) error {
	for i, r := range rows {
		field := ""
		switch {
		case r.Op == "":
			field = "op"
		case r.Shape == "":
			field = "shape"
		case r.Impl == "":
			field = "impl"
		case !(r.NsPerOp > 0):
			field = "ns_per_op"
		}
		if field != "" {
			return fmt.Errorf("%s: field catalog[%d].%s: missing or not positive", name, i, field)
		}
	}
	return nil
}

// benchInputCap names maxBenchInput in messages.
const benchInputCap = "the 16 MiB cap on benchmark input"

// readCappedFile reads a whole file of at most maxBenchInput bytes.
func readCappedFile(path string) ([]byte, error) {
	return bounded.ReadFile(path, bounded.Limits{MaxBytes: maxBenchInput, BytesName: benchInputCap})
}

// readCappedJSON reads a whole JSON file of at most maxBenchInput bytes,
// nested at most 16 deep (records and rows are 3), with lists bounded
// before they are decoded.
func readCappedJSON(path string, lists map[string]int) ([]byte, error) {
	return bounded.ReadFile(path, bounded.Limits{MaxBytes: maxBenchInput, BytesName: benchInputCap, MaxDepth: 16, Lists: lists})
}

// maxBenchRows bounds the catalog rows of a bench file or record: a full
// catalog run is a few hundred.
const maxBenchRows = 1 << 16

// readCapped reads r up to maxBenchInput bytes and fails, naming the input,
// rather than truncate silently or read an unbounded stream.
func readCapped(r io.Reader, name string) ([]byte, error) {
	b, err := bounded.ReadAll(r, bounded.Limits{MaxBytes: maxBenchInput, BytesName: benchInputCap})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return b, nil
}

// newRecord fills in the run's metadata: what was measured (commit, dirty),
// when, and on what (toolchain, OS, CPU, cores), so runs can be compared.
func newRecord(o recordOptions, rows []benchRow, text []byte) (*benchRecord, error) {
	date := time.Now().UTC()
	if o.date != "" {
		d, err := time.Parse(time.RFC3339, o.date)
		if err != nil {
			return nil, fmt.Errorf("--date: %w", err)
		}
		date = d.UTC()
	}
	commit, dirty, err := o.commit, o.dirty, error(nil)
	if commit == "" {
		if commit, dirty, err = gitState(); err != nil {
			return nil, err
		}
	}
	if rows == nil {
		rows = []benchRow{}
	}
	return &benchRecord{Format: benchRecordFormat, Date: date, Commit: commit, Dirty: dirty,
		GoVersion: runtime.Version(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, CPU: cpuModel(text),
		NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Catalog: rows, GoBench: string(text)}, nil
}

// gitState is the checked-out commit and whether tracked or untracked files
// differ from it; records and the chart (which `make bench` rewrites) do
// not count, or every second run would call itself dirty.
func gitState() (string, bool, error) {
	out, err := exec.Command("git", "rev-parse", "--verify", "HEAD").Output()
	if err != nil {
		return "", false, fmt.Errorf("git rev-parse HEAD (give --commit outside a checkout): %w", err)
	}
	status, err := exec.Command("git", "status", "--porcelain", "--",
		":(top,exclude)docs/bench", ":(top,exclude)docs/img/bench-history.svg").Output()
	if err != nil {
		return "", false, fmt.Errorf("git status: %w", err)
	}
	return strings.TrimSpace(string(out)), len(bytes.TrimSpace(status)) > 0, nil
}

// cpuModel is the CPU go test reported (its cpu: line), else the kernel's
// model name, else empty: the record says which machine produced it.
func cpuModel(goBench []byte) string {
	if len(goBench) > 0 {
		rd := benchfmt.NewReader(bytes.NewReader(goBench), "go_bench")
		for rd.Scan() {
			if r, ok := rd.Result().(*benchfmt.Result); ok && r.GetConfig("cpu") != "" {
				return r.GetConfig("cpu")
			}
		}
	}
	return procCPUModel()
}

// procCPUModel reads the first "model name" of /proc/cpuinfo (Linux); other
// systems record no model rather than fail.
func procCPUModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// writeRecord writes rec to --out, or to a new dated file in --dir that
// never replaces an earlier run of the same day and commit.
func writeRecord(o recordOptions, rec *benchRecord) (string, error) {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return "", err
	}
	b = append(b, '\n')
	if o.out != "" {
		return o.out, os.WriteFile(o.out, b, 0o644)
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return "", err
	}
	return createNumbered(o.dir, recordBaseName(rec), b)
}

// recordBaseName is DATE-SHORTCOMMIT[-dirty], the name docs/bench/README.md
// describes.
func recordBaseName(rec *benchRecord) string {
	return rec.Date.UTC().Format("2006-01-02") + "-" + commitLabel(rec)
}

// commitLabel is the short commit, marked -dirty when the tree was: what a
// reader needs to find the code that was measured.
func commitLabel(rec *benchRecord) string {
	short := rec.Commit
	if len(short) > 7 {
		short = short[:7]
	}
	if rec.Dirty {
		short += "-dirty"
	}
	return short
}

// createNumbered creates base.json, or base-2.json, base-3.json… if taken,
// with O_EXCL so two runs never overwrite each other.
func createNumbered(dir, base string, b []byte) (string, error) {
	for n := 1; n < 1000; n++ {
		name := base + ".json"
		if n > 1 {
			name = fmt.Sprintf("%s-%d.json", base, n)
		}
		path := filepath.Join(dir, name)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		if _, err := f.Write(b); err != nil {
			f.Close()
			return "", err
		}
		return path, f.Close()
	}
	return "", fmt.Errorf("%s: 999 records named %s already", dir, base)
}

// loadRecord reads and checks a record file; every error names the file
// and, where one is at fault, the field.
func loadRecord(path string) (*benchRecord, error) {
	b, err := readCappedJSON(path, map[string]int{"*": 1 << 10, "catalog[]": maxBenchRows})
	if err != nil {
		return nil, err
	}
	return decodeRecord(path, b)
}

// decodeRecord decodes a record, first as a bare object to report missing
// members by name, then into benchRecord, then checks the values.
func decodeRecord(path string, b []byte) (*benchRecord, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object (a kvtwin bench record): %w", path, err)
	}
	for _, k := range requiredRecordFields {
		if _, ok := members[k]; !ok {
			return nil, fmt.Errorf("%s: field %q missing", path, k)
		}
	}
	var rec benchRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("%s: field %q: %s is not a %s", path, te.Field, te.Value, te.Type)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &rec, rec.validate(path)
}

// validate checks the values a reader relies on: the format, a commit, and
// parseable contents (catalog rows, benchfmt text).
func (rec *benchRecord) validate(path string) error {
	switch {
	case rec.Format != benchRecordFormat:
		return fmt.Errorf("%s: field \"format\": %q, want %q", path, rec.Format, benchRecordFormat)
	case rec.Commit == "":
		return fmt.Errorf("%s: field \"commit\": empty", path)
	case rec.Date.IsZero():
		return fmt.Errorf("%s: field \"date\": zero", path)
	case len(rec.Catalog) == 0 && rec.GoBench == "":
		return fmt.Errorf("%s: fields \"catalog\" and \"go_bench\": both empty", path)
	}
	if err := validateRows(path, rec.Catalog); err != nil {
		return err
	}
	if rec.GoBench == "" {
		return nil
	}
	_, err := parseGoBench(path, []byte(rec.GoBench))
	return err
}

// writeBenchText prints a record as benchstat input: the go test text as
// recorded, then the catalog rows as benchmark lines under their own pkg.
func writeBenchText(w io.Writer, rec *benchRecord) error {
	var b strings.Builder
	if rec.GoBench != "" {
		b.WriteString(strings.TrimRight(rec.GoBench, "\n") + "\n\n")
	}
	if len(rec.Catalog) > 0 {
		writeCatalogText(&b, rec)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeCatalogText writes the catalog rows in the Go benchmark format,
// named Catalog/op=…/shape=…/impl=… (benchstat's /op, /shape and /impl
// keys), after a full file configuration so none leaks in from the go
// test text before them. Plain decimals keep the lines readable; the
// tests read them back with benchfmt.
func writeCatalogText(b *strings.Builder, rec *benchRecord) {
	fmt.Fprintf(b, "goos: %s\ngoarch: %s\npkg: %s\n", rec.GOOS, rec.GOARCH, catalogPkg)
	if rec.CPU != "" {
		fmt.Fprintf(b, "cpu: %s\n", rec.CPU)
	}
	for _, row := range rec.Catalog {
		fmt.Fprintf(b, "Benchmark%s\t1\t%s ns/op\t%d B/op\t%d allocs/op\n", catalogName(row),
			strconv.FormatFloat(row.NsPerOp, 'f', -1, 64), row.BytesPerOp, row.AllocsPerOp)
	}
}

// catalogName is a row's benchmark name without the Benchmark prefix (as
// benchfmt.Result.Name holds it).
func catalogName(row benchRow) string {
	return "Catalog/op=" + namePart(row.Op) + "/shape=" + namePart(row.Shape) + "/impl=" + namePart(row.Impl)
}

// namePart keeps a name part one part: a space would end the benchmark
// name and a slash would start a new part.
func namePart(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || r == '\t' || r == '\n' || r == '\r' {
			return '_'
		}
		return r
	}, s)
}

// benchRun is one record loaded for the chart, its go test text parsed.
type benchRun struct {
	path    string
	rec     *benchRecord
	results []*benchfmt.Result
}

// headline is one line of the history chart: how to read its figure from
// a run, and which way is better, so every line can be drawn as "speed
// relative to the first run that has it" (up is faster).
type headline struct {
	id, label    string
	higherBetter bool
	value        func(*benchRun) (float64, bool)
	format       func(float64) string
}

// headlines are the chart's series: the catalog's overall fast/ref ratio,
// the radix issue's three targets, and the layout issue's relayout.
func headlines() []headline {
	return []headline{
		{"catalog-ref-over-fast", "catalog: geomean ref ÷ fast", true,
			func(r *benchRun) (float64, bool) { return geomeanRatio(r.rec.Catalog, "ref", "fast", nil) }, fmtTimes},
		{"match-full-hit-64k", "MatchFullHit64K nodes=128 fast-append ns/op", false,
			goBenchHeadline("MatchFullHit64K/nodes=128/impl=fast-append", "ns/op"), fmtNs},
		{"score-240k-8pools", "Score240K8Pools fast ns/op", false,
			goBenchHeadline("Score240K8Pools/tree=fast", "ns/op"), fmtNs},
		{"replay-blocks-mixed", "ReplayBlocks mixed block-ops/s", true,
			goBenchHeadline("ReplayBlocks/mixed", "block-ops/s"), fmtPerSec},
		{"relayout-copy-over-fast", "layout.convert relayout: geomean copy ÷ fast", true,
			func(r *benchRun) (float64, bool) {
				return geomeanRatio(r.rec.Catalog, "copy", "fast", isRelayout)
			}, fmtTimes},
	}
}

// isRelayout selects the layout.convert shapes that convert a host arena,
// the ones the foundation issue measured against a plain copy.
func isRelayout(r benchRow) bool {
	return r.Op == "layout.convert" && strings.HasPrefix(r.Shape, "relayout-")
}

// geomeanRatio is the geometric mean over op × shape of num's time over
// den's time (rows of keep, or all): a ratio of one run, immune to the
// machine's drift between runs.
func geomeanRatio(rows []benchRow, num, den string, keep func(benchRow) bool) (float64, bool) {
	type key struct{ op, shape string }
	ns := map[key]map[string]float64{}
	for _, r := range rows {
		if keep != nil && !keep(r) {
			continue
		}
		k := key{r.Op, r.Shape}
		if ns[k] == nil {
			ns[k] = map[string]float64{}
		}
		ns[k][r.Impl] = r.NsPerOp
	}
	sum, n := 0.0, 0
	for _, m := range ns {
		if a, b := m[num], m[den]; a > 0 && b > 0 {
			sum += math.Log(a / b)
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return math.Exp(sum / float64(n)), true
}

// goBenchHeadline reads one Go benchmark's figure in unit, the median if
// the run repeated it (-count).
func goBenchHeadline(name, unit string) func(*benchRun) (float64, bool) {
	return func(r *benchRun) (float64, bool) {
		var vs []float64
		for _, res := range r.results {
			if benchKey(res.Name) != name {
				continue
			}
			if v, ok := origValue(res, unit); ok {
				vs = append(vs, v)
			}
		}
		return median(vs)
	}
}

// benchKey is a result's name without the -GOMAXPROCS suffix, so runs on
// machines of different core counts line up.
func benchKey(n benchfmt.Name) string {
	base, parts := n.Parts()
	var b strings.Builder
	b.Write(base)
	for _, p := range parts {
		if len(p) > 0 && p[0] == '/' {
			b.Write(p)
		}
	}
	return b.String()
}

// origValue is a measurement in the unit go test printed (benchfmt tidies
// ns/op into sec/op and keeps the original beside it).
func origValue(r *benchfmt.Result, unit string) (float64, bool) {
	for _, v := range r.Values {
		if v.OrigUnit == unit {
			return v.OrigValue, true
		}
		if v.OrigUnit == "" && v.Unit == unit {
			return v.Value, true
		}
	}
	return 0, false
}

// median is the middle of vs (the mean of the two middles), as benchstat
// summarises repeated runs.
func median(vs []float64) (float64, bool) {
	if len(vs) == 0 {
		return 0, false
	}
	slices.Sort(vs)
	m := len(vs) / 2
	if len(vs)%2 == 0 {
		return (vs[m-1] + vs[m]) / 2, true
	}
	return vs[m], true
}

// fmtTimes formats a ratio for the legend.
func fmtTimes(v float64) string { return fmt.Sprintf("%.3g×", v) }

// fmtPerSec formats an operations-per-second figure for the legend.
func fmtPerSec(v float64) string { return fmtRate(v) + "/s" }

// loadRuns loads every record in dir (README.md and other files are not
// records), oldest first, failing on the first bad one by name.
func loadRuns(dir string) ([]*benchRun, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var runs []*benchRun
	for _, p := range paths {
		run, err := loadRun(p)
		if err != nil {
			return nil, err
		}
		runs = append(runs, run)
	}
	slices.SortStableFunc(runs, func(a, b *benchRun) int { return a.rec.Date.Compare(b.rec.Date) })
	return runs, nil
}

// loadRun loads one record and parses its go test text.
func loadRun(path string) (*benchRun, error) {
	rec, err := loadRecord(path)
	if err != nil {
		return nil, err
	}
	run := &benchRun{path: path, rec: rec}
	if rec.GoBench != "" {
		if run.results, err = parseGoBench(path, []byte(rec.GoBench)); err != nil {
			return nil, err
		}
	}
	return run, nil
}

// writeChartFile redraws the chart from dir's records into out, through a
// temporary file so a failed draw leaves the old chart in place.
func writeChartFile(dir, out string, log io.Writer) error {
	runs, err := loadRuns(dir)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := renderChart(&buf, buildChart(runs, headlines())); err != nil {
		return err
	}
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	fmt.Fprintf(log, "kvtwin bench chart: wrote %s (%d runs)\n", out, len(runs))
	return nil
}

// chartData is what the SVG template draws, all positions in pixels.
type chartData struct {
	W, H                     int
	Left, Top, Right, Bottom float64
	Note                     string
	YTicks, XTicks           []chartLabel
	Series                   []chartSeries
}

// chartLabel is a positioned piece of text (a tick label, a point's tooltip).
type chartLabel struct {
	X, Y float64
	Text string
}

// chartSeries is one headline's line, points and legend entry.
type chartSeries struct {
	ID, Label, Color string
	Points           string
	Dots             []chartLabel
	LegendY          float64
}

// chartColors tell the series apart (a colour-blind-safe palette).
var chartColors = []string{"#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9"}

// buildChart lays the runs out left to right, one slot per run, and each
// headline's relative speeds on a shared linear axis that includes 1.
func buildChart(runs []*benchRun, hs []headline) chartData {
	c := chartData{W: 760, Left: 64, Top: 48, Right: 740, Bottom: 300}
	rel := make([][]float64, len(hs))
	labels := make([]string, len(hs))
	for i, h := range hs {
		rel[i], labels[i] = relativeSeries(h, runs)
	}
	lo, hi := yRange(rel)
	c.YTicks = yTicks(c, lo, hi)
	c.XTicks = xTicks(c, runs)
	for i, h := range hs {
		s := chartSeries{ID: h.id, Label: labels[i], Color: chartColors[i%len(chartColors)], LegendY: c.Bottom + 96 + 18*float64(i)}
		s.Points, s.Dots = seriesPoints(c, runs, rel[i], lo, hi)
		c.Series = append(c.Series, s)
	}
	c.H = int(c.Bottom + 96 + 18*float64(len(hs)))
	if len(runs) == 0 {
		c.Note = "No recorded runs yet: `make bench` records one in docs/bench/."
	}
	return c
}

// relativeSeries is h's figure in each run relative to the first run that
// has it (NaN where a run lacks it), oriented so that higher is faster, and
// the legend text saying what 1 stands for.
func relativeSeries(h headline, runs []*benchRun) ([]float64, string) {
	out := make([]float64, len(runs))
	first, firstRun := 0.0, -1
	for j, r := range runs {
		out[j] = math.NaN()
		v, ok := h.value(r)
		if !ok || !(v > 0) {
			continue
		}
		if firstRun < 0 {
			first, firstRun = v, j
		}
		out[j] = v / first
		if !h.higherBetter {
			out[j] = first / v
		}
	}
	if firstRun < 0 {
		return out, h.label + " (no data yet)"
	}
	return out, fmt.Sprintf("%s (1 = %s on %s)", h.label, h.format(first), runs[firstRun].rec.Date.UTC().Format("2006-01-02"))
}

// yRange is the span of every finite value and 1, padded by a tenth so no
// point sits on the frame.
func yRange(rel [][]float64) (float64, float64) {
	lo, hi := 1.0, 1.0
	for _, s := range rel {
		for _, v := range s {
			if !math.IsNaN(v) {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	pad := max((hi-lo)/10, 0.05)
	return max(lo-pad, 0), hi + pad
}

// yPos maps a relative value to a pixel row.
func yPos(c chartData, v, lo, hi float64) float64 {
	return c.Bottom - (v-lo)/(hi-lo)*(c.Bottom-c.Top)
}

// xPos is the centre of run j's slot among n.
func xPos(c chartData, j, n int) float64 {
	return c.Left + (c.Right-c.Left)*(float64(j)+0.5)/float64(n)
}

// yTicks are five evenly spaced labels on the value axis.
func yTicks(c chartData, lo, hi float64) []chartLabel {
	var out []chartLabel
	for i := range 5 {
		v := lo + (hi-lo)*float64(i)/4
		out = append(out, chartLabel{X: c.Left, Y: yPos(c, v, lo, hi), Text: fmt.Sprintf("%.2f×", v)})
	}
	return out
}

// xTicks label each run by date and commit (at most 16 labels, evenly
// thinned, so they stay legible).
func xTicks(c chartData, runs []*benchRun) []chartLabel {
	step := max(1, (len(runs)+15)/16)
	var out []chartLabel
	for j := 0; j < len(runs); j += step {
		rec := runs[j].rec
		text := rec.Date.UTC().Format("2006-01-02") + " " + commitLabel(rec)
		out = append(out, chartLabel{X: xPos(c, j, len(runs)), Y: c.Bottom + 14, Text: text})
	}
	return out
}

// seriesPoints are the polyline through a series' values (skipping runs
// without one) and a dot per value whose tooltip names run and value.
func seriesPoints(c chartData, runs []*benchRun, rel []float64, lo, hi float64) (string, []chartLabel) {
	var pts []string
	var dots []chartLabel
	for j, v := range rel {
		if math.IsNaN(v) {
			continue
		}
		x, y := xPos(c, j, len(runs)), yPos(c, v, lo, hi)
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
		dots = append(dots, chartLabel{X: x, Y: y, Text: fmt.Sprintf("%s: %.3f×", filepath.Base(runs[j].path), v)})
	}
	if len(pts) < 2 {
		return "", dots
	}
	return strings.Join(pts, " "), dots
}

// chartTemplate is the SVG: self-contained (no script, no external
// reference), every text through xmlText so the output is well-formed XML.
var chartTemplate = template.Must(template.New("chart").Funcs(template.FuncMap{"x": xmlText, "f": fmtPx}).Parse(
	`<svg xmlns="http://www.w3.org/2000/svg" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" font-family="sans-serif" font-size="12">
<title>kvtwin benchmark history (kvtwin bench chart)</title>
<rect width="{{.W}}" height="{{.H}}" fill="#ffffff"/>
<text x="{{f .Left}}" y="24" font-size="14" font-weight="bold">Headline speed per recorded run, relative to the first run with each figure (higher is faster)</text>
{{range .YTicks}}<line x1="{{f $.Left}}" y1="{{f .Y}}" x2="{{f $.Right}}" y2="{{f .Y}}" stroke="#e5e5e5"/>
<text x="{{f .X}}" y="{{f .Y}}" dx="-6" dy="4" text-anchor="end">{{x .Text}}</text>
{{end}}<line x1="{{f .Left}}" y1="{{f .Bottom}}" x2="{{f .Right}}" y2="{{f .Bottom}}" stroke="#888888"/>
<line x1="{{f .Left}}" y1="{{f .Top}}" x2="{{f .Left}}" y2="{{f .Bottom}}" stroke="#888888"/>
{{range .XTicks}}<text x="{{f .X}}" y="{{f .Y}}" font-size="10" text-anchor="end" transform="rotate(-30 {{f .X}} {{f .Y}})">{{x .Text}}</text>
{{end}}{{if .Note}}<text x="{{f .Left}}" y="{{f .Top}}" dx="16" dy="40" fill="#555555">{{x .Note}}</text>
{{end}}{{range .Series}}<g class="series" data-series="{{x .ID}}" stroke="{{.Color}}" fill="{{.Color}}">
{{if .Points}}<polyline fill="none" stroke-width="2" points="{{.Points}}"/>
{{end}}{{range .Dots}}<circle cx="{{f .X}}" cy="{{f .Y}}" r="3.5"><title>{{x .Text}}</title></circle>
{{end}}<rect x="{{f $.Left}}" y="{{f .LegendY}}" width="18" height="4" stroke="none"/>
<text x="{{f $.Left}}" y="{{f .LegendY}}" dx="26" dy="6" stroke="none" fill="#222222">{{x .Label}}</text>
</g>
{{end}}</svg>
`))

// renderChart executes the chart template.
func renderChart(w io.Writer, c chartData) error {
	return chartTemplate.Execute(w, c)
}

// xmlText escapes s for XML character data and attribute values.
func xmlText(s string) (string, error) {
	var b strings.Builder
	err := xml.EscapeText(&b, []byte(s))
	return b.String(), err
}

// fmtPx prints a pixel coordinate to a tenth, which keeps the file small
// and byte-stable across runs.
func fmtPx(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
