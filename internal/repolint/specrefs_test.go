package repolint

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// A spec reference is "<name>.md §<id>" where <name>.md is a file of
// docs/spec or docs/design. The name may carry a path (docs/spec/, spec/,
// ../shared/spec/), may be in backticks, and may sit inside a markdown link
// ("[transfer.md §4](spec/transfer.md)"). Ids are section numbers as the
// headings write them: "0", "4.7", "A1.15", "S4". Further ids of the same
// list are checked against the same file: "§A1.7, §A1.10", "§3.4 and §3.5",
// "§1–§4", "§7.2–7.3" (after a dash the second § may be left out).
var (
	specRefStart = regexp.MustCompile("((?:[A-Za-z0-9_.-]+/)*)([A-Za-z0-9_-]+\\.md)`?\\s*§\\s*([A-Z]?[0-9]+(?:\\.[0-9]+)*)")
	specRefNext  = regexp.MustCompile(`^(?:\s*(?:,|and|or|/)\s*§\s*|\s*[–-]\s*§?\s*)([A-Z]?[0-9]+(?:\.[0-9]+)*)`)
	specHeading  = regexp.MustCompile(`^#{1,6}\s+(.*)$`)
)

// specDirs are the folders whose files a reference may name, in lookup order.
var specDirs = []string{"docs/spec", "docs/design"}

type specRef struct {
	path string // relative to the module root, slash-separated
	line int
	file string // docs/spec/transfer.md
	name string // as written: transfer.md
	id   string
}

// specModuleRoot is moduleRoot for a test: the folder holding go.mod.
func specModuleRoot(t *testing.T) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// specHeadingIDs returns, for every file of specDirs, its headings' texts
// (after the #'s), skipping fenced code blocks.
func specHeadingIDs(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, d := range specDirs {
		entries, err := os.ReadDir(filepath.Join(root, d))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
				continue
			}
			rel := d + "/" + e.Name()
			data, err := os.ReadFile(filepath.Join(root, rel))
			if err != nil {
				t.Fatal(err)
			}
			var heads []string
			fence := ""
			for _, line := range strings.Split(string(data), "\n") {
				trimmed := strings.TrimSpace(line)
				if fence != "" {
					if strings.HasPrefix(trimmed, fence) {
						fence = ""
					}
					continue
				}
				if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
					fence = trimmed[:3]
					continue
				}
				if m := specHeading.FindStringSubmatch(line); m != nil {
					heads = append(heads, strings.TrimSpace(m[1]))
				}
			}
			out[rel] = heads
		}
	}
	return out
}

// specHeadingNames reports whether a heading's text begins with id followed by
// its end, a space, an em dash, or a period that ends the number ("4. Per-layer",
// "4.7 Historic bugs", "A1. PrefillAdder", "S4.7 Buggy variant"). "4" does not
// name "4.7 …", and "1.2.3" names no heading when only "1.2 …" exists.
func specHeadingNames(heading, id string) bool {
	rest, ok := strings.CutPrefix(heading, id)
	if !ok {
		return false
	}
	if r, ok := strings.CutPrefix(rest, "."); ok {
		rest = r
		if rest == "" {
			return true
		}
	} else if rest == "" {
		return true
	}
	return strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, "—")
}

// specFileFor maps a reference's (path prefix, name) to a file of specDirs, or "".
func specFileFor(heads map[string][]string, prefix, name string) string {
	dirs := specDirs
	switch {
	case strings.HasSuffix(prefix, "design/"):
		dirs = []string{"docs/design"}
	case strings.HasSuffix(prefix, "spec/"):
		dirs = []string{"docs/spec"}
	case prefix != "":
		// Some other folder (internal/jsonscan/README.md, …): not a spec file.
		return ""
	case name == "README.md":
		// A bare README.md is whichever README is nearest, not the spec index.
		return ""
	}
	for _, d := range dirs {
		if _, ok := heads[d+"/"+name]; ok {
			return d + "/" + name
		}
	}
	return ""
}

// specRefsInLine finds every reference in one line of text.
func specRefsInLine(heads map[string][]string, path string, lineNo int, line string) []specRef {
	var refs []specRef
	for _, m := range specRefStart.FindAllStringSubmatchIndex(line, -1) {
		prefix, name, id := line[m[2]:m[3]], line[m[4]:m[5]], line[m[6]:m[7]]
		file := specFileFor(heads, prefix, name)
		if file == "" {
			continue
		}
		refs = append(refs, specRef{path, lineNo, file, name, id})
		rest := line[m[1]:]
		for {
			n := specRefNext.FindStringSubmatchIndex(rest)
			if n == nil {
				break
			}
			refs = append(refs, specRef{path, lineNo, file, name, rest[n[2]:n[3]]})
			rest = rest[n[1]:]
		}
	}
	return refs
}

// specRefsInTree walks the module's .go and .md files (not .git, bin, testdata
// folders, docs/gpu-runs or this file) and returns every reference, in path and
// line order.
func specRefsInTree(t *testing.T, root string, heads map[string][]string) []specRef {
	t.Helper()
	var refs []specRef
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(strings.TrimPrefix(p, root), string(filepath.Separator)))
		if d.IsDir() {
			switch {
			case d.Name() == ".git", d.Name() == "testdata", rel == "bin", rel == "docs/gpu-runs":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, ".md") {
			return nil
		}
		if rel == "internal/repolint/specrefs_test.go" {
			return nil // its made-up references are the resolver's test cases
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for n := 1; sc.Scan(); n++ {
			if strings.Contains(sc.Text(), "§") {
				refs = append(refs, specRefsInLine(heads, rel, n, sc.Text())...)
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return refs
}

func specResolves(heads map[string][]string, file, id string) bool {
	for _, h := range heads[file] {
		if specHeadingNames(h, id) {
			return true
		}
	}
	return false
}

func TestEverySpecReferenceNamesAHeading(t *testing.T) {
	root := specModuleRoot(t)
	heads := specHeadingIDs(t, root)
	refs := specRefsInTree(t, root, heads)
	// The tree cites the spec several hundred times; far fewer means the
	// pattern stopped matching, not that the references went away.
	if len(refs) < 300 {
		t.Fatalf("found only %d spec references; the reference pattern no longer matches the tree", len(refs))
	}
	var bad []string
	for _, r := range refs {
		if !specResolves(heads, r.file, r.id) {
			bad = append(bad, fmt.Sprintf("%s:%d: %s §%s names no heading", r.path, r.line, r.name, r.id))
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("%d of %d spec references name no heading of docs/spec or docs/design:\n%s",
			len(bad), len(refs), strings.Join(bad, "\n"))
	}
	t.Logf("%d spec references checked", len(refs))
}

func TestSpecReferenceResolverTellsRealSectionsFromMadeUpOnes(t *testing.T) {
	root := specModuleRoot(t)
	heads := specHeadingIDs(t, root)
	for _, c := range []struct {
		line string
		ids  []string
		ok   []bool
	}{
		{"see docs/spec/transfer.md §4.7 for B1", []string{"4.7"}, []bool{true}},
		{"[transfer.md §4](spec/transfer.md)", []string{"4"}, []bool{true}},
		{"(`cp-layout.md` §7.2)", []string{"7.2"}, []bool{true}},
		{"admission-serving.md §A1.7, §A1.10 and §S4.7.", []string{"A1.7", "A1.10", "S4.7"}, []bool{true, true, true}},
		{"radix-acks.md §1–§4", []string{"1", "4"}, []bool{true, true}},
		{"cp-layout.md §7.2–7.3", []string{"7.2", "7.3"}, []bool{true, true}},
		{"kv-events.md §0", []string{"0"}, []bool{true}},
		{"docs/design/cuda.md §7", []string{"7"}, []bool{true}},
		{"transfer.md §4.7.3", []string{"4.7.3"}, []bool{false}},
		{"transfer.md §13", []string{"13"}, []bool{false}},
		{"radix-acks.md §1.99, §7", []string{"1.99", "7"}, []bool{false, false}},
		{"admission-serving.md §A9", []string{"A9"}, []bool{false}},
		{"internal/jsonscan/README.md §1", nil, nil},
		{"transfer.md §4, 8 layers", []string{"4"}, []bool{true}},
	} {
		refs := specRefsInLine(heads, "x.md", 1, c.line)
		if len(refs) != len(c.ids) {
			t.Errorf("%q: found %d references %v, want %v", c.line, len(refs), refs, c.ids)
			continue
		}
		for i, r := range refs {
			if r.id != c.ids[i] {
				t.Errorf("%q: reference %d has id %q, want %q", c.line, i, r.id, c.ids[i])
			}
			if got := specResolves(heads, r.file, r.id); got != c.ok[i] {
				t.Errorf("%q: %s §%s resolves = %v, want %v", c.line, r.file, r.id, got, c.ok[i])
			}
		}
	}
	for _, c := range []struct {
		heading, id string
		want        bool
	}{
		{"4. Per-layer transfer", "4", true},
		{"4.7 Historic bugs (seed)", "4.7", true},
		{"4.7 Historic bugs (seed)", "4", false},
		{"A1. PrefillAdder: admission", "A1", true},
		{"A1.15 Buggy variants (bug zoo)", "A1.1", false},
		{"0. Conventions", "0", true},
		{"Appendix A — consolidated test vectors", "A", false},
	} {
		if got := specHeadingNames(c.heading, c.id); got != c.want {
			t.Errorf("heading %q names §%s = %v, want %v", c.heading, c.id, got, c.want)
		}
	}
}
