// Command coverreport reports how much of the twins the differential suite
// alone reaches, with a reason for every gap (`make coverage`). It reads a Go
// coverage profile of `go test -coverpkg=… ./equiv/...` over ref/ and
// fast/.
// It prints the total, every file below 100 %, and every function with
// unreached statements, each with the reason docs/coverage.md gives for it
// or NO REASON. It exits 1 when the total is under -target and some
// unreached function has no reason: a line the generators and tables do
// not reach needs a generator branch, a boundary case, or a stated reason.
package main

import (
	"bufio"
	"cmp"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	profile := flag.String("profile", "cover.out", "coverage profile")
	reasons := flag.String("reasons", "docs/coverage.md", "markdown file whose table rows `| `path:Func` | reason |` explain unreached functions")
	module := flag.String("module", "github.com/kvtwin/kvtwin/", "module path prefix to strip")
	target := flag.Float64("target", 97, "coverage (%) under which every unreached function needs a reason")
	flag.Parse()
	if err := run(*profile, *reasons, *module, *target); err != nil {
		fmt.Fprintln(os.Stderr, "coverreport:", err)
		os.Exit(2)
	}
}

// block is one profile line: a statement range and whether it ran.
type block struct {
	file        string
	line0, col0 int
	line1, col1 int
	stmts       int
	covered     bool
}

func run(profilePath, reasonsPath, module string, target float64) error {
	blocks, err := readProfile(profilePath, module)
	if err != nil {
		return err
	}
	reasons, err := readReasons(reasonsPath)
	if err != nil {
		return err
	}
	src := &sources{decls: map[string][]decl{}}
	funcs := map[string]*funcCov{}
	files := map[string][2]int{}
	total, hit := 0, 0
	for _, b := range blocks {
		fn, err := src.funcOf(b)
		if err != nil {
			return err
		}
		key := b.file + ":" + fn
		f := funcs[key]
		if f == nil {
			f = &funcCov{key: key}
			funcs[key] = f
		}
		fc := files[b.file]
		fc[1] += b.stmts
		total += b.stmts
		if b.covered {
			fc[0] += b.stmts
			hit += b.stmts
		} else {
			f.missed += b.stmts
		}
		files[b.file] = fc
	}
	pct := 100 * float64(hit) / float64(max(total, 1))
	fmt.Printf("differential suite coverage of spec/, ref/, fast/: %.1f%% (%d of %d statements)\n\n", pct, hit, total)
	fmt.Println("files under 100%:")
	for _, f := range slices.Sorted(maps.Keys(files)) {
		if c := files[f]; c[0] < c[1] {
			fmt.Printf("  %5.1f%%  %4d unreached  %s\n", 100*float64(c[0])/float64(c[1]), c[1]-c[0], f)
		}
	}
	var missing []*funcCov
	reasoned, unreasoned := 0, 0
	for _, f := range funcs {
		if f.missed > 0 {
			missing = append(missing, f)
		}
	}
	slices.SortFunc(missing, func(a, b *funcCov) int { return cmp.Compare(a.key, b.key) })
	fmt.Println("\nfunctions with unreached statements:")
	for _, f := range missing {
		r, ok := reasons[f.key]
		if ok {
			reasoned += f.missed
		} else {
			unreasoned += f.missed
			r = "NO REASON"
		}
		fmt.Printf("  %4d  %s: %s\n", f.missed, f.key, r)
	}
	fmt.Printf("\nunreached: %d statements with a reason, %d without\n", reasoned, unreasoned)
	if pct < target && unreasoned > 0 {
		return fmt.Errorf("coverage %.1f%% is under %.0f%% and %d unreached statements have no reason in %s", pct, target, unreasoned, reasonsPath)
	}
	return nil
}

type funcCov struct {
	key    string
	missed int
}

var profileLine = regexp.MustCompile(`^(.+):(\d+)\.(\d+),(\d+)\.(\d+) (\d+) (\d+)$`)

func readProfile(path, module string) ([]block, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	seen := map[string]int{}
	var blocks []block
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := profileLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
		b := block{file: strings.TrimPrefix(m[1], module), line0: n(2), col0: n(3), line1: n(4), col1: n(5), stmts: n(6), covered: n(7) > 0}
		// A -coverpkg profile of several test binaries lists a block once
		// per binary: it ran if it ran in any.
		id := sc.Text()[:strings.LastIndexByte(sc.Text(), ' ')]
		if i, ok := seen[id]; ok {
			blocks[i].covered = blocks[i].covered || b.covered
			continue
		}
		seen[id] = len(blocks)
		blocks = append(blocks, b)
	}
	return blocks, sc.Err()
}

var reasonRow = regexp.MustCompile("^\\| `([^`]+:[^`]+)` \\| (.+?) \\|\\s*$")

func readReasons(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if m := reasonRow.FindStringSubmatch(line); m != nil {
			out[m[1]] = m[2]
		}
	}
	return out, nil
}

// sources parses each profiled file once.
type sources struct{ decls map[string][]decl }

// funcOf names the function (Recv.Name for methods) enclosing b.
func (s *sources) funcOf(b block) (string, error) {
	decls, err := s.declsOf(b.file)
	if err != nil {
		return "", err
	}
	for _, d := range decls {
		if d.line0 <= b.line0 && b.line1 <= d.line1 {
			return d.name, nil
		}
	}
	return "(top level)", nil
}

type decl struct {
	name         string
	line0, line1 int
}

func (s *sources) declsOf(file string) ([]decl, error) {
	if d, ok := s.decls[file]; ok {
		return d, nil
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.FromSlash(file), nil, 0)
	if err != nil {
		return nil, err
	}
	var ds []decl
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		name := fd.Name.Name
		if fd.Recv != nil && len(fd.Recv.List) > 0 {
			t := fd.Recv.List[0].Type
			if s, ok := t.(*ast.StarExpr); ok {
				t = s.X
			}
			if ix, ok := t.(*ast.IndexExpr); ok {
				t = ix.X
			}
			if id, ok := t.(*ast.Ident); ok {
				name = id.Name + "." + name
			}
		}
		ds = append(ds, decl{name: name, line0: fset.Position(fd.Pos()).Line, line1: fset.Position(fd.End()).Line})
	}
	s.decls[file] = ds
	return ds, nil
}
