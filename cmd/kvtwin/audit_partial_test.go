package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/adapter"
	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/equiv/mutants"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/spec"
)

// declareEnv holds what the "adapter-declared" role lists as declared in
// part: a JSON object of op name → {"steps": […], "options": {…}}.
const declareEnv = "KVTWIN_TEST_DECLARE"

// declareBugEnv, when set, makes the "adapter-declared" role serve
// radix.script with the bug zoo's RadixStoredKeyViews, a bug a script of
// create, insert and match shows.
const declareBugEnv = "KVTWIN_TEST_DECLARE_BUG"

// partialDeclaration is the adapter: radix.script with four step
// kinds and hashed scores off.
const partialDeclaration = `{"radix.script":{"steps":["create","insert","match","evict"],"options":{"hashed_score":false}}}`

// declaredAdapter serves radix.script (fast's twin, or the mutant) and
// transfer.group_contiguous, declared as declareEnv says. A radix script
// outside its declaration is answered not_implemented, as an engine's
// adapter answers what the engine lacks: so every case the audit sends
// outside the declaration is a transport error in the report. With
// hashed_score off, its tree states carry no prefix hashes, as an engine
// without XXH3 answers.
func declaredAdapter() *adapter.Adapter {
	var decls map[string]struct {
		Steps   []string        `json:"steps"`
		Options map[string]bool `json:"options"`
	}
	if err := json.Unmarshal([]byte(os.Getenv(declareEnv)), &decls); err != nil {
		panic(fmt.Sprintf("%s: %v", declareEnv, err))
	}
	lim := spec.DefaultLimits()
	radix := fast.RadixScript
	if os.Getenv(declareBugEnv) != "" {
		radix = mutantFn[spec.RadixScriptInput, spec.RadixScriptOutput](mutants.RadixStoredKeyViews())
	}
	a := adapter.New()
	d := adapter.Declaration{Steps: decls["radix.script"].Steps, Options: decls["radix.script"].Options}
	hashed, named := d.Options["hashed_score"]
	adapter.Handle(a, "radix.script", func(in spec.RadixScriptInput) (spec.RadixScriptOutput, error) {
		if err := outsideDeclaration(d, in); err != nil {
			return spec.RadixScriptOutput{}, err
		}
		out, err := radix(lim, in)
		for i := range out.Tree.Nodes {
			if named && !hashed { // an engine without XXH3 has no prefix-hash chain to show
				out.Tree.Nodes[i].PrefixHashes = nil
			}
		}
		return out, err
	})
	adapter.Handle(a, "transfer.group_contiguous", withLimits(lim, fast.TransferGroupContiguous))
	for op, d := range decls {
		a.Declare(op, adapter.Declaration{Steps: d.Steps, Options: d.Options})
	}
	return a
}

// radixKinds are radix.script's step kinds (spec/radix_script.go).
func radixKinds() []string {
	return []string{spec.StepCreate, spec.StepInsert, spec.StepMatch, spec.StepScore, spec.StepLock, spec.StepUnlock, spec.StepEvict, spec.StepPlanEvict}
}

// outsideDeclaration is the not_implemented answer to a script that uses a
// step kind d leaves out, or a score without exact when d sets hashed_score
// off; nil for a script inside d. An unknown kind is not outside: the
// twin rejects it as every implementation must.
func outsideDeclaration(d adapter.Declaration, in spec.RadixScriptInput) error {
	for i, s := range in.Steps {
		omitted := d.Steps != nil && slices.Contains(radixKinds(), s.Op) && !slices.Contains(d.Steps, s.Op)
		hashed, named := d.Options["hashed_score"]
		if omitted || s.Op == spec.StepScore && !s.Exact && named && !hashed {
			return &adapter.Reject{Code: adapter.CodeNotImplemented, Message: fmt.Sprintf("steps[%d]: %s (exact %t) is not implemented by this engine", i, s.Op, s.Exact)}
		}
	}
	return nil
}

// undeclaredTables is, computed from the spec's tables without the
// audit's code, the radix.script table cases a script of kinds outside
// declared uses (score among them, so hashed scores too).
func undeclaredTables(declared []string) []string {
	s := equiv.RadixScript()
	var out []string
	for _, t := range []struct {
		prefix string
		cases  []equiv.Case[spec.RadixScriptInput]
	}{{"boundary/", s.Boundary}, {"regression/", s.Regressions}} {
		for _, c := range t.cases {
			if slices.ContainsFunc(c.In.Steps, func(st spec.RadixStep) bool {
				return slices.Contains(radixKinds(), st.Op) && !slices.Contains(declared, st.Op)
			}) {
				out = append(out, t.prefix+c.Name)
			}
		}
	}
	return out
}

// scriptKinds is the step kinds of a radix.script input as JSON.
func scriptKinds(t *testing.T, in json.RawMessage) []string {
	t.Helper()
	var s spec.RadixScriptInput
	if err := json.Unmarshal(in, &s); err != nil {
		t.Fatalf("input %s is not a radix script: %v", in, err)
	}
	var kinds []string
	for _, st := range s.Steps {
		kinds = append(kinds, st.Op)
	}
	return kinds
}

// TestAuditOfAPartialDeclarationAuditsExactlyTheDeclaredStepKinds is the
// issue's adapter: radix.script declared with create, insert, match and
// evict and hashed scores off, answering not_implemented for any other
// kind. It passes with no transport error, so no generated or table case
// used another kind, and the report, in JSON, text and HTML, states which
// kinds and options were not audited and which table cases were skipped.
func TestAuditOfAPartialDeclarationAuditsExactlyTheDeclaredStepKinds(t *testing.T) {
	t.Setenv(declareEnv, partialDeclaration)
	html := filepath.Join(t.TempDir(), "report.html")
	code, out, stderr := kvtwinCmd(t, "audit", "--impl", selfAdapter("adapter-declared"), "--ops", `^radix\.script$`,
		"--errors", "exact", "--cases", "300", "--json", "--no-progress", "--html", html)
	rep := auditReportOf(t, out)
	if code != 0 || len(rep.Ops) != 1 {
		t.Fatalf("audit exited %d with %d rows, want 0 and 1\nstderr: %s\n%.3000s", code, len(rep.Ops), stderr, out)
	}
	r := rep.Ops[0]
	if !r.Passed || r.TransportErrors != 0 || r.Mismatches != 0 || r.Cases != 300 {
		t.Errorf("row: passed %v, %d transport errors, %d mismatches, %d cases; want a pass of 300 cases: %v", r.Passed, r.TransportErrors, r.Mismatches, r.Cases, r.Transport)
	}
	skipped := undeclaredTables([]string{"create", "insert", "match", "evict"})
	boundary, regressions := equiv.RadixScript().Boundary, equiv.RadixScript().Regressions
	switch {
	case r.Partial == nil:
		t.Fatalf("the row is not marked partially covered")
	case !slices.Equal(r.Partial.StepsNotAudited, []string{"score", "lock", "unlock", "plan_evict"}):
		t.Errorf("steps not audited %q, want score, lock, unlock, plan_evict", r.Partial.StepsNotAudited)
	case !slices.Equal(r.Partial.OptionsNotAudited, []string{"hashed_score"}):
		t.Errorf("options not audited %q, want hashed_score", r.Partial.OptionsNotAudited)
	case !slices.Equal(r.Partial.TablesSkipped, skipped) || len(skipped) == 0:
		t.Errorf("tables skipped %q, want %q", r.Partial.TablesSkipped, skipped)
	case r.Tables != len(boundary)+len(regressions)-len(skipped) || r.Tables == 0:
		t.Errorf("%d table cases run, want the %d the declaration keeps", r.Tables, len(boundary)+len(regressions)-len(skipped))
	}

	_, text, _ := kvtwinCmd(t, "audit", "--impl", selfAdapter("adapter-declared"), "--ops", `^radix\.script$`,
		"--cases", "20", "--no-progress")
	want := fmt.Sprintf("partially covered: radix.script on %s: step kinds not audited: score, lock, unlock, plan_evict; options not audited: hashed_score; %d table cases skipped",
		selfAdapter("adapter-declared"), len(skipped))
	for _, w := range []string{want, "pass, partially covered", "audit passed"} {
		if !strings.Contains(text, w) {
			t.Errorf("text report lacks %q:\n%s", w, text)
		}
	}
	page, err := os.ReadFile(html)
	for _, w := range []string{`<h2 id="partial">Partially covered</h2>`, `class="partial"`, "<code>plan_evict</code>", "<code>hashed_score</code>",
		fmt.Sprintf("%d table cases skipped", len(skipped))} {
		if err != nil || !strings.Contains(string(page), w) {
			t.Errorf("HTML report lacks %q (%v)", w, err)
		}
	}
}

// TestAPartialDeclarationShrinksInsideTheDeclaredPart: the same adapter
// with a bug that a script of declared kinds shows fails on mismatches
// alone, and every counterexample, rapid's shrunk one included, uses only
// the declared kinds: shrinking never leaves the declaration (a step
// outside it would be answered not_implemented, a transport error).
func TestAPartialDeclarationShrinksInsideTheDeclaredPart(t *testing.T) {
	t.Setenv(declareEnv, partialDeclaration)
	t.Setenv(declareBugEnv, "1")
	code, out, stderr := kvtwinCmd(t, "audit", "--impl", selfAdapter("adapter-declared"), "--ops", `^radix\.script$`,
		"--errors", "exact", "--cases", "100", "--json", "--no-progress")
	rep := auditReportOf(t, out)
	if code != 1 || len(rep.Ops) != 1 {
		t.Fatalf("audit of the buggy adapter exited %d with %d rows, want 1 and 1\nstderr: %s\n%.3000s", code, len(rep.Ops), stderr, out)
	}
	r := rep.Ops[0]
	if r.Mismatches == 0 || r.TransportErrors != 0 || r.Shrunk == nil || r.Shrunk.Transport {
		t.Fatalf("%d mismatches, %d transport errors, shrunk %v: want mismatches only and a shrunk mismatch", r.Mismatches, r.TransportErrors, r.Shrunk)
	}
	for _, f := range append(r.Failures, r.Shrunk) {
		for _, k := range scriptKinds(t, f.Input) {
			if !slices.Contains([]string{"create", "insert", "match", "evict"}, k) && slices.Contains(radixKinds(), k) {
				t.Errorf("case %s uses %q, which the adapter does not declare: %s", f.Case, k, f.Input)
			}
		}
	}
}

// TestAuditRefusesADeclarationOfWhatTheOpLacks: a declaration naming a
// step kind or option the op does not have, one without the kind every
// script needs, or steps for an op that has none, fails the audit (exit
// 2) before any case runs, with an error naming the op, the member and the
// values allowed, even when --ops selects another op: it is never
// silently ignored.
func TestAuditRefusesADeclarationOfWhatTheOpLacks(t *testing.T) {
	for _, c := range []struct{ decl, says string }{
		{`{"radix.script":{"steps":["create","split"]}}`,
			`op radix.script: declaration member steps[1] "split": not a step kind of the op (want kinds among create, insert, match, score, lock, unlock, evict, plan_evict)`},
		{`{"radix.script":{"steps":["insert","match"]}}`,
			`op radix.script: declaration member steps lacks "create", which every script of the op needs`},
		{`{"radix.script":{"steps":["create","match","match"]}}`, `op radix.script: declaration member steps[2] "match": declared twice`},
		{`{"radix.script":{"options":{"xxh3":false}}}`,
			`op radix.script: declaration member options.xxh3: not an option of the op (want options among hashed_score)`},
		{`{"transfer.group_contiguous":{"steps":["create"]}}`,
			`op transfer.group_contiguous: declaration member steps: the op has no step kinds or options to declare`},
	} {
		t.Setenv(declareEnv, c.decl)
		code, out, stderr := kvtwinCmd(t, "audit", "--impl", selfAdapter("adapter-declared"), "--ops", `^transfer\.group_contiguous$`,
			"--cases", "4", "--no-progress")
		if code != 2 || !strings.Contains(stderr, c.says) || strings.Contains(out, "transfer.group_contiguous") {
			t.Errorf("declaration %s: exit %d, want 2 before any case ran and %q on stderr:\n%s%s", c.decl, code, c.says, stderr, out)
		}
	}
}

// TestAdapterCheckSamplesInsideAPartialDeclaration: adapter check sends a
// partially declared op a sample and an invalid input inside the
// declaration (the catalog's sample locks a node), so the partial adapter
// conforms; a bad declaration fails the op list check.
func TestAdapterCheckSamplesInsideAPartialDeclaration(t *testing.T) {
	if !slices.ContainsFunc(catalog.RadixScript().Sample.Steps, func(s spec.RadixStep) bool { return s.Op == spec.StepLock }) {
		t.Fatal("the catalog's radix.script sample no longer locks a node: this test needs a sample outside the declaration")
	}
	t.Setenv(declareEnv, partialDeclaration)
	if code, out, _ := runCLI(t, "adapter", "check", "--impl", selfAdapter("adapter-declared"), "--timeout", "5s"); code != 0 {
		t.Errorf("adapter check of the partial adapter exited %d:\n%s", code, out)
	}
	t.Setenv(declareEnv, `{"radix.script":{"steps":["create","split"]}}`)
	if code, out, _ := runCLI(t, "adapter", "check", "--impl", selfAdapter("adapter-declared"), "--timeout", "5s"); code == 0 || !strings.Contains(out, `steps[1] "split"`) {
		t.Errorf("adapter check of a bad declaration exited %d, want non-zero naming steps[1]:\n%s", code, out)
	}
}

// TestMergeKeepsAPartiallyCoveredRow: every shard of an audit of a
// partial declaration reports what it left out; merged (through the files
// `audit merge` reads), the row is still partially covered, with the same
// kinds, options and skipped table cases.
func TestMergeKeepsAPartiallyCoveredRow(t *testing.T) {
	part := &equiv.Restriction{StepsNotAudited: []string{"score", "lock"}, OptionsNotAudited: []string{"hashed_score"},
		TablesSkipped: []string{"boundary/a", "regression/b"}}
	var paths []string
	for i := range 2 {
		r := auditReport{Seed: 1, Cases: 10, Passed: true, Shard: &shardSpec{Index: i, Count: 2}, Ops: []opResult{
			{Op: "radix.script", Impl: "exec:x", Cases: 5, Passed: true, ShrunkFrom: -1, Partial: part}}}
		if i == 0 {
			r.Ops[0].Tables = 20
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, filepath.Join(t.TempDir(), fmt.Sprintf("shard-%d.json", i)))
		if err := os.WriteFile(paths[i], b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var reps []auditReport
	for _, p := range paths {
		r, err := readReport(p, defaultMaxReportBytes)
		if err != nil {
			t.Fatal(err)
		}
		reps = append(reps, r)
	}
	m, err := mergeReports(reps, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Ops) != 1 || m.Ops[0].Partial == nil || !slices.Equal(m.Ops[0].Partial.TablesSkipped, part.TablesSkipped) ||
		!slices.Equal(m.Ops[0].Partial.StepsNotAudited, part.StepsNotAudited) || m.Ops[0].Tables != 20 || !m.Passed {
		t.Errorf("merged %+v, want the row passed and partially covered as each shard says", m.Ops)
	}
}
