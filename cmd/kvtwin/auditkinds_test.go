package main

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/kvtwin/kvtwin/adapter"
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/equiv/mutants"
	"github.com/kvtwin/kvtwin/spec"
)

// This file is the class "every failure kind through `audit merge` and the
// HTML report" of issue 30 (item 7): a real audit, run as two shards against
// an HTTP adapter (the Go kit) that fails one op in each way an audit
// records, is merged by `kvtwin audit merge`, and every kind must come out
// with its counts and its details in the merged JSON, the text report and
// the HTML page. The bug-zoo's component mutants of merge and of the page
// (equiv/mutants.Components) must each fail the same check.

// The ops of the audit, one a failure kind; kindNotImplemented is selected
// by --ops and not declared, so it is both not implemented and not audited.
const (
	kindMismatch       = "transfer.group_contiguous" // a wrong output
	kindTransport      = "transfer.filter_cp_rank"   // a reply that is not JSON (malformed)
	kindTimeout        = "radix.bigram_key"          // no reply within --timeout
	kindNotImplemented = "cp.split"                  // not declared by the adapter
	kindOps            = `^(transfer\.group_contiguous|transfer\.filter_cp_rank|radix\.bigram_key|cp\.split)$`
	kindShards         = 2
)

// failureKindAdapter is an HTTP adapter that fails kindMismatch with a wrong
// output, kindTransport with a traceback for a body and kindTimeout by
// never answering (until the audit gives up on the call), and does not
// declare kindNotImplemented.
func failureKindAdapter(t *testing.T) string {
	a := adapter.New()
	adapter.Handle(a, kindMismatch, func(spec.TransferGroupContiguousInput) (spec.TransferGroupContiguousOutput, error) {
		return spec.TransferGroupContiguousOutput{Runs: []spec.Run{{SrcStart: 1, DstStart: 1, Count: 1}}}, nil
	})
	adapter.Handle(a, kindTransport, func(spec.TransferFilterCPRankInput) (spec.TransferFilterCPRankOutput, error) {
		return spec.TransferFilterCPRankOutput{}, nil // never reached: the route below answers first
	})
	adapter.Handle(a, kindTimeout, func(spec.RadixBigramKeyInput) (spec.RadixBigramKeyOutput, error) {
		return spec.RadixBigramKeyOutput{}, nil // never reached
	})
	kit := a.Handler("")
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/ops/" + kindTransport:
			_, _ = w.Write([]byte("Traceback (most recent call last):\n"))
		case "/v1/ops/" + kindTimeout:
			// the audit cancels the call at its --timeout; the server sees
			// the connection close once the body is read
			_, _ = io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-done:
			}
		default:
			kit.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(done) }) // runs first: no handler outlives the test
	return srv.URL
}

// failureKindShards runs the audit once as kindShards shards and returns
// their --json reports, each one as `audit merge` reads it, and their
// files, last shard first.
func failureKindShards(t *testing.T) (shards []auditReport, files []string) {
	t.Helper()
	url := failureKindAdapter(t)
	dir := t.TempDir()
	for i := range kindShards {
		code, out, stderr := runCLI(t, "audit", "--impl", url, "--ops", kindOps, "--cases", "8", "--seed", "5",
			"--timeout", "250ms", "--parallel", "1", "--shrink=false", "--json", "--no-progress", "--shard", fmt.Sprintf("%d/%d", i, kindShards))
		if code != 1 {
			t.Fatalf("shard %d exited %d, want 1: %s", i, code, stderr)
		}
		f := filepath.Join(dir, fmt.Sprintf("shard%d.json", i))
		if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := readReport(f, defaultMaxReportBytes)
		if err != nil {
			t.Fatal(err)
		}
		shards, files = append(shards, r), append(files, f)
	}
	slices.Reverse(files) // merge meets the shards out of order, as a campaign's files come
	return shards, files
}

// mergedOutputs is what a merge shows a person: the merged report (as
// `--json` prints it), the text report and the HTML page.
type mergedOutputs struct {
	report auditReport
	text   string
	page   []byte
}

// mergeThroughTheCLI is the real path: `kvtwin audit merge --json --html`,
// then `kvtwin audit merge` for the text.
func mergeThroughTheCLI(t *testing.T, files []string) mergedOutputs {
	t.Helper()
	page := filepath.Join(t.TempDir(), "merged.html")
	code, out, stderr := runCLI(t, append([]string{"audit", "merge", "--json", "--html", page}, files...)...)
	if code != 1 {
		t.Fatalf("merge exited %d, want 1 (the audit failed): %s", code, stderr)
	}
	rep := auditReportOf(t, out)
	code, text, stderr := runCLI(t, append([]string{"audit", "merge"}, files...)...)
	if code != 1 {
		t.Fatalf("text merge exited %d, want 1: %s", code, stderr)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	return mergedOutputs{report: rep, text: text, page: b}
}

// mergeStage is one way to merge the shard files and render the result,
// the stages of `audit merge` as functions: merge folds the reports, render
// is what the text report and the page are drawn from. A component mutant
// replaces one stage with a wrapper that puts its bug back.
type mergeStage struct {
	merge  func(files []string) (auditReport, error)
	render func(rep auditReport) auditReport
}

// productionStages are `audit merge`'s own stages: readReport and the
// merger, then the merged report drawn as it is.
var productionStages = mergeStage{
	merge: func(files []string) (auditReport, error) {
		m := newMerger(5)
		for _, f := range files {
			r, err := readReport(f, defaultMaxReportBytes)
			if err != nil {
				return auditReport{}, err
			}
			if err := m.add(f, r); err != nil {
				return auditReport{}, err
			}
		}
		return m.result()
	},
	render: func(rep auditReport) auditReport { return rep },
}

// run merges files through s and renders the text report and the page.
func (s mergeStage) run(t *testing.T, files []string) mergedOutputs {
	t.Helper()
	rep, err := s.merge(files)
	if err != nil {
		t.Fatal(err)
	}
	shown := s.render(rep)
	var text bytes.Buffer
	printAudit(&text, shown)
	page := filepath.Join(t.TempDir(), "merged.html")
	if err := writeHTMLReport(page, shown, ""); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	return mergedOutputs{report: rep, text: text.String(), page: b}
}

// mergeComponentMutants are the bug zoo's mutants of `audit merge` and of
// its reports (equiv/mutants.Components, killed by
// TestEveryFailureKindSurvivesMergeAndHTML): each is productionStages with
// one stage wrapped to put a plausible bug back.
func mergeComponentMutants() map[string]mergeStage {
	merged := func(f func(*auditReport)) mergeStage {
		s := productionStages
		s.merge = func(files []string) (auditReport, error) {
			rep, err := productionStages.merge(files)
			f(&rep)
			return rep, err
		}
		return s
	}
	shown := func(f func(*auditReport)) mergeStage {
		s := productionStages
		s.render = func(rep auditReport) auditReport {
			rep.Ops = slices.Clone(rep.Ops)
			f(&rep)
			return rep
		}
		return s
	}
	return map[string]mergeStage{
		// the merger sums only the first shard's transport errors: a
		// transport error found by any later shard is lost
		"merge-keeps-first-shards-transport-errors": {
			merge: func(files []string) (auditReport, error) {
				m := newMerger(5)
				for i, f := range files {
					r, err := readReport(f, defaultMaxReportBytes)
					if err != nil {
						return auditReport{}, err
					}
					for j := range r.Ops {
						if i > 0 {
							r.Ops[j].TransportErrors, r.Ops[j].Transport = 0, nil
						}
					}
					if err := m.add(f, r); err != nil {
						return auditReport{}, err
					}
				}
				return m.result()
			},
			render: productionStages.render,
		},
		// timeouts are not carried into the merged row (counted nor kept)
		"merge-drops-timeouts": merged(func(r *auditReport) {
			for i := range r.Ops {
				o := &r.Ops[i]
				kept := slices.DeleteFunc(o.Transport, func(f *equiv.Failure) bool { return strings.Contains(f.Reason, ": timeout: ") })
				o.TransportErrors -= len(o.Transport) - len(kept)
				o.Transport = kept
			}
		}),
		// the merged report forgets the ops an implementation does not declare
		"merge-drops-not-implemented": merged(func(r *auditReport) { r.NotImplemented = nil }),
		// the merged report forgets what was asked for and not audited
		"merge-drops-not-audited": merged(func(r *auditReport) { r.NotAudited = nil }),
		// the mismatches of the merged row are the shards' largest, not their sum
		"merge-takes-max-mismatches": merged(func(r *auditReport) {
			for i := range r.Ops {
				if r.Ops[i].Op == kindMismatch {
					r.Ops[i].Mismatches = (r.Ops[i].Mismatches + 1) / 2
				}
			}
		}),
		// the reports list no transport failure (the counts stay)
		"report-omits-transport-failures": shown(func(r *auditReport) {
			for i := range r.Ops {
				r.Ops[i].Transport = nil
			}
		}),
		// the reports say nothing of what was not audited
		"report-omits-not-audited": shown(func(r *auditReport) { r.NotAudited = nil }),
		// the reports draw an op that is not implemented as no verdict at all
		"report-omits-not-implemented": shown(func(r *auditReport) { r.NotImplemented = nil }),
	}
}

// TestEveryFailureKindSurvivesMergeAndHTML: each failure kind an audit
// records (a mismatch, a transport error, a timeout, an op not implemented,
// an op not audited) survives `kvtwin audit merge` of real shard reports
// with its counts (the sum of the shards') and its details (each kept
// failure's reason and input, in an unsharded run's order), in the merged
// JSON, the text report and the HTML page; and every component mutant of
// merge and the reports fails the same check.
func TestEveryFailureKindSurvivesMergeAndHTML(t *testing.T) {
	shards, files := failureKindShards(t)
	for kind, n := range expectedKindCounts(shards) {
		if n == 0 {
			t.Fatalf("the shards hold no %s: the audit is not the one this test needs (%+v)", kind, shards)
		}
	}
	if err := checkFailureKinds(shards, mergeThroughTheCLI(t, files)); err != nil {
		t.Errorf("kvtwin audit merge: %v", err)
	}
	if err := checkFailureKinds(shards, productionStages.run(t, files)); err != nil {
		t.Errorf("merge's stages as functions: %v", err)
	}
	zoo := mergeComponentMutants()
	for name, m := range zoo {
		if err := checkFailureKinds(shards, m.run(t, files)); err == nil {
			t.Errorf("component mutant %s survived", name)
		} else {
			t.Logf("%s killed: %v", name, err)
		}
	}
	requireRegisteredComponentMutants(t, "TestEveryFailureKindSurvivesMergeAndHTML", slices.Collect(maps.Keys(zoo)))
}

// requireRegisteredComponentMutants keeps the bug zoo's component table
// (equiv/mutants.Components, docs/bugzoo.md) equal to the mutants the test
// named killedBy runs.
func requireRegisteredComponentMutants(t *testing.T, killedBy string, names []string) {
	t.Helper()
	var registered []string
	for _, c := range mutants.Components() {
		if c.KilledBy == killedBy {
			registered = append(registered, c.Name)
		}
	}
	slices.Sort(registered)
	slices.Sort(names)
	if !slices.Equal(registered, names) {
		t.Errorf("equiv/mutants.Components lists %v as killed by %s; the test runs %v", registered, killedBy, names)
	}
}

// expectedKindCounts sums each kind's count over the shards, as an
// unsharded run counts it.
func expectedKindCounts(shards []auditReport) map[string]int {
	n := map[string]int{}
	for _, s := range shards {
		for _, o := range s.Ops {
			switch o.Op {
			case kindMismatch:
				n["mismatch"] += o.Mismatches
			case kindTransport:
				n["transport error"] += o.TransportErrors
			case kindTimeout:
				n["timeout"] += o.TransportErrors
				n["not sent"] += o.NotSent
			}
		}
		n["not implemented"] += len(s.NotImplemented)
		n["not audited"] += len(s.NotAudited)
	}
	return n
}

// expectedKept is the failures an unsharded run keeps for op: the first
// five of every shard's kept failures of the class, in case order.
func expectedKept(shards []auditReport, op string, transport bool) []*equiv.Failure {
	var fs []*equiv.Failure
	for _, s := range shards {
		for _, o := range s.Ops {
			switch {
			case o.Op != op:
			case transport:
				fs = append(fs, o.Transport...)
			default:
				fs = append(fs, o.Failures...)
			}
		}
	}
	slices.SortStableFunc(fs, func(a, b *equiv.Failure) int { return cmp.Compare(a.Seq, b.Seq) })
	return fs[:min(len(fs), 5)]
}

// checkFailureKinds checks the merge of shards as out shows it, kind by
// kind, and says every kind that did not survive.
func checkFailureKinds(shards []auditReport, out mergedOutputs) error {
	want := expectedKindCounts(shards)
	rows := map[string]opResult{}
	for _, o := range out.report.Ops {
		rows[o.Op] = o
	}
	page, err := pageText(out.page)
	if err != nil {
		return err
	}
	var errs []error
	fail := func(kind, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", kind, fmt.Sprintf(format, args...)))
	}
	if out.report.Passed {
		fail("verdict", "the merged audit passed")
	}
	// a mismatch: the count, each kept failure's reason, input and diff
	mm := rows[kindMismatch]
	if mm.Mismatches != want["mismatch"] || mm.Passed {
		fail("mismatch", "%s: %d mismatches (passed %v), the shards found %d", kindMismatch, mm.Mismatches, mm.Passed, want["mismatch"])
	}
	checkKept(fail, "mismatch", mm.Failures, expectedKept(shards, kindMismatch, false), out.text, page, "")
	wantMatrixCell(fail, "mismatch", page, fmt.Sprintf("%d mismatches", want["mismatch"]))
	textLine(fail, "mismatch", out.text, kindMismatch, fmt.Sprintf("FAIL (%d mismatches)", want["mismatch"]))
	// a transport error (malformed): the count and each kept failure
	tr := rows[kindTransport]
	if tr.TransportErrors != want["transport error"] || tr.Passed {
		fail("transport error", "%s: %d transport errors (passed %v), the shards found %d", kindTransport, tr.TransportErrors, tr.Passed, want["transport error"])
	}
	checkKept(fail, "transport error", tr.Transport, expectedKept(shards, kindTransport, true), out.text, page, ": malformed: ")
	wantMatrixCell(fail, "transport error", page, fmt.Sprintf("%d transport errors", want["transport error"]))
	// a timeout: the count, each kept failure, the op unavailable and the
	// cases not sent after it
	to := rows[kindTimeout]
	if to.TransportErrors != want["timeout"] || to.NotSent != want["not sent"] || to.Unavailable == "" || to.Passed {
		fail("timeout", "%s: %d transport errors, %d not sent, unavailable %q (passed %v); the shards found %d and %d", kindTimeout,
			to.TransportErrors, to.NotSent, to.Unavailable, to.Passed, want["timeout"], want["not sent"])
	}
	checkKept(fail, "timeout", to.Transport, expectedKept(shards, kindTimeout, true), out.text, page, ": timeout: ")
	wantMatrixCell(fail, "timeout", page, fmt.Sprintf("UNAVAILABLE · %d not sent · 0 mismatches, %d transport errors", want["not sent"], want["timeout"]))
	// not implemented: listed per implementation, drawn in the matrix
	impl := shards[0].Ops[0].Impl
	if !slices.Contains(out.report.NotImplemented[impl], kindNotImplemented) {
		fail("not implemented", "merged not_implemented %v lacks %s on %s", out.report.NotImplemented, kindNotImplemented, impl)
	}
	textLine(fail, "not implemented", out.text, kindNotImplemented, "not implemented")
	if !slices.Contains(page.cells, "not implemented") {
		fail("not implemented", "no matrix cell says so: %q", page.cells)
	}
	// not audited: the reason, in every output, and a failed verdict
	line := kindNotImplemented + " on " + impl + ": --ops selects it"
	if len(out.report.NotAudited) != 1 || !strings.HasPrefix(out.report.NotAudited[0], line) {
		fail("not audited", "merged not_audited %q, want one line starting %q", out.report.NotAudited, line)
	}
	if !strings.Contains(out.text, "nothing audited: "+line) {
		fail("not audited", "the text report lacks %q", "nothing audited: "+line)
	}
	if !page.ids["not-audited"] || !strings.Contains(page.all, line) {
		fail("not audited", "the page has no not-audited section naming %q", line)
	}
	return errors.Join(errs...)
}

// checkKept requires the kept failures of one kind to be an unsharded
// run's (same cases, in order, same reasons) and each to be shown, its
// reason and input, in the text report and on the page; marker is what
// the reason of a failure of the kind holds (the others kept beside it may
// be calls the breaker refused after it).
func checkKept(fail func(kind, format string, args ...any), kind string, got, want []*equiv.Failure, text string, page shownPage, marker string) {
	if len(want) == 0 {
		fail(kind, "the shards kept no failure")
	}
	if len(got) != len(want) {
		fail(kind, "%d failures kept, an unsharded run keeps %d", len(got), len(want))
		return
	}
	if !slices.ContainsFunc(got, func(f *equiv.Failure) bool { return strings.Contains(f.Reason, marker) }) {
		fail(kind, "no kept failure's reason names the kind (%q)", marker)
	}
	for i, f := range got {
		w := want[i]
		if f.Seq != w.Seq || f.Reason != w.Reason || !bytes.Equal(f.Input, w.Input) {
			fail(kind, "kept[%d] is case %d %q, want case %d %q", i, f.Seq, f.Reason, w.Seq, w.Reason)
		}
		if !strings.Contains(text, f.Reason) || !strings.Contains(text, string(f.Input)) {
			fail(kind, "the text report lacks kept[%d] (%q with its input)", i, f.Reason)
		}
		if !slices.ContainsFunc(page.summaries, func(s string) bool { return strings.Contains(s, f.Case) && strings.Contains(s, f.Reason) }) ||
			!strings.Contains(page.all, string(f.Input)) {
			fail(kind, "the page lacks kept[%d] (case %s: %q with its input)", i, f.Case, f.Reason)
		}
	}
}

func wantMatrixCell(fail func(kind, format string, args ...any), kind string, page shownPage, want string) {
	if !slices.ContainsFunc(page.cells, func(c string) bool { return strings.Contains(c, want) }) {
		fail(kind, "no matrix cell says %q: %q", want, page.cells)
	}
}

func textLine(fail func(kind, format string, args ...any), kind, text, op, want string) {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, op+" ") && strings.Contains(l, want) {
			return
		}
	}
	fail(kind, "the text report has no row of %s saying %q", op, want)
}

// shownPage is what a reader of the HTML page sees: the table cells, the
// failure summaries, the section ids and all the text.
type shownPage struct {
	cells, summaries []string
	ids              map[string]bool
	all              string
}

func pageText(b []byte) (shownPage, error) {
	doc, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		return shownPage{}, err
	}
	p := shownPage{ids: map[string]bool{}, all: textOf(doc)}
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "td":
				p.cells = append(p.cells, textOf(n))
			case "summary":
				p.summaries = append(p.summaries, textOf(n))
			}
			for _, a := range n.Attr {
				if a.Key == "id" {
					p.ids[a.Val] = true
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return p, nil
}
