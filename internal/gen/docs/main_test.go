package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const root = "../../.."

func current(t *testing.T, name string) {
	t.Helper()
	want, err := render(root)
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
