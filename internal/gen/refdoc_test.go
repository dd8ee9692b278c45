package main

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/internal/gen/model"
)

// TestRefDocListsEveryOp keeps `go doc ./ref` the list of algorithms: the
// package comment (ref/doc.go) names the ref twin of every catalog op, so
// an op added or renamed without its line there fails here.
func TestRefDocListsEveryOp(t *testing.T) {
	r, err := model.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, "ref", "doc.go"), nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil {
		t.Fatal("ref/doc.go has no package comment")
	}
	doc := f.Doc.Text()
	named := 0
	for _, op := range r.Ops {
		if op.Ref == nil {
			continue
		}
		fn, ok := strings.CutPrefix(op.Ref.Expr, "ref.")
		if !ok {
			t.Errorf("%s: the ref twin %q is not a function of ref", op.Name, op.Ref.Expr)
			continue
		}
		named++
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(fn) + `\b`).MatchString(doc) {
			t.Errorf("%s: ref/doc.go's list of algorithms does not name ref.%s; add it under its spec file and section", op.Name, fn)
		}
	}
	if named < 40 {
		t.Fatalf("only %d ops with a ref twin; is the model loading the repository?", named)
	}
}
