package repolint

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The adding-an-op recipe (docs/adding-an-op.md) counts the files a new op
// takes by hand. TestAddingAnOpTakesTheFilesTheDocCounts holds the count,
// the table of those files and the worked example to each other and to
// what the repository really needs, by adding the example op to a copy.

const (
	addOpDoc     = "docs/adding-an-op.md"
	addOpSection = "## A trivial op, end to end"
	addOpListTag = "a new last item of the list under "
)

// addOpCount is the recipe's sentence: "touches **seven files by hand,
// eight when the op has a historic bug**"; README repeats it as "(seven
// files by hand, eight with a historic bug)".
var (
	addOpCount       = regexp.MustCompile(`touches \*\*(\w+)\s+files by hand, (\w+) when the op has a historic bug\*\*`)
	addOpReadmeCount = regexp.MustCompile(`\((\w+) files by hand, (\w+) with a historic bug\)`)
	addOpRow         = regexp.MustCompile("^\\| `([^`]+)` \\| (always|with historic bugs|recommended) \\|")
	addOpPath        = regexp.MustCompile("^`([^` ]+)`")
	addOpQuoted      = regexp.MustCompile("^`([^`]+)`")
	addOpGoTest      = regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)
)

// numberWords are the counts the recipe may spell out.
var numberWords = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"}

func parseCount(s string) (int, error) {
	if i := slices.Index(numberWords, strings.ToLower(s)); i >= 0 {
		return i, nil
	}
	return strconv.Atoi(s)
}

// addOpStep is one file the worked example writes by hand.
type addOpStep struct {
	path    string // repository path
	listTag string // the heading line whose list the content ends, or "" for a new file
	content string // the fenced block, with its final newline
}

// addOpRecipe is what the recipe says, parsed.
type addOpRecipe struct {
	always, withBug int      // the counts of the opening sentence
	rows            []string // the table's paths counted "always"
	bugRows         []string // … and "with historic bugs"
	generated       []string // the paths of the generated-files table
	steps           []addOpStep
	make            []string // the make targets of the section's shell block, make test excluded
}

// parseAddOpRecipe reads the recipe: the counts, the two tables and the
// worked example's steps.
func parseAddOpRecipe(doc string) (*addOpRecipe, error) {
	r := &addOpRecipe{}
	m := addOpCount.FindStringSubmatch(doc)
	if m == nil {
		return nil, fmt.Errorf("no sentence matching %q", addOpCount)
	}
	var err error
	if r.always, err = parseCount(m[1]); err != nil {
		return nil, err
	}
	if r.withBug, err = parseCount(m[2]); err != nil {
		return nil, err
	}
	head, section, ok := strings.Cut(doc, "\n"+addOpSection+"\n")
	if !ok {
		return nil, fmt.Errorf("no %q section", addOpSection)
	}
	section = untilNextHeading(section)
	inGenerated := false
	for _, line := range strings.Split(head, "\n") {
		if strings.HasPrefix(line, "| generated file |") {
			inGenerated = true
		}
		if !strings.HasPrefix(line, "|") {
			inGenerated = false
			continue
		}
		if inGenerated {
			first := strings.SplitN(line, "|", 3)[1]
			for _, c := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(first, -1) {
				r.generated = append(r.generated, c[1])
			}
			continue
		}
		if row := addOpRow.FindStringSubmatch(line); row != nil {
			switch row[2] {
			case "always":
				r.rows = append(r.rows, row[1])
			case "with historic bugs":
				r.bugRows = append(r.bugRows, row[1])
			}
		}
	}
	r.steps, r.make, err = parseAddOpSteps(section)
	return r, err
}

// untilNextHeading is text up to its first "## " heading outside a fenced
// block (a spec file written in the section has headings of its own).
func untilNextHeading(text string) string {
	fenced := false
	off := 0
	for _, line := range strings.SplitAfter(text, "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			fenced = !fenced
		case !fenced && strings.HasPrefix(line, "## "):
			return text[:off]
		}
		off += len(line)
	}
	return text
}

// parseAddOpSteps reads the worked example: every fenced block is either a
// file, named by the paragraph before it ("`path`…:"), or the shell block
// of make lines.
func parseAddOpSteps(section string) ([]addOpStep, []string, error) {
	var steps []addOpStep
	var targets []string
	lines := strings.Split(section, "\n")
	var cur, last []string // the paragraph being read, the one before it
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if !strings.HasPrefix(line, "```") {
			switch {
			case strings.TrimSpace(line) != "":
				cur = append(cur, line)
			case len(cur) > 0:
				last, cur = cur, nil
			}
			continue
		}
		if len(cur) > 0 {
			last, cur = cur, nil
		}
		label := strings.Join(last, " ")
		last = nil
		lang := strings.TrimPrefix(line, "```")
		var body []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			body = append(body, lines[i])
		}
		if i == len(lines) {
			return nil, nil, fmt.Errorf("an unclosed ``` block after %q", label)
		}
		if lang == "sh" {
			for _, b := range body {
				f := strings.Fields(strings.SplitN(b, "#", 2)[0])
				if len(f) == 2 && f[0] == "make" && f[1] != "test" {
					targets = append(targets, f[1])
				}
			}
			continue
		}
		m := addOpPath.FindStringSubmatch(label)
		if m == nil {
			return nil, nil, fmt.Errorf("a ```%s block whose paragraph %q does not open with the file's path", lang, label)
		}
		step := addOpStep{path: m[1], content: strings.Join(body, "\n") + "\n"}
		if _, tag, ok := strings.Cut(label, addOpListTag); ok {
			tm := addOpQuoted.FindStringSubmatch(tag)
			if tm == nil {
				return nil, nil, fmt.Errorf("%s: %q names no heading line in backticks", step.path, label)
			}
			step.listTag = tm[1]
		}
		steps = append(steps, step)
	}
	return steps, targets, nil
}

// addOpPattern turns a table path ("ref/<base>.go") into the pattern of
// the op's repository paths: <op> is its name, <base> its name with . as _
// (the recipe's definition), <family> any spec file name.
func addOpPattern(p, op string) *regexp.Regexp {
	q := regexp.QuoteMeta(p)
	q = strings.ReplaceAll(q, "<op>", regexp.QuoteMeta(op))
	q = strings.ReplaceAll(q, "<base>", regexp.QuoteMeta(strings.ReplaceAll(op, ".", "_")))
	q = strings.ReplaceAll(q, "<family>", `[a-z0-9-]+`)
	return regexp.MustCompile("^" + q + "$")
}

// TestAddOpRecipeParses pins the parser on a small recipe, so the real
// test cannot pass by reading nothing.
func TestAddOpRecipeParses(t *testing.T) {
	doc := "Adding an op touches **three files by hand, four when the op has a historic bug** …\n\n" +
		"| file | by hand | what |\n|---|---|---|\n| `ref/<base>.go` | always | x |\n| `ref/doc.go` | always | x |\n" +
		"| `docs/spec/<family>.md` | always | x |\n| `equiv/mutants/<base>.go` | with historic bugs | x |\n| `fast/<base>_test.go` | recommended | x |\n\n" +
		"| generated file | written by | test |\n|---|---|---|\n| `fixtures/testdata/<op>.jsonl`, the table of `README.md` | make | T |\n\n" +
		addOpSection + "\n\nText.\n\n`docs/spec/e.md`:\n\n```markdown\n# E\n```\n\n" +
		"`ref/doc.go`, a new last item of the list under `// # The algorithms`:\n\n```go\n//   - E: F.\n```\n\n" +
		"`ref/e_f.go` — the twin,\nover two lines:\n\n```go\npackage ref\n```\n\n`docs/spec/f.md`:\n\n```markdown\n## 1. F\n```\n\nThen:\n\n```sh\nmake generate   # lists\nmake test\n```\n\n## Next\n\n```go\nignored\n```\n"
	r, err := parseAddOpRecipe(doc)
	if err != nil {
		t.Fatal(err)
	}
	if r.always != 3 || r.withBug != 4 {
		t.Errorf("counts %d, %d; want 3, 4", r.always, r.withBug)
	}
	if got := strings.Join(r.rows, " "); got != "ref/<base>.go ref/doc.go docs/spec/<family>.md" {
		t.Errorf("always rows %q", got)
	}
	if got := strings.Join(r.bugRows, " "); got != "equiv/mutants/<base>.go" {
		t.Errorf("historic-bug rows %q", got)
	}
	if got := strings.Join(r.generated, " "); got != "fixtures/testdata/<op>.jsonl README.md" {
		t.Errorf("generated %q", got)
	}
	var got []string
	for _, s := range r.steps {
		got = append(got, s.path+"|"+s.listTag+"|"+s.content)
	}
	want := []string{"docs/spec/e.md||# E\n", "ref/doc.go|// # The algorithms|//   - E: F.\n", "ref/e_f.go||package ref\n", "docs/spec/f.md||## 1. F\n"}
	if !slices.Equal(got, want) {
		t.Errorf("steps %q, want %q", got, want)
	}
	if !slices.Equal(r.make, []string{"generate"}) {
		t.Errorf("make targets %q, want [generate]", r.make)
	}
	for _, c := range []struct {
		pat, path string
		want      bool
	}{
		{"ref/<base>.go", "ref/e_f.go", true}, {"ref/<base>.go", "ref/e_f_test.go", false},
		{"ref/<base>_test.go", "ref/e_f_test.go", true}, {"ref/doc.go", "ref/doc.go", true},
		{"docs/spec/<family>.md", "docs/spec/e.md", true}, {"fixtures/testdata/<op>.jsonl", "fixtures/testdata/e.f.jsonl", true},
		{"fixtures/testdata/<op>.jsonl", "fixtures/testdata/exf.jsonl", false},
	} {
		if got := addOpPattern(c.pat, "e.f").MatchString(c.path); got != c.want {
			t.Errorf("addOpPattern(%q, e.f) matches %s = %v, want %v", c.pat, c.path, got, c.want)
		}
	}
}

// TestAddingAnOpTakesTheFilesTheDocCounts adds docs/adding-an-op.md's
// trivial op to a copy of the repository exactly as the recipe writes it,
// runs the make targets it names and, in place of `make test`, builds and
// vets the module and runs the tests that gate an op. It fails when the
// recipe's count, its table of hand-written files, its worked example and
// README's count disagree, when the example touches a file the tables do
// not name, or when the op does not pass its gates. It compiles the module
// in the copy (in a directory fixed per checkout, so that repeated runs hit
// the build cache):
// `make test-addop` runs it, -short and `make test-race` skip it.
func TestAddingAnOpTakesTheFilesTheDocCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the module in a copy of the repository; make test-addop runs it")
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, addOpDoc))
	if err != nil {
		t.Fatal(err)
	}
	r, err := parseAddOpRecipe(string(doc))
	if err != nil {
		t.Fatalf("%s: %v", addOpDoc, err)
	}
	checkAddOpCounts(t, root, r)
	opName := addOpName(t, r)
	checkAddOpFilesAreTheTables(t, r, opName)
	if t.Failed() {
		return
	}

	dst := addOpCopyDir(t, root)
	copyTrackedTree(t, root, dst)
	before := hashTree(t, dst)
	for _, s := range r.steps {
		applyAddOpStep(t, dst, s)
	}
	written := hashTree(t, dst)
	// The copy builds with the parent's flags, so the standard library and
	// the dependencies come from the build cache the rest of make test
	// filled (-trimpath, used before, rebuilt all of them: about 90 CPU
	// seconds of a cold CI run); its fixed directory lets a second run reuse
	// the first one's compiles of the module. The parent make's flags (a
	// jobserver) mean nothing to a make in the copy.
	env := []string{"GOWORK=off", "MAKEFLAGS=", "MAKELEVEL="}
	for _, target := range r.make {
		runInCopy(t, dst, env, "make", "--no-print-directory", target)
	}
	after := hashTree(t, dst)
	checkAddOpGenerated(t, r, opName, before, written, after)

	// `make test`, cut to what gates an op: the module builds and vets, the
	// generated lists and pages are current, the spec references resolve,
	// ref's API stays under its ceiling, and the op's own tests, its
	// differential suite, golden fixture and mutant pass.
	runInCopy(t, dst, env, "go", "build", "./...")
	runInCopy(t, dst, env, "go", "vet", "./ref/", "./fast/", "./catalog/", "./equiv/...")
	runInCopy(t, dst, env, "go", "test", "-count=1", "-skip", "TestAddingAnOp", "./internal/gen/...", "./internal/repolint/")
	var opTests []string
	for _, s := range r.steps {
		if strings.HasSuffix(s.path, "_test.go") {
			for _, m := range addOpGoTest.FindAllStringSubmatch(s.content, -1) {
				opTests = append(opTests, m[1])
			}
		}
	}
	if len(opTests) == 0 {
		t.Fatal("the worked example writes no Test function")
	}
	gates := append(opTests, "TestEveryEntryHasGeneratorFixtureAndBenchmark", "TestEntriesAreNamedOnceWithSpecAndExample",
		"TestGoldenSetRegeneratesByteForByte", "TestGoldenSetPassesOnEveryImplementation",
		"TestMutantsAreKilled", "TestRegressionFixturesKillTheirMutant", "TestEveryMutantNamesASuite", "TestBugZooPageIsCurrent")
	runInCopy(t, dst, env, "go", "test", "-count=1", "-run", "^("+strings.Join(gates, "|")+")$",
		"./ref/", "./catalog/", "./fixtures/", "./equiv/mutants/")
	// The differential suite of the new op alone: every op's takes minutes.
	runInCopy(t, dst, env, "go", "test", "-count=1", "-run", "^(TestAllImplementations|TestSuitesCoverTheCatalog)$/^"+regexp.QuoteMeta(opName)+"$", "./equiv/")
}

// addOpCopyDir is the directory the recipe is followed in: the same one
// for every run from root (the build cache keys the module's compiles by
// their directory), a different one for each checkout, emptied before the
// run and removed after it.
func addOpCopyDir(t *testing.T, root string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(root))
	dst := filepath.Join(os.TempDir(), fmt.Sprintf("kvtwin-addop-%x", sum[:6]))
	if err := os.RemoveAll(dst); err != nil {
		t.Fatalf("empty %s: %v", dst, err)
	}
	t.Cleanup(func() { os.RemoveAll(dst) })
	return dst
}

// addOpName is the op the worked example registers: its catalog entry's
// OpName.
func addOpName(t *testing.T, r *addOpRecipe) string {
	t.Helper()
	re := regexp.MustCompile(`OpName:\s*"([^"]+)"`)
	for _, s := range r.steps {
		if m := re.FindStringSubmatch(s.content); m != nil {
			return m[1]
		}
	}
	t.Fatal("no file of the worked example sets OpName")
	return ""
}

// checkAddOpCounts holds the recipe's sentence to its table and README's.
func checkAddOpCounts(t *testing.T, root string, r *addOpRecipe) {
	t.Helper()
	if r.always != len(r.rows) || r.withBug != len(r.rows)+len(r.bugRows) {
		t.Errorf("%s says %d files by hand, %d with a historic bug; its table counts %d always and %d with historic bugs",
			addOpDoc, r.always, r.withBug, len(r.rows), len(r.bugRows))
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := addOpReadmeCount.FindStringSubmatch(string(readme))
	if m == nil {
		t.Fatalf("README.md has no %q", addOpReadmeCount)
	}
	a, errA := parseCount(m[1])
	b, errB := parseCount(m[2])
	if errA != nil || errB != nil || a != r.always || b != r.withBug {
		t.Errorf("README.md says %q; %s says %d and %d", m[0], addOpDoc, r.always, r.withBug)
	}
}

// checkAddOpFilesAreTheTables requires the worked example to write exactly
// one file per counted row of the table (the example has a historic bug,
// so every row counts), each for the example's op.
func checkAddOpFilesAreTheTables(t *testing.T, r *addOpRecipe, op string) {
	t.Helper()
	rows := append(slices.Clone(r.rows), r.bugRows...)
	var paths []string
	for _, s := range r.steps {
		paths = append(paths, s.path)
	}
	if len(r.steps) != len(rows) {
		t.Errorf("the worked example writes %d files by hand (%s); the table counts %d (%s)",
			len(r.steps), strings.Join(paths, ", "), len(rows), strings.Join(rows, ", "))
	}
	for _, row := range rows {
		var matched []string
		for _, p := range paths {
			if addOpPattern(row, op).MatchString(p) {
				matched = append(matched, p)
			}
		}
		if len(matched) != 1 {
			t.Errorf("the table's %s is %d files of the worked example for %s (%s); want exactly one", row, len(matched), op, strings.Join(matched, ", "))
		}
	}
}

// checkAddOpGenerated requires the make targets to have written only files
// the generated-files table names, and none of the hand-written ones.
func checkAddOpGenerated(t *testing.T, r *addOpRecipe, opName string, before, written, after map[string][32]byte) {
	t.Helper()
	var pats []*regexp.Regexp
	for _, g := range r.generated {
		pats = append(pats, addOpPattern(g, opName))
	}
	hand := map[string]bool{}
	for _, s := range r.steps {
		hand[s.path] = true
		if written[s.path] != after[s.path] {
			t.Errorf("make %s rewrote %s, which the recipe writes by hand", strings.Join(r.make, " "), s.path)
		}
	}
	var generated []string
	for _, p := range slices.Sorted(maps.Keys(after)) {
		if hand[p] || before[p] == after[p] {
			continue
		}
		generated = append(generated, p)
		if !slices.ContainsFunc(pats, func(re *regexp.Regexp) bool { return re.MatchString(p) }) {
			t.Errorf("make %s wrote %s, which the generated-files table of %s does not name", strings.Join(r.make, " "), p, addOpDoc)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("make %s removed %s", strings.Join(r.make, " "), p)
		}
	}
	if len(generated) == 0 {
		t.Errorf("make %s wrote nothing", strings.Join(r.make, " "))
	}
	t.Logf("by hand: %d files; generated: %s", len(r.steps), strings.Join(generated, ", "))
}

// applyAddOpStep writes one file of the worked example: a new file, or a
// new last item of the list that follows a heading line.
func applyAddOpStep(t *testing.T, dst string, s addOpStep) {
	t.Helper()
	p := filepath.Join(dst, filepath.FromSlash(s.path))
	old, err := os.ReadFile(p)
	switch {
	case s.listTag == "" && err == nil:
		t.Fatalf("%s: the worked example writes it as a new file, but it exists", s.path)
	case s.listTag == "":
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s.content), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	case err != nil:
		t.Fatalf("%s: the worked example adds to it, but: %v", s.path, err)
	}
	out, err := appendListItem(string(old), s.listTag, s.content)
	if err != nil {
		t.Fatalf("%s: %v", s.path, err)
	}
	if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

// appendListItem inserts item after the last line of the first list
// ("//   - " items and their "//     " continuation lines) that follows
// the line heading.
func appendListItem(text, heading, item string) (string, error) {
	lines := strings.SplitAfter(text, "\n")
	h := slices.IndexFunc(lines, func(l string) bool { return strings.TrimRight(l, "\n") == heading })
	if h < 0 {
		return "", fmt.Errorf("no line %q", heading)
	}
	start := -1
	for i := h + 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "//   - ") {
			start = i
			break
		}
	}
	if start < 0 {
		return "", fmt.Errorf("no list after %q", heading)
	}
	end := start + 1
	for end < len(lines) && (strings.HasPrefix(lines[end], "//   - ") || strings.HasPrefix(lines[end], "//     ")) {
		end++
	}
	return strings.Join(lines[:end], "") + item + strings.Join(lines[end:], ""), nil
}

// TestAppendListItemEndsTheList pins where a list item goes.
func TestAppendListItemEndsTheList(t *testing.T) {
	text := "// Package p.\n//\n// # Heading\n//\n// Intro.\n//\n//   - A: one,\n//     two.\n//   - B.\n//\n// # Next\n//\n//   - C.\npackage p\n"
	got, err := appendListItem(text, "// # Heading", "//   - D.\n")
	want := "// Package p.\n//\n// # Heading\n//\n// Intro.\n//\n//   - A: one,\n//     two.\n//   - B.\n//   - D.\n//\n// # Next\n//\n//   - C.\npackage p\n"
	if err != nil || got != want {
		t.Errorf("appendListItem = %q, %v; want %q", got, err, want)
	}
	if _, err := appendListItem(text, "// # Missing", "x\n"); err == nil {
		t.Error("appendListItem under a missing heading: no error")
	}
}

// copyTrackedTree copies the files git tracks or would track (not those it
// ignores) from root into dst.
func copyTrackedTree(t *testing.T, root, dst string) {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files in %s: %v", root, err)
	}
	n := 0
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, filepath.FromSlash(rel))
		info, err := os.Lstat(src)
		if err != nil || !info.Mode().IsRegular() {
			continue // deleted in the work tree, or not a plain file
		}
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dst, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n < 100 {
		t.Fatalf("copied only %d files from %s; is it the repository?", n, root)
	}
}

// hashTree is every regular file under dir, by slash path, with its digest.
func hashTree(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	sums := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		sums[path.Clean(filepath.ToSlash(rel))] = sha256.Sum256(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sums
}

// addOpCommandTimeout bounds one command in the copy: a cold build of the
// module on a loaded 2-core machine takes a few minutes.
const addOpCommandTimeout = 10 * time.Minute

// runInCopy runs a command in dir with env added, failing the test with
// its output when it fails.
func runInCopy(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), addOpCommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s %s: %.1fs", name, strings.Join(args, " "), time.Since(start).Seconds())
	if err != nil {
		t.Fatalf("%s %s in the copy: %v\n%s", name, strings.Join(args, " "), err, tail(out.Bytes(), 60))
	}
}

// tail is the last n lines of b.
func tail(b []byte, n int) string {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
