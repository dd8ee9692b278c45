package repolint

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kvtwin/kvtwin/internal/importgraph"
)

// The import rules are data in internal/importgraph (importgraph.Rules), so
// that docs/design/ARCHITECTURE.md's rule table is generated from the very
// rows these tests check.

// TestImportRules checks every row of importgraph.Rules, one subtest per
// spec: go test -run 'ImportRules/ServerNeverLinks' ./internal/repolint.
func TestImportRules(t *testing.T) {
	graphs := loadGraphs(t)
	rules := importgraph.Rules()
	var specs []string
	for _, r := range rules {
		if !slices.Contains(specs, r.Spec) {
			specs = append(specs, r.Spec)
		}
	}
	for _, spec := range specs {
		t.Run(spec, func(t *testing.T) {
			for _, r := range rules {
				if r.Spec == spec {
					checkRule(t, graphs, r)
				}
			}
		})
	}
}

// TestImportGraphIsPlausible guards the rules against passing vacuously: the
// graph must load without errors on every build and hold the arrows every
// rule above presumes.
func TestImportGraphIsPlausible(t *testing.T) {
	for _, g := range loadGraphs(t) {
		for _, p := range g.Local {
			if e := g.Packages[p].Error; e != nil {
				t.Errorf("%s: %s does not load: %s", g.Build, g.Rel(p), e.Err)
			}
		}
		if n := len(g.Local); n < 15 {
			t.Errorf("%s: only %d module packages loaded, want at least 15", g.Build, n)
		}
		for _, want := range [][2]string{
			{"catalog", "ref"}, {"catalog", "fast"}, {"catalog", "fast/cuda"}, {"fast", "ref"},
			{"server", "catalog"}, {"cmd/kvtwin", "server"}, {"cmd/kvtwin", "equiv"},
			{"cmd/kvtwin", "catalog"}, {"cmd/kvtwin", "events/scaleout"},
			{"fast", "internal/fault"}, {"equiv/mutants", "internal/fault"}, {"internal/fault", "spec"}, {"ref", "spec"}, {"fast", "spec"},
		} {
			from, ok := g.Packages[g.Abs(want[0])]
			if !ok {
				t.Errorf("%s: package %s missing from the graph", g.Build, want[0])
				continue
			}
			if !slices.Contains(from.Imports, g.Abs(want[1])) {
				t.Errorf("%s: %s does not import %s; the graph is not the one the rules describe", g.Build, want[0], want[1])
			}
		}
		if srv, ok := g.Packages[g.Abs("server")]; ok && !slices.Contains(srv.Deps, "net/http") {
			t.Errorf("%s: server's Deps lack net/http: transitive deps did not load", g.Build)
		}
	}
}

// TestImportRulesNameRealPackages keeps the table honest: every rule's
// package pattern names at least one package of the module, so a rename
// cannot silently turn a rule into one about nothing.
func TestImportRulesNameRealPackages(t *testing.T) {
	g := loadGraphs(t)[0]
	for _, r := range importgraph.Rules() {
		if !slices.ContainsFunc(g.Local, func(p string) bool { return importgraph.Match(r.Pkg, g.Rel(p)) }) {
			t.Errorf("rule %q (%s) names no package of the module", r, r.Spec)
		}
	}
}

// checkRule reports each violation of r once, with the builds it shows in.
func checkRule(t *testing.T, graphs []*importgraph.Graph, r importgraph.Rule) {
	t.Helper()
	var order []string
	builds := map[string][]string{} // violation → builds it shows in
	for _, g := range graphs {
		for _, v := range r.Violations(g) {
			if builds[v] == nil {
				order = append(order, v)
			}
			builds[v] = append(builds[v], g.Build)
		}
	}
	for _, v := range order {
		t.Errorf("%s [%s]\n\tbreaks rule %q: %s", v, strings.Join(builds[v], ", "), r, r.Why)
	}
}

// graphs loads the module's graphs once for every test of the package.
var graphs = sync.OnceValues(func() ([]*importgraph.Graph, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	return importgraph.LoadAll(root)
})

func loadGraphs(t *testing.T) []*importgraph.Graph {
	t.Helper()
	gs, err := graphs()
	if err != nil {
		t.Fatal(err)
	}
	return gs
}

// moduleRoot and goCmd are importgraph's, under the names this package's
// other tests use.
func moduleRoot() (string, error) { return importgraph.ModuleRoot() }

func goCmd(dir string, env []string, args ...string) ([]byte, error) {
	return importgraph.Go(dir, env, args...)
}
