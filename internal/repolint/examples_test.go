package repolint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// examplePackages are the packages a Go program imports to use kvtwin;
// each shows itself in at least one runnable Example.
var examplePackages = []string{"spec", "ref", "fast", "catalog", "prefix", "server", "adapter", "remote"}

// TestPackagesUsersImportHaveRunnableExamples: every package of
// examplePackages has an Example with an "Output:" comment (so `go test`
// runs it and checks what it prints, and the README's instruction to run
// them stays true), and there are at least 12 of them.
func TestPackagesUsersImportHaveRunnableExamples(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, pkg := range examplePackages {
		files, err := filepath.Glob(filepath.Join(root, pkg, "*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, f := range files {
			fset := token.NewFileSet()
			af, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range af.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Recv != nil || !strings.HasPrefix(fd.Name.Name, "Example") {
					continue
				}
				for _, c := range af.Comments {
					if c.Pos() > fd.Body.Lbrace && c.End() < fd.Body.Rbrace && strings.HasPrefix(strings.TrimSpace(c.Text()), "Output:") {
						n++ // an Example with an Output comment: go test runs it
						break
					}
				}
			}
		}
		if n == 0 {
			t.Errorf("%s has no runnable Example (an Example func with an Output: comment)", pkg)
		}
		total += n
	}
	if total < 12 {
		t.Errorf("%d runnable Examples in %v, want at least 12", total, examplePackages)
	}
}
