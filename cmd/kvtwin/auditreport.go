package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/kvtwin/kvtwin/internal/bounded"
	"github.com/kvtwin/kvtwin/remote"
)

// htmlReport is what the audit's HTML page shows: the report, the op ×
// implementation matrix built from it, and the bench ratios, if given.
type htmlReport struct {
	auditReport
	Impls  []string
	Matrix []matrixRow
	Bench  []benchRatio
	// BenchFile is --bench's file: the page has a speed section only when
	// one is given (an audit measures no speed itself), even if the file
	// holds no ratio.
	BenchFile string
	// KeptHalf is how many of an adapter's first and of its last
	// processes the report keeps.
	KeptHalf int
	// AnyPartial is set when some row is partially covered (an adapter
	// declared part of a script op), so the page says what was left out.
	AnyPartial bool
}

// matrixRow is one op's line of the matrix: a cell per implementation.
type matrixRow struct {
	Op, Spec string
	Cells    []matrixCell
}

// matrixCell is one op × implementation verdict.
type matrixCell struct {
	Class, Text, Anchor string
}

// benchRatio is one op shape's speed-up of fast over ref, and of fast
// against a plain copy of the same bytes when the shape names one.
type benchRatio struct {
	Op, Shape    string
	RefOverFast  float64
	CopyOverFast float64 // 0 when the shape has no copy yardstick
	BarWidth     float64 // px, log-scaled
}

// writeHTMLReport writes rep (and the ratios of a `kvtwin bench --json`
// file, if benchPath is set) as one self-contained page: no script, no
// network, inline CSS and SVG.
func writeHTMLReport(path string, rep auditReport, benchPath string) error {
	page := htmlReport{auditReport: rep, KeptHalf: remote.KeptRuns / 2}
	page.Impls, page.Matrix = matrix(rep)
	page.AnyPartial = slices.ContainsFunc(rep.Ops, func(r opResult) bool { return r.Partial != nil })
	if benchPath != "" {
		ratios, err := benchRatios(benchPath)
		if err != nil {
			return err
		}
		page.Bench, page.BenchFile = ratios, benchPath
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := reportTemplate.Execute(f, page); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

func matrix(rep auditReport) ([]string, []matrixRow) {
	var impls []string
	cells := map[[2]string]matrixCell{}
	specs := map[string]string{}
	for i, r := range rep.Ops {
		if !slices.Contains(impls, r.Impl) {
			impls = append(impls, r.Impl)
		}
		specs[r.Op] = r.Spec
		c := matrixCell{Class: "pass", Text: fmt.Sprintf("pass · %d cases", r.Cases+r.Tables)}
		if !r.Passed {
			c = matrixCell{Class: "fail", Text: fmt.Sprintf("%d mismatches", r.Mismatches), Anchor: fmt.Sprintf("op-%d", i)}
			if r.TransportErrors > 0 {
				c.Text += fmt.Sprintf(", %d transport errors", r.TransportErrors)
			}
			if r.Unavailable != "" {
				c.Text = fmt.Sprintf("UNAVAILABLE · %d not sent · %s", r.NotSent, c.Text)
			}
		}
		if r.Partial != nil {
			c.Text += " · partially covered"
			if r.Passed {
				c.Class, c.Anchor = "partial", fmt.Sprintf("partial-%d", i)
			}
		}
		cells[[2]string{r.Op, r.Impl}] = c
	}
	for impl, ops := range rep.NotImplemented {
		if !slices.Contains(impls, impl) {
			impls = append(impls, impl)
		}
		for _, op := range ops {
			cells[[2]string{op, impl}] = matrixCell{Class: "none", Text: "not implemented"}
		}
	}
	ops := make([]string, 0, len(cells))
	for k := range cells {
		if !slices.Contains(ops, k[0]) {
			ops = append(ops, k[0])
		}
	}
	slices.Sort(ops)
	rows := make([]matrixRow, 0, len(ops))
	for _, op := range ops {
		row := matrixRow{Op: op, Spec: specs[op]}
		for _, impl := range impls {
			c, ok := cells[[2]string{op, impl}]
			if !ok {
				c = matrixCell{Class: "none", Text: "—"}
			}
			row.Cells = append(row.Cells, c)
		}
		rows = append(rows, row)
	}
	return impls, rows
}

// maxBarWidth bounds a ratio bar (px); the chart's cell is 520 px wide.
const maxBarWidth = 460

// maxBenchBytes bounds the bench file the report reads.
const maxBenchBytes = 64 << 20

// benchRowsLimits bound a `kvtwin bench --json` file read whole: its size,
// its nesting (rows of scalars) and its rows, counted before they are
// decoded (a full catalog run is a few hundred).
var benchRowsLimits = bounded.Limits{MaxDepth: 16, Lists: map[string]int{"[]": maxBenchRows}}

func benchRatios(path string) ([]benchRatio, error) {
	lim := benchRowsLimits
	lim.MaxBytes, lim.BytesName = maxBenchBytes, "the --bench bound"
	b, err := bounded.ReadFile(path, lim)
	if err != nil {
		return nil, fmt.Errorf("--bench: %w", err)
	}
	var rows []benchRow
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, fmt.Errorf("--bench %s is not `kvtwin bench --json` output: %w", path, err)
	}
	ns := map[[3]string]float64{}
	for _, r := range rows {
		ns[[3]string{r.Op, r.Shape, r.Impl}] = r.NsPerOp
	}
	var out []benchRatio
	for _, r := range rows {
		if r.Impl != "fast" || r.NsPerOp <= 0 {
			continue
		}
		refNs := ns[[3]string{r.Op, r.Shape, "ref"}]
		if refNs <= 0 {
			continue
		}
		br := benchRatio{Op: r.Op, Shape: r.Shape, RefOverFast: refNs / r.NsPerOp}
		if c := ns[[3]string{r.Op, r.Shape, "copy"}]; c > 0 {
			br.CopyOverFast = c / r.NsPerOp
		}
		// log-scaled, and capped: the bench file is input, and a ratio of
		// 2^1000 must not draw a 60,000-pixel bar
		br.BarWidth = min(40+60*math.Log2(math.Max(br.RefOverFast, 1)), maxBarWidth)
		out = append(out, br)
	}
	slices.SortFunc(out, func(a, b benchRatio) int {
		return cmp.Or(strings.Compare(a.Op, b.Op), strings.Compare(a.Shape, b.Shape))
	})
	return out, nil
}

var reportTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"ratio": func(x float64) string { return fmt.Sprintf("%.2f×", x) },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>kvtwin audit{{if .Passed}} passed{{else}} FAILED{{end}} · seed {{.Seed}}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:1200px;padding:0 1rem;color:#1b1f24;background:#fff}
h1{font-size:1.6rem;margin:.2rem 0}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #d0d7de;padding-bottom:.3rem}
.verdict{display:inline-block;padding:.2rem .7rem;border-radius:1rem;font-weight:600}
.verdict.pass{background:#dafbe1;color:#116329}.verdict.fail{background:#ffebe9;color:#a40e26}
table{border-collapse:collapse;width:100%;margin:.5rem 0}th,td{border:1px solid #d0d7de;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa;font-weight:600}td.pass{background:#eefbf1}td.fail{background:#ffebe9;font-weight:600}td.none{color:#6e7781;background:#f6f8fa}
td.partial{background:#fff8c5}td.fail a{color:#a40e26}code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}
pre{background:#f6f8fa;border:1px solid #d0d7de;padding:.6rem;overflow:auto;white-space:pre-wrap;word-break:break-all}
.ce{border:1px solid #d0d7de;border-radius:6px;padding:.5rem 1rem;margin:1rem 0}.muted{color:#6e7781}
svg text{font:11px system-ui,sans-serif}
del{color:#a40e26;background:#ffebe9;text-decoration:none}ins{color:#116329;background:#dafbe1;text-decoration:none}
</style>
</head>
<body>
<h1>kvtwin audit <span class="verdict {{if .Passed}}pass">passed{{else}}fail">FAILED{{end}}</span></h1>
<p class="muted">seed {{.Seed}} · {{.Cases}} generated cases per op × implementation{{if .Shard}} · shard {{.Shard.Index}}/{{.Shard.Count}}{{end}} · reproduce with <code>kvtwin audit --seed {{.Seed}} --cases {{.Cases}}</code> and the same <code>--impl</code> and <code>--ops</code></p>

<h2 id="matrix">Op × implementation</h2>
<table>
<tr><th>op</th><th>spec</th>{{range .Impls}}<th>{{.}}</th>{{end}}</tr>
{{range .Matrix}}<tr><td><code>{{.Op}}</code></td><td>{{.Spec}}</td>{{range .Cells}}<td class="{{.Class}}">{{if .Anchor}}<a href="#{{.Anchor}}">{{.Text}}</a>{{else}}{{.Text}}{{end}}</td>{{end}}</tr>
{{end}}</table>
{{if .NotAudited}}
<h2 id="not-audited">Nothing audited</h2>
<p><b>FAILED</b>: the audit was asked for these and ran no case of them.</p>
<ul>{{range .NotAudited}}<li>{{.}}</li>{{end}}</ul>{{end}}

{{if .AnyPartial}}
<h2 id="partial">Partially covered</h2>
<p>The adapter declared only part of these script ops (docs/adapters.md, "Partial declarations"); the generated cases stayed inside that part, and what it left out was <b>not audited</b>.</p>
{{range $i, $r := .Ops}}{{with $r.Partial}}<div class="ce" id="partial-{{$i}}">
<h3><code>{{$r.Op}}</code> on <code>{{$r.Impl}}</code>: {{if $r.Passed}}passed{{else}}FAILED{{end}} on the declared part</h3>
<ul>{{if .StepsNotAudited}}<li>step kinds not audited: {{range $j, $k := .StepsNotAudited}}{{if $j}}, {{end}}<code>{{$k}}</code>{{end}}</li>{{end}}
{{if .OptionsNotAudited}}<li>options not audited: {{range $j, $k := .OptionsNotAudited}}{{if $j}}, {{end}}<code>{{$k}}</code>{{end}}</li>{{end}}
<li>{{len .TablesSkipped}} table cases skipped{{if .TablesSkipped}}: <details><summary>which</summary><ul>{{range .TablesSkipped}}<li><code>{{.}}</code></li>{{end}}</ul></details>{{end}}</li></ul>
</div>
{{end}}{{end}}{{end}}
<h2 id="counterexamples">Counterexamples</h2>
{{$any := false}}{{range $i, $r := .Ops}}{{if not $r.Passed}}{{$any = true}}
<div class="ce" id="op-{{$i}}">
<h3><code>{{$r.Op}}</code> on <code>{{$r.Impl}}</code>: {{$r.Mismatches}} mismatches, {{$r.TransportErrors}} transport errors</h3>
{{if $r.Unavailable}}<p><b>UNAVAILABLE</b>: {{$r.Unavailable}}; {{$r.NotSent}} cases not sent.</p>{{end}}
{{with $r.Shrunk}}<p><b>Minimal counterexample</b> (rapid, seed {{$.Seed}}): {{.Reason}}</p>{{with .StepDeletion}}
<p>{{.}}</p>{{end}}
<pre>{{printf "%s" .Input}}</pre>{{if .Fixture}}<p>fixture line</p><pre>{{printf "%s" .Fixture}}</pre>{{end}}{{template "diff" .}}{{end}}
{{range $r.Failures}}<details><summary>case <code>{{.Case}}</code> (seed {{.Seed}}): {{.Reason}}</summary><pre>{{printf "%s" .Input}}</pre>{{template "diff" .}}</details>
{{end}}{{range $r.Transport}}<details><summary>transport error on case <code>{{.Case}}</code>: {{.Reason}}</summary><pre>{{printf "%s" .Input}}</pre></details>
{{end}}</div>
{{end}}{{end}}{{if not $any}}<p>None: every implementation agreed with the reference on every case.</p>{{end}}

{{if .Adapters}}<h2 id="adapters">Adapter processes</h2>
<p class="muted">How each process of an exec adapter ended, and the last 64 KiB of its stderr (the first and last {{.KeptHalf}} processes of each adapter are kept).</p>
{{range .Adapters}}<div class="ce">
<h3><code>{{.Impl}}</code>{{if .Shard}} · shard {{.Shard}}{{end}}: {{.Runs}} processes{{if .Omitted}}, {{.Omitted}} not kept{{end}}</h3>
{{if .Unattributed}}<p><b>ADAPTER FAILED</b>: {{.Unattributed}} failures outside every call, which no case carries (the first: {{.FirstUnattributed}}).</p>{{end}}
{{range .Kept}}<details><summary>process {{.Run}} (pid {{.PID}}): {{.Ended}} · {{.Millis}} ms · stderr {{.StderrBytes}} bytes in {{.StderrLines}} lines</summary><pre>{{.Stderr}}</pre></details>
{{end}}</div>
{{end}}{{end}}
<h2 id="zoo">Bug zoo</h2>
{{if .ZooSkipped}}<p class="muted">Skipped: {{.ZooSkipped}}.</p>{{else}}
<table>
<tr><th>mutant</th><th>op</th><th>spec</th><th>bug</th><th>cases to kill</th><th>regression</th><th>result</th></tr>
{{range .Mutants}}<tr><td><code>{{.Mutant}}</code></td><td><code>{{.Op}}</code></td><td>{{.Spec}}</td><td>{{.Bug}}</td><td>{{.CasesToKill}}</td>
<td class="{{if .RegressionKills}}pass">kills{{else}}fail">MISSES{{end}}</td><td class="{{if .Killed}}pass">killed{{else}}fail">SURVIVED{{end}}</td></tr>
{{end}}</table>{{end}}

{{if .BenchFile}}<h2 id="bench">Speed: fast over ref</h2>
{{if .Bench}}<p class="muted">From <code>--bench</code> (<code>kvtwin bench --json</code>): ref's time over fast's per shape (bar length is log-scaled), and a plain <code>copy</code> of the same bytes over fast where the shape names one.</p>
<table>
<tr><th>op</th><th>shape</th><th>ref / fast</th><th>copy / fast</th></tr>
{{range .Bench}}<tr><td><code>{{.Op}}</code></td><td>{{.Shape}}</td>
<td><svg xmlns="http://www.w3.org/2000/svg" width="520" height="16" role="img" aria-label="{{ratio .RefOverFast}}"><rect x="0" y="2" width="{{printf "%.0f" .BarWidth}}" height="12" fill="#2da44e"/><text x="{{printf "%.0f" .BarWidth}}" dx="4" y="12">{{ratio .RefOverFast}}</text></svg></td>
<td>{{if .CopyOverFast}}{{ratio .CopyOverFast}}{{else}}<span class="muted">—</span>{{end}}</td></tr>
{{end}}</table>{{else}}<p class="muted">No ratio: the <code>--bench</code> file times no op shape on both ref and fast.</p>{{end}}{{end}}
</body>
</html>
{{define "diff"}}{{if .Paths}}<p>differences (ref → impl): <del>the reference's value</del> → <ins>the implementation's</ins></p>
<pre class="paths">{{range .Paths}}{{.Path}}: <del>{{.Ref}}</del> → <ins>{{.Impl}}</ins>
{{end}}{{if .MorePaths}}… and {{.MorePaths}} more
{{end}}</pre>{{if .Diff}}<details><summary>go-cmp diff (-ref +impl)</summary><pre>{{.Diff}}</pre></details>{{end}}
{{else if .Diff}}<p>diff (-ref +impl)</p><pre>{{.Diff}}</pre>{{end}}{{end}}`))
