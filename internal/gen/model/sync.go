package model

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// Sync compares each file of files (repository path → wanted content) with
// the one under root and returns, in path order, the paths whose content
// differs or that are missing, writing the wanted content when write is set.
func Sync(root string, files map[string][]byte, write bool) ([]string, error) {
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
				return nil, fmt.Errorf("write %s: %w", name, err)
			}
		}
	}
	return stale, nil
}

// Main is a generator command: it renders the files of the checkout at
// -root with render, then writes the stale ones, or with -check only names
// them and exits 1 so a stale file fails the build. name prefixes messages;
// target is the make target that regenerates the files.
func Main(name, target string, render func(root string) (map[string][]byte, error)) {
	root := flag.String("root", ".", "module root of the checkout")
	check := flag.Bool("check", false, "report stale files instead of writing them (exit status 1)")
	flag.Parse()
	files, err := render(*root)
	if err == nil {
		var stale []string
		if stale, err = Sync(*root, files, !*check); err == nil {
			report(name, target, stale, *check)
			return
		}
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	os.Exit(2)
}

// report prints what Main wrote, or what is stale and how to fix it.
func report(name, target string, stale []string, check bool) {
	for _, f := range stale {
		if check {
			fmt.Fprintf(os.Stderr, "%s: %s is stale: run make %s\n", name, f, target)
		} else {
			fmt.Printf("%s: wrote %s\n", name, f)
		}
	}
	if check && len(stale) > 0 {
		os.Exit(1)
	}
}
