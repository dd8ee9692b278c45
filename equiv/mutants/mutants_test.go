package mutants_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/equiv/mutants"
)

// measured is the zoo measured once (every mutant hunted, every
// regression case run) for the tests below and the page.
var measured = sync.OnceValue(mutants.Measure)

// TestMutantsAreKilled requires every historic bug to be caught by the
// generated differential cases within mutants.MaxCases cases.
func TestMutantsAreKilled(t *testing.T) {
	for _, m := range measured() {
		t.Run(m.Mutant.Name(), func(t *testing.T) {
			if m.Kill == nil {
				t.Fatalf("%s (%s) survived %d generated cases of %s", m.Mutant.Name(), m.Mutant.SpecRef(), m.Cases, m.Mutant.Op())
			}
			t.Logf("killed after %d cases: %s", m.Cases, m.Kill.Reason)
		})
	}
}

// TestRegressionFixturesKillTheirMutant requires each mutant's named minimal
// input to tell it apart from ref.
func TestRegressionFixturesKillTheirMutant(t *testing.T) {
	for _, m := range measured() {
		if m.RegressionErr != nil {
			t.Fatal(m.RegressionErr)
		}
		if m.Regression == nil {
			t.Errorf("%s: regression case %q does not distinguish the mutant from ref", m.Mutant.Op(), m.Mutant.Name())
		}
	}
}

// TestEveryMutantNamesASuite keeps the zoo attached to the catalog.
func TestEveryMutantNamesASuite(t *testing.T) {
	for _, m := range mutants.All() {
		if _, ok := equiv.Lookup(m.Op()); !ok {
			t.Errorf("mutant %s replaces unknown op %s", m.Name(), m.Op())
		}
	}
}

// TestBugZooPageIsCurrent keeps docs/bugzoo.md generated from the suite:
// run `make bugzoo` after changing a mutant, a generator or a regression case.
func TestBugZooPageIsCurrent(t *testing.T) {
	want, err := mutants.RenderZoo(measured())
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../docs/bugzoo.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("docs/bugzoo.md is stale; run `make bugzoo`:\n%s", cmp.Diff(want, string(got)))
	}
}

// TestScenarioFilesExist requires every scenario a mutant names to be a
// file of the repository (the scenario tests run it).
func TestScenarioFilesExist(t *testing.T) {
	for _, m := range mutants.All() {
		if s := m.ScenarioFile(); s != "" {
			if _, err := os.Stat("../../" + s); err != nil {
				t.Errorf("%s: scenario %s: %v", m.Name(), s, err)
			}
		}
	}
}

// TestPythonKitComponentMutantsAreRegistered keeps the Python kit's
// component mutants, which its own unittest runs (EXEC_MUTANTS and
// HTTP_MUTANTS of the file each names), equal to the ones
// mutants.Components lists for the test that kills them: the Go tests of
// the other components check their own, and docs/bugzoo.md lists them all.
func TestPythonKitComponentMutantsAreRegistered(t *testing.T) {
	for killedBy, dict := range map[string]string{
		"test_every_error_path_over_exec": "EXEC_MUTANTS",
		"test_every_error_path_over_http": "HTTP_MUTANTS",
	} {
		var registered []string
		file := ""
		for _, c := range mutants.Components() {
			if c.KilledBy == killedBy {
				registered, file = append(registered, c.Name), c.In
			}
		}
		if file == "" {
			t.Fatalf("no component mutant is killed by %s", killedBy)
		}
		src, err := os.ReadFile("../../" + file)
		if err != nil {
			t.Fatal(err)
		}
		body, ok := pythonDict(string(src), dict)
		if !ok {
			t.Fatalf("%s has no %s = {…}", file, dict)
		}
		names := regexp.MustCompile(`(?m)^\s+"([a-z0-9-]+)":`).FindAllStringSubmatch(body, -1)
		var run []string
		for _, m := range names {
			run = append(run, m[1])
		}
		slices.Sort(registered)
		slices.Sort(run)
		if !slices.Equal(registered, run) {
			t.Errorf("mutants.Components lists %v as killed by %s; %s's %s runs %v", registered, killedBy, file, dict, run)
		}
	}
}

// pythonDict is the body of the top-level `name = {…}` of src.
func pythonDict(src, name string) (string, bool) {
	_, rest, ok := strings.Cut(src, "\n"+name+" = {\n")
	if !ok {
		return "", false
	}
	body, _, ok := strings.Cut(rest, "\n}\n")
	return body, ok
}

// TestComponentMutantsAreDefinedBesideTheTestThatKillsThem: every
// component mutant is named in the file it gives, beside the test that
// kills it, and no two mutants of the zoo share a name.
func TestComponentMutantsAreDefinedBesideTheTestThatKillsThem(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range mutants.All() {
		seen[m.Name()] = true
	}
	for _, c := range mutants.Components() {
		if seen[c.Name] {
			t.Errorf("component mutant %s: the name is taken", c.Name)
		}
		seen[c.Name] = true
		src, err := os.ReadFile("../../" + c.In)
		if err != nil {
			t.Errorf("component mutant %s: %v", c.Name, err)
			continue
		}
		if !strings.Contains(string(src), `"`+c.Name+`"`) {
			t.Errorf("component mutant %s is not defined in %s", c.Name, c.In)
		}
		if !regexp.MustCompile(`(?m)^\s*(func|def) ` + regexp.QuoteMeta(c.KilledBy) + `\(`).Match(src) {
			t.Errorf("component mutant %s: %s has no test %s", c.Name, c.In, c.KilledBy)
		}
	}
}
