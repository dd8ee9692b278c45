package repolint

import (
	"regexp"
	"strings"
	"testing"
)

// hookDecl is the shape of a bug-zoo hook of fast: an unexported
// <production>WithFaults func (internal/fault's naming rule).
var hookDecl = regexp.MustCompile(`^func [a-z]\w*WithFaults\(`)

// TestFastAPINamesNoFault keeps the bug zoo off the production API: `go doc
// -all ./fast` (what a user of fast reads: every exported identifier, method
// and field, with their doc comments) names no fault type, no hook and not
// the fault package, while fast's unexported declarations (`go doc -u`) do
// hold the hooks, so the check cannot pass because the hooks went missing.
// The hooks leave fast only through internal/fault's table, which
// TestImportRules/FaultSwitchesStayInTwinsAndBugZoo keeps to fast and the
// bug zoo.
func TestFastAPINamesNoFault(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := goCmd(root, nil, "doc", "-all", "./fast")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "func NewRadixTree(") {
		t.Fatalf("go doc -all ./fast lacks NewRadixTree; is this the fast package?\n%s", doc)
	}
	for i, line := range strings.Split(string(doc), "\n") {
		if strings.Contains(line, "fault.") || strings.Contains(line, "internal/fault") || strings.Contains(line, "WithFaults") {
			t.Errorf("go doc -all ./fast line %d names the bug zoo: %s", i+1, line)
		}
	}

	all, err := goCmd(root, nil, "doc", "-u", "-all", "./fast")
	if err != nil {
		t.Fatal(err)
	}
	hooks := 0
	for _, line := range strings.Split(string(all), "\n") {
		if hookDecl.MatchString(line) {
			hooks++
		}
	}
	if hooks == 0 {
		t.Error("go doc -u -all ./fast shows no <production>WithFaults hook; the check above would pass vacuously")
	}
}
