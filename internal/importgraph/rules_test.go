package importgraph_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/internal/importgraph"
)

// TestImportRuleKindsCatchTheirViolation runs each kind of rule on a small
// made-up graph where it must find exactly one violation, so that a rule
// cannot pass because its kind checks nothing.
func TestImportRuleKindsCatchTheirViolation(t *testing.T) {
	const mod = "example.com/m"
	pkg := func(rel string, imports ...string) *importgraph.Package {
		p := &importgraph.Package{ImportPath: mod + "/" + rel, Module: &importgraph.Module{Path: mod, Main: true}}
		for _, i := range imports {
			if !strings.Contains(i, ".") {
				i = mod + "/" + i
			}
			p.Imports = append(p.Imports, i)
		}
		p.Deps = p.Imports
		return p
	}
	g := &importgraph.Graph{Build: "made-up", Module: mod, Packages: map[string]*importgraph.Package{}}
	for _, p := range []*importgraph.Package{
		pkg("ref"), pkg("fast", "ref"), pkg("catalog", "ref", "fast"),
		pkg("cmd/tool", "catalog", "fast", "github.com/x/y"),
	} {
		g.Packages[p.ImportPath] = p
		g.Local = append(g.Local, p.ImportPath)
	}
	g.Packages["github.com/x/y"] = &importgraph.Package{ImportPath: "github.com/x/y"}
	slices.Sort(g.Local)
	for _, c := range []struct {
		rule importgraph.Rule
		want string
	}{
		{importgraph.Rule{Pkg: "catalog", Constraint: importgraph.Constraint{Kind: importgraph.MayOnlyImport, Targets: []string{"ref"}}}, "catalog imports fast"},
		{importgraph.Rule{Pkg: "cmd/...", Constraint: importgraph.Constraint{Kind: importgraph.MayNotImport, Targets: []string{"fast/..."}}}, "cmd/tool imports fast"},
		{importgraph.Rule{Pkg: "fast", Constraint: importgraph.Constraint{Kind: importgraph.OnlyImportedBy, Targets: []string{"catalog"}}}, "cmd/tool imports fast"},
		{importgraph.Rule{Pkg: "cmd/tool", Constraint: importgraph.Constraint{Kind: importgraph.MayOnlyImportOutside}}, "cmd/tool imports github.com/x/y"},
		{importgraph.Rule{Pkg: "catalog", Constraint: importgraph.Constraint{Kind: importgraph.MayNotLink, Targets: []string{"ref"}}}, "catalog links ref via catalog → ref"},
	} {
		got := c.rule.Violations(g)
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("%s: violations %q, want [%q]", c.rule, got, c.want)
		}
	}
}

// TestMatchTakesDotsAsASubtreeAndGlobsElse pins the package patterns the
// rules are written in.
func TestMatchTakesDotsAsASubtreeAndGlobsElse(t *testing.T) {
	for _, c := range []struct {
		pat, path string
		want      bool
	}{
		{"fast/...", "fast", true}, {"fast/...", "fast/cuda/cudaguard", true}, {"fast/...", "fastcore", false},
		{"fast", "fast/cuda", false}, {"internal/*", "internal/fault", true}, {"internal/*", "internal/gen/docs", false},
		{"pgregory.net/rapid/...", "pgregory.net/rapid", true},
	} {
		if got := importgraph.Match(c.pat, c.path); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.pat, c.path, got, c.want)
		}
	}
}

// TestRulesReadAsSentences pins how a rule is written in failures and on
// the architecture page, and that Rules hands out a copy.
func TestRulesReadAsSentences(t *testing.T) {
	code := func(s string) string { return "`" + s + "`" }
	for _, c := range []struct {
		c    importgraph.Constraint
		want string
	}{
		{importgraph.Constraint{Kind: importgraph.MayOnlyImport}, "imports no module package"},
		{importgraph.Constraint{Kind: importgraph.MayOnlyImport, Targets: []string{"ref", "fast"}}, "may only import `ref`, `fast`"},
		{importgraph.Constraint{Kind: importgraph.OnlyImportedBy}, "may only be imported by tests"},
		{importgraph.Constraint{Kind: importgraph.MayNotImport, Targets: []string{"fast/..."}}, "may not import `fast/...`"},
		{importgraph.Constraint{Kind: importgraph.MayNotLink, Targets: []string{"testing"}}, "may not link `testing`"},
		{importgraph.Constraint{Kind: importgraph.MayOnlyImportOutside, Targets: []string{"x.org/y"}}, "imports only the standard library and `x.org/y`"},
	} {
		if got := c.c.Text(code); got != c.want {
			t.Errorf("Text = %q, want %q", got, c.want)
		}
	}
	rules := importgraph.Rules()
	if len(rules) < 20 {
		t.Fatalf("only %d rules", len(rules))
	}
	rules[0].Targets = append(rules[0].Targets, "changed")
	rules[0].Pkg = "changed"
	if again := importgraph.Rules(); again[0].Pkg == "changed" || slices.Contains(again[0].Targets, "changed") {
		t.Error("Rules hands out the table itself: a caller changed it")
	}
	if !strings.Contains(importgraph.Rules()[0].String(), " ") {
		t.Error("a rule's String is not a sentence")
	}
}
