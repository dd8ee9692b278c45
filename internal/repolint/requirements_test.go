package repolint

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	ciChecks   = regexp.MustCompile(`command -v (\S+) >/dev/null`)
	ciInstalls = regexp.MustCompile(`apt-get install -y -qq ([a-z0-9 .+-]+)`)
)

// TestReadmeRequirementsAreWhatCIInstalls: every tool `.ci/run` checks for
// and every Debian package it installs is named in the README's
// requirements (the paragraph opening "Both need"), so a fresh machine set
// up from the README runs `make test` as CI does.
func TestReadmeRequirementsAreWhatCIInstalls(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(readme), "Both need")
	if start < 0 {
		t.Fatal(`README has no requirements paragraph opening "Both need"`)
	}
	para, _, _ := strings.Cut(string(readme)[start:], "\n\n")
	var wants []string
	for _, m := range ciChecks.FindAllStringSubmatch(string(ci), -1) {
		wants = append(wants, m[1])
	}
	for _, m := range ciInstalls.FindAllStringSubmatch(string(ci), -1) {
		wants = append(wants, strings.Fields(m[1])...)
	}
	if len(wants) < 6 {
		t.Fatalf("found only %v in .ci/run: did its checks or its apt-get line change shape?", wants)
	}
	for _, w := range wants {
		if !strings.Contains(para, "`"+w+"`") && !strings.Contains(para, "/"+w+"`") {
			t.Errorf(".ci/run needs %s, which the README's requirements do not name (as `%s`)", w, w)
		}
	}
}
