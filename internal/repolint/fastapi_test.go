package repolint

import (
	"regexp"
	"strings"
	"testing"
)

// hookDecl is the one shape in which a fault type may appear in a
// declaration of internal/fastcore: a <Production>WithFaults hook
// (internal/fault's naming rule).
var hookDecl = regexp.MustCompile(`^func [A-Z]\w*WithFaults\(`)

// TestFastAPINamesNoFault keeps the bug zoo off the production API: `go doc
// -all ./fast` (what a user of fast reads) names no fault type and no hook,
// and internal/fastcore, whose types fast re-exports by alias, names a fault
// type only in its <Production>WithFaults hooks, never in a method or an
// exported field a fast user could reach through an alias.
func TestFastAPINamesNoFault(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := goCmd(root, nil, "doc", "-all", "./fast")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "func NewTree(") {
		t.Fatalf("go doc -all ./fast lacks NewTree; is this the fast package?\n%s", doc)
	}
	for i, line := range strings.Split(string(doc), "\n") {
		if strings.Contains(line, "fault.") || strings.Contains(line, "WithFaults") {
			t.Errorf("go doc ./fast line %d names the bug zoo: %s", i+1, line)
		}
	}

	core, err := goCmd(root, nil, "doc", "-all", "./internal/fastcore")
	if err != nil {
		t.Fatal(err)
	}
	hooks := 0
	for i, line := range strings.Split(string(core), "\n") {
		if strings.HasPrefix(line, "    ") || !strings.Contains(line, "fault.") {
			continue // a doc comment line, or no fault named
		}
		if hookDecl.MatchString(line) {
			hooks++
			continue
		}
		t.Errorf("go doc ./internal/fastcore line %d names a fault outside a WithFaults hook: %s", i+1, line)
	}
	if hooks == 0 {
		t.Error("no WithFaults hook found in internal/fastcore; the check above would pass vacuously")
	}
}
