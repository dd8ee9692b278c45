package mutants_test

import (
	"os"
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
