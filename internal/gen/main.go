// Command gen writes the registration lists kvtwin would otherwise keep by
// hand, from the source (internal/gen/model has the rules):
// catalog/all_gen.go (catalog.All), equiv/suites_gen.go (equiv.Suites) and
// equiv/mutants/all_gen.go (mutants.All). Run it as `make generate` (which
// also regenerates the docs) or `go run ./internal/gen` from the module
// root; -check only reports stale files. It imports nothing of kvtwin, so it
// builds while the lists are stale. TestGeneratedListsAreCurrent fails when a
// committed list differs from what it would write.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/kvtwin/kvtwin/internal/gen/model"
)

func main() {
	root := flag.String("root", ".", "module root of the checkout")
	check := flag.Bool("check", false, "report stale files instead of writing them (exit status 1)")
	flag.Parse()
	stale, err := run(*root, !*check)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(2)
	}
	for _, f := range stale {
		if *check {
			fmt.Fprintf(os.Stderr, "gen: %s is stale: run make generate\n", f)
		} else {
			fmt.Printf("gen: wrote %s\n", f)
		}
	}
	if *check && len(stale) > 0 {
		os.Exit(1)
	}
}

// run renders the lists of the checkout at root and returns the paths whose
// content differs from the committed file, writing them when write is set.
func run(root string, write bool) ([]string, error) {
	r, err := model.Load(root)
	if err != nil {
		return nil, err
	}
	files, err := r.Lists()
	if err != nil {
		return nil, err
	}
	var stale []string
	for _, name := range slices.Sorted(maps.Keys(files)) {
		p := filepath.Join(root, filepath.FromSlash(name))
		old, err := os.ReadFile(p)
		if err == nil && bytes.Equal(old, files[name]) {
			continue
		}
		stale = append(stale, name)
		if write {
			if err := os.WriteFile(p, files[name], 0o644); err != nil {
				return nil, err
			}
		}
	}
	return stale, nil
}
