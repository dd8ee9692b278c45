package equiv_test

import (
	"flag"
	"strconv"
	"testing"

	"go.uber.org/goleak"
	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv"
)

// TestMain disables rapid's fail files (failures print the shrunk input and
// the seed instead; TestShrink… fails on purpose) and checks for leaks.
// Under -race it runs raceChecks checks per property unless -rapid.checks
// is given: `make test` runs this package at full strength without -race
// (test-full), and the race detector finds races only where the twins run
// goroutines, which the parallel-path tests drive with inputs large enough
// to take them; a fifth of the checks keeps that while the package stops
// being the longest part of the race run.
func TestMain(m *testing.M) {
	flag.Parse()
	if err := flag.Set("rapid.nofailfile", "true"); err != nil {
		panic(err)
	}
	if raceEnabled && !flagGiven("rapid.checks") {
		if err := flag.Set("rapid.checks", strconv.Itoa(raceChecks)); err != nil {
			panic(err)
		}
	}
	goleak.VerifyTestMain(m)
}

// raceChecks is rapid's checks per property under -race (its default is 100).
const raceChecks = 20

// flagGiven reports whether the command line set the flag name.
func flagGiven(name string) bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// TestAllImplementations runs every suite's property on every implementation
// present in this build, over valid and invalid inputs, then the boundary
// and regression tables — crypto/internal/impl style.
func TestAllImplementations(t *testing.T) {
	for _, s := range equiv.Suites() {
		t.Run(s.Name(), func(t *testing.T) {
			t.Parallel()
			for _, impl := range selectedImpls(t, s.Entry()) {
				t.Run(string(impl), func(t *testing.T) {
					for _, kind := range []equiv.Kind{equiv.Valid, equiv.Invalid} {
						prop, err := s.Property(impl, kind)
						if err != nil {
							t.Fatal(err)
						}
						t.Run(string(kind), rapid.MakeCheck(prop))
					}
					fs, err := s.Tables(impl)
					if err != nil {
						t.Fatal(err)
					}
					for _, f := range fs {
						t.Error(f)
					}
				})
			}
		})
	}
}

// TestSuitesCoverTheCatalog fails when an op has no differential suite, or a
// suite has empty tables: adding an op means adding its generators too.
func TestSuitesCoverTheCatalog(t *testing.T) {
	for _, e := range catalog.All() {
		s, ok := equiv.Lookup(e.Name())
		if !ok {
			t.Errorf("%s has no suite in equiv.Suites()", e.Name())
			continue
		}
		if b, _ := s.TableSizes(); b == 0 {
			t.Errorf("%s has no boundary table", e.Name())
		}
	}
	if got, want := len(equiv.Suites()), len(catalog.All()); got != want {
		t.Errorf("%d suites for %d catalog entries", got, want)
	}
}
