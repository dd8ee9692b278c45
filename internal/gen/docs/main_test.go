package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/internal/importgraph"
)

const root = "../../.."

// rendered is what the generator would write, computed once for every
// staleness test (the architecture page runs go list twice).
var rendered = sync.OnceValues(func() (map[string][]byte, error) { return render(root) })

func current(t *testing.T, name string) {
	t.Helper()
	want, err := rendered()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want[name]) {
		t.Errorf("%s is stale; run `make docs` (or `make generate`):\n%s", name, cmp.Diff(string(want[name]), string(got)))
	}
}

// TestOpsPageIsCurrent keeps docs/ops.md generated from the catalog and the
// source: run `make docs` after adding an op or moving its files.
func TestOpsPageIsCurrent(t *testing.T) { current(t, OpsPage) }

// TestReadmeOpsTableIsCurrent keeps README.md's ops table (between its
// ops:begin and ops:end markers) generated from the catalog: run `make docs`
// after adding an op or changing its spec section or summary.
func TestReadmeOpsTableIsCurrent(t *testing.T) { current(t, Readme) }

// TestArchitecturePageIsCurrent keeps docs/design/ARCHITECTURE.md's package
// graph, package table and rule table generated from `go list`, the package
// doc comments and internal/importgraph's rules: run `make docs` after
// adding, removing or documenting a package, changing an import between
// the module's packages or an outside module, or changing a rule.
func TestArchitecturePageIsCurrent(t *testing.T) { current(t, Architecture) }

// TestArchitecturePageShowsEveryPackageAndRule guards the page against a
// generator that writes less than the code has: every package of go list
// has a row and a node, every rule's subtest a row.
func TestArchitecturePageShowsEveryPackageAndRule(t *testing.T) {
	pages, err := rendered()
	if err != nil {
		t.Fatal(err)
	}
	page := string(pages[Architecture])
	graphs, err := importgraph.LoadAll(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range graphs {
		for _, p := range g.Local {
			rel := g.Rel(p)
			if !strings.Contains(page, "| [`"+rel+"`](") || !strings.Contains(page, nodeID(rel)+"[\""+rel+"\"]") {
				t.Errorf("%s (%s) has no row or no node on the page", rel, g.Build)
			}
		}
	}
	for _, r := range importgraph.Rules() {
		if !strings.Contains(page, "| "+r.Spec+" | ") {
			t.Errorf("rule %s (%s) has no row on the page", r.Spec, r)
		}
	}
}

// TestRoleIsTheDocCommentsFirstSentence pins where a package's role comes
// from and what the generator refuses: no doc comment, one that does not
// open with the package's name, and a first sentence too long for one line.
func TestRoleIsTheDocCommentsFirstSentence(t *testing.T) {
	role, err := roleOf("catalog", &importgraph.Package{Name: "catalog", Doc: "Package catalog pairs each algorithm's twins under one name."})
	if err != nil || role != "pairs each algorithm's twins under one name" {
		t.Errorf("catalog: role %q, %v", role, err)
	}
	role, err = roleOf("cmd/kvtwin", &importgraph.Package{Name: "main", Doc: "Command kvtwin is the one binary."})
	if err != nil || role != "the one binary" {
		t.Errorf("cmd/kvtwin: role %q, %v", role, err)
	}
	for _, c := range []struct {
		name, doc, want string
	}{
		{"fast", "", `must open with "Package fast …"`},
		{"fast", "Fast twins.", `must open with "Package fast …"`},
		{"fast", "Package fast " + strings.Repeat("x", maxRole+1) + ".", "over 150"},
	} {
		if _, err := roleOf(c.name, &importgraph.Package{Name: c.name, Doc: c.doc}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one saying %s", c.doc, err, c.want)
		}
	}
}

// TestReplaceRegionNeedsOneRegion: a page without its markers, or with two
// regions, is refused rather than half rewritten.
func TestReplaceRegionNeedsOneRegion(t *testing.T) {
	got, err := replaceRegion("a\n<b>\nold\n<e>\nz\n", "p", "<b>", "<e>", "new\n")
	if err != nil || got != "a\n<b>\nnew\n<e>\nz\n" {
		t.Errorf("replaceRegion = %q, %v", got, err)
	}
	for _, doc := range []string{"no markers\n", "<e>\n<b>\n", "<b>\n<e>\n<b>\n<e>\n"} {
		if _, err := replaceRegion(doc, "p", "<b>", "<e>", "new\n"); err == nil {
			t.Errorf("replaceRegion(%q) = nil error, want a refusal", doc)
		}
	}
}

// TestEveryOpCitesASpecFile requires each op's spec section to name a file
// of docs/spec: the section is the contract the twins are checked against,
// and an op whose SpecRef names no file would list no spec in docs/ops.md
// (the spec-reference lint cannot tell a missing spec file from a reference
// to some other page).
func TestEveryOpCitesASpecFile(t *testing.T) {
	rows, err := index(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.specDoc == "" {
			t.Errorf("%s: its spec section %q names no file of docs/spec", r.entry.Name(), r.entry.Spec())
		}
	}
}
