package mutants_test

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/equiv/mutants"
)

// TestMutantsAreKilled requires every historic bug to be caught by the
// generated differential cases within mutants.MaxCases cases.
func TestMutantsAreKilled(t *testing.T) {
	for _, m := range mutants.All() {
		t.Run(m.Name(), func(t *testing.T) {
			n, f := m.Hunt(mutants.MaxCases)
			if f == nil {
				t.Fatalf("%s (%s) survived %d generated cases of %s", m.Name(), m.SpecRef(), n, m.Op())
			}
			t.Logf("killed after %d cases: %s", n, f.Reason)
		})
	}
}

// TestRegressionFixturesKillTheirMutant requires each mutant's named minimal
// input to tell it apart from ref.
func TestRegressionFixturesKillTheirMutant(t *testing.T) {
	for _, m := range mutants.All() {
		f, err := m.Regression()
		if err != nil {
			t.Fatal(err)
		}
		if f == nil {
			t.Errorf("%s: regression case %q does not distinguish the mutant from ref", m.Op(), m.Name())
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
	want, err := mutants.ZooMarkdown()
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
