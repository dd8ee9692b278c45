package main

import (
	"os"
	"path/filepath"
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
	r, err := model.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	files, err := r.Lists()
	if err != nil {
		t.Fatal(err)
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
// and fast/ (the index in docs/ops.md is built from them).
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
