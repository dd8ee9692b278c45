package repolint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// raceSkipPackage is the package whose tests make test runs twice over:
// under -race with the rest (test-race), where some skip, and without it
// (test-cli), where only those run.
const raceSkipPackage = "cmd/kvtwin"

// raceSkipPatterns are the Makefile variables naming the tests test-cli
// runs without -race.
var raceSkipPatterns = []string{"EDGE_TESTS", "E2E_TESTS"}

// TestTestsSkippedUnderRaceRunOnceWithoutIt holds the Makefile's EDGE_TESTS
// and E2E_TESTS to cmd/kvtwin's tests: every test that skips under -race
// (it measures RSS or wall time, or re-executes itself end to end) must be
// selected, or make test would run it nowhere, and no other test may be,
// or make test would run it twice (it already ran under -race). A test
// skips under -race when its body, or a function of the package it calls,
// holds `if raceEnabled { … t.Skip… }`.
func TestTestsSkippedUnderRaceRunOnceWithoutIt(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var pats []string
	for _, v := range raceSkipPatterns {
		m := regexp.MustCompile(`(?m)^` + v + ` :?= (.+)$`).FindStringSubmatch(string(makefile))
		if m == nil {
			t.Fatalf("Makefile: no %s := line", v)
		}
		pats = append(pats, "(?:"+strings.ReplaceAll(m[1], "$$", "$")+")")
	}
	selected := regexp.MustCompile(strings.Join(pats, "|"))
	tests, skipping, err := raceSkippingTests(filepath.Join(root, filepath.FromSlash(raceSkipPackage)))
	if err != nil {
		t.Fatal(err)
	}
	if len(skipping) < 5 {
		t.Fatalf("found only %d tests of %s that skip under -race; is the detection still reading the source?", len(skipping), raceSkipPackage)
	}
	for _, name := range tests {
		switch sel, skips := selected.MatchString(name), skipping[name]; {
		case skips && !sel:
			t.Errorf("%s skips under -race and matches neither %s: make test runs it nowhere", name, strings.Join(raceSkipPatterns, " nor "))
		case !skips && sel:
			t.Errorf("%s matches %s but runs under -race too: make test runs it twice", name, strings.Join(raceSkipPatterns, " or "))
		}
	}
}

// raceSkippingTests parses the test files of dir and returns its Test
// functions, sorted, and the set of those that skip under -race.
func raceSkippingTests(dir string) ([]string, map[string]bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, nil, err
	}
	funcs := map[string]*ast.FuncDecl{}
	fset := token.NewFileSet()
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, nil, err
		}
		for _, d := range af.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Body != nil {
				funcs[fd.Name.Name] = fd
			}
		}
	}
	// skips grows to a fixed point: a function skips when it holds the
	// guard or calls a function that skips.
	skips := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for name, fd := range funcs {
			if !skips[name] && (holdsRaceSkip(fd.Body) || callsAny(fd.Body, skips)) {
				skips[name], changed = true, true
			}
		}
	}
	var tests []string
	skipping := map[string]bool{}
	for name := range funcs {
		if strings.HasPrefix(name, "Test") && name != "TestMain" {
			tests = append(tests, name)
			if skips[name] {
				skipping[name] = true
			}
		}
	}
	slices.Sort(tests)
	return tests, skipping, nil
}

// holdsRaceSkip reports whether body holds `if raceEnabled { … X.Skip… }`.
func holdsRaceSkip(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		is, ok := n.(*ast.IfStmt)
		if !ok || found {
			return !found
		}
		if id, ok := is.Cond.(*ast.Ident); !ok || id.Name != "raceEnabled" {
			return true
		}
		ast.Inspect(is.Body, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && strings.HasPrefix(sel.Sel.Name, "Skip") {
				found = true
			}
			return !found
		})
		return !found
	})
	return found
}

// callsAny reports whether body calls a function of the set by name.
func callsAny(body *ast.BlockStmt, set map[string]bool) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			if id, ok := c.Fun.(*ast.Ident); ok && set[id.Name] {
				found = true
			}
		}
		return !found
	})
	return found
}

// TestRaceSkipDetectionFollowsHelpers pins the detection on a small
// package: a direct guard, one through a helper, one through two, a guard
// that does not skip, and a test with none.
func TestRaceSkipDetectionFollowsHelpers(t *testing.T) {
	dir := t.TempDir()
	src := `package p

import "testing"

func skipUnder(t *testing.T) {
	if raceEnabled {
		t.Skip("no")
	}
}

func start(t *testing.T) { skipUnder(t) }

func TestDirect(t *testing.T) {
	if raceEnabled {
		t.Skipf("no %d", 1)
	}
}

func TestHelper(t *testing.T) { skipUnder(t) }

func TestTwoDeep(t *testing.T) { start(t) }

func TestSmaller(t *testing.T) {
	n := 10
	if raceEnabled {
		n = 2
	}
	_ = n
}

func TestPlain(t *testing.T) {}
`
	if err := os.WriteFile(filepath.Join(dir, "p_test.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	tests, skipping, err := raceSkippingTests(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(tests, " "); got != "TestDirect TestHelper TestPlain TestSmaller TestTwoDeep" {
		t.Errorf("tests %q", got)
	}
	var got []string
	for _, name := range tests {
		if skipping[name] {
			got = append(got, name)
		}
	}
	if strings.Join(got, " ") != "TestDirect TestHelper TestTwoDeep" {
		t.Errorf("skipping %q, want TestDirect TestHelper TestTwoDeep", got)
	}
}
