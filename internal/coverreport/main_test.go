package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportFailsOnlyWhileAnUnreachedFunctionLacksAReason: one function
// partly unreached under the target fails the report until docs give it a
// reason; blocks listed twice (two test binaries) count once, reached if
// either run reached them.
func TestReportFailsOnlyWhileAnUnreachedFunctionLacksAReason(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "x.go")
	if err := os.WriteFile(src, []byte("package x\n\nfunc A() int {\n\treturn 1\n}\n\nfunc B(v int) int {\n\tif v > 0 {\n\t\treturn 2\n\t}\n\treturn 3\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(dir, "cover.out")
	lines := []string{"mode: set",
		src + ":3.14,5.2 1 1",
		src + ":7.20,8.11 1 1",
		src + ":8.11,10.3 1 0",
		src + ":8.11,10.3 1 0", // the same block from a second test binary
		src + ":11.2,11.10 1 0",
		src + ":11.2,11.10 1 1", // reached by the second binary only
	}
	if err := os.WriteFile(profile, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reasons := filepath.Join(dir, "coverage.md")
	if err := os.WriteFile(reasons, []byte("| function | reason |\n|---|---|\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(profile, reasons, "", 97)
	if err == nil || !strings.Contains(err.Error(), "75.0% is under 97% and 1 unreached statements have no reason") {
		t.Errorf("without a reason: %v", err)
	}
	row := "| `" + src + ":B` | the positive branch needs a generator |\n"
	if err := os.WriteFile(reasons, []byte("| function | reason |\n|---|---|\n"+row), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(profile, reasons, "", 97); err != nil {
		t.Errorf("with a reason: %v", err)
	}
}
