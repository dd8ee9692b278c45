package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/internal/gen/model"
)

const root = "../.."

// TestGeneratedListsAreCurrent keeps catalog/all_gen.go, equiv/suites_gen.go
// and equiv/mutants/all_gen.go generated from the source: run `make
// generate` after adding, renaming or removing an op, a spec or a mutant.
func TestGeneratedListsAreCurrent(t *testing.T) {
	files, err := lists(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{model.OpsFile, model.SuitesFile, model.MutantsFile} {
		if files[name] == nil {
			t.Errorf("the generator no longer writes %s", name)
		}
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil {
			t.Errorf("%s: %v; run `make generate`", name, err)
			continue
		}
		if string(got) != string(want) {
			t.Errorf("%s is stale; run `make generate`:\n%s", name, cmp.Diff(string(want), string(got)))
		}
	}
}

// TestEveryOpHasASpecAndFiles requires each catalog op to have a
// differential spec and its ref and fast twins to resolve to files of ref/
// and fast/; the index in docs/ops.md is built from them.
func TestEveryOpHasASpecAndFiles(t *testing.T) {
	r, err := model.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Ops) == 0 {
		t.Fatal("no ops found in catalog/")
	}
	for _, op := range r.Ops {
		if op.Spec == nil {
			t.Errorf("%s (%s): no equiv spec with `Op: catalog.%s()`", op.Name, op.File, op.Func)
		}
		for _, tw := range []struct {
			twin *model.Twin
			dir  string
		}{{op.Ref, "ref/"}, {op.Fast, "fast/"}} {
			if tw.twin == nil || !strings.HasPrefix(tw.twin.File, tw.dir) {
				t.Errorf("%s: twin %+v is not a function of %s", op.Name, tw.twin, tw.dir)
			}
		}
		if op.CUDA != nil && !strings.HasPrefix(op.CUDA.File, "fast/cuda/") {
			t.Errorf("%s: cuda twin %s is not a function of fast/cuda/", op.Name, op.CUDA.Expr)
		}
	}
}

// specTypeFiles maps each type package spec declares to the repository
// path of its file.
func specTypeFiles(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "spec", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.TYPE {
				for _, sp := range gd.Specs {
					out[sp.(*ast.TypeSpec).Name.Name] = "spec/" + filepath.Base(f)
				}
			}
		}
	}
	return out
}

// TestFilesAreNamedForTheirOps holds the file-naming rule of
// docs/design/ARCHITECTURE.md "Files and names": every file declaring an
// op's input type, twin, catalog entry, spec or mutant is named for the op
// (its name with "." → "_"), or, when it holds several ops, for the first
// of them by name; a CUDA twin's file is always named for its own op.
func TestFilesAreNamedForTheirOps(t *testing.T) {
	r, err := model.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	typeFile := specTypeFiles(t)
	opsOf := map[string][]string{} // file → op bases it holds
	cudaOf := map[string]string{}  // cuda file → its op base
	hold := func(file, base string) {
		if !slices.Contains(opsOf[file], base) {
			opsOf[file] = append(opsOf[file], base)
		}
	}
	for _, op := range r.Ops {
		base := strings.ReplaceAll(op.Name, ".", "_")
		hold(op.File, base)
		if f, ok := typeFile[op.Func+"Input"]; ok {
			hold(f, base)
		} else {
			t.Errorf("%s: package spec declares no %sInput", op.Name, op.Func)
		}
		for _, tw := range []*model.Twin{op.Ref, op.Fast} {
			if tw != nil && tw.File != op.File {
				hold(tw.File, base)
			}
		}
		if op.CUDA != nil {
			cudaOf[op.CUDA.File] = base
		}
		if op.Spec != nil {
			hold(op.Spec.File, base)
		}
		for _, m := range op.Mutants {
			hold(m.File, base)
		}
	}
	if len(opsOf) < 100 {
		t.Fatalf("only %d files hold ops; is the model loading the repository?", len(opsOf))
	}
	for file, bases := range opsOf {
		want := slices.Min(bases)
		if got := strings.TrimSuffix(path.Base(file), ".go"); got != want {
			t.Errorf("%s holds %v: name it %s.go", file, bases, want)
		}
	}
	for file, base := range cudaOf {
		if got := strings.TrimSuffix(path.Base(file), ".go"); got != base {
			t.Errorf("%s is the CUDA twin of %s: name it %s.go", file, base, base)
		}
	}
}
