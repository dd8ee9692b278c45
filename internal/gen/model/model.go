// Package model reads kvtwin's registrations (ops, specs, mutants) from the
// source with go/parser, for the generators. The lists that register them
// and the ops index are so generated instead of hand-kept
// (docs/adding-an-op.md). It imports nothing of kvtwin: the
// generator that uses it must build even when the lists it rewrites are stale.
//
// The rules, one per list:
//   - an op is an exported, parameterless, receiverless func of catalog/ whose
//     result is *Op[...]; its body holds the &Op{...} literal with a string
//     literal OpName;
//   - a spec is such a func of equiv/ whose result is *Spec[...]; its body
//     holds `Op: catalog.X()` naming the op's constructor;
//   - a mutant is such a func of equiv/mutants/ whose result is
//     equiv.Killable; its op is the one spec constructor (equiv.X) its body
//     reaches, directly or through the package's own helper funcs.
//
// Test files and generated files are not read.
package model

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Dirs of the registrations, relative to the module root.
const (
	CatalogDir = "catalog"
	EquivDir   = "equiv"
	MutantsDir = "equiv/mutants"
)

// Repo is every registration found in the source of one checkout.
type Repo struct {
	// Root is the module root the paths are relative to.
	Root string
	// Module is the module path of go.mod.
	Module string
	// Ops are the catalog constructors in op name order.
	Ops []*Op
	// Specs are the equiv constructors in their op's name order.
	Specs []*Spec
	// Mutants are the mutant constructors in MutantOrder.
	Mutants []*Mutant
}

// Twin is one implementation field of an op's literal.
type Twin struct {
	// Expr is the field's expression as written, e.g. "ref.TransferFilterCPRank".
	Expr string
	// File is the repository path of the file declaring the twin function
	// (for fast/cuda the one built with -tags cuda), or the catalog file for
	// a twin written inline.
	File string
}

// Op is one catalog constructor.
type Op struct {
	// Func is the constructor's name, e.g. "TransferFilterCPRank".
	Func string
	// File is the repository path of the file declaring it.
	File string
	// Name is the OpName literal, SpecRef the SpecRef literal ("" if absent).
	Name, SpecRef string
	// Ref, Fast and CUDA are the twin fields; nil when the literal has none.
	Ref, Fast, CUDA *Twin
	// Spec is the op's differential spec, nil when it has none.
	Spec *Spec
	// Mutants are the op's mutants in MutantOrder.
	Mutants []*Mutant
}

// Spec is one equiv constructor.
type Spec struct {
	// Func is the constructor's name, File the repository path declaring it.
	Func, File string
	// Op is the op the spec checks.
	Op *Op
}

// Mutant is one mutant constructor.
type Mutant struct {
	// Func is the constructor's name, File the repository path declaring it.
	Func, File string
	// Line is the declaration's line in File.
	Line int
	// Spec is the spec of the op the mutant replaces.
	Spec *Spec
}

// Home reports whether the mutant is declared in its op's home file: the
// file of equiv/mutants with the base name of the file declaring the spec.
func (m *Mutant) Home() bool { return path.Base(m.File) == path.Base(m.Spec.File) }

// MutantOrder orders mutants by op name; within one op, those of the home
// file first, then by file, then in declaration order.
func MutantOrder(a, b *Mutant) int {
	if c := strings.Compare(a.Spec.Op.Name, b.Spec.Op.Name); c != 0 {
		return c
	}
	if a.Home() != b.Home() {
		if a.Home() {
			return -1
		}
		return 1
	}
	if c := strings.Compare(a.File, b.File); c != 0 {
		return c
	}
	return a.Line - b.Line
}

// Load parses the registrations of the checkout at root.
func Load(root string) (*Repo, error) {
	mod, err := modulePath(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	l := &loader{root: root, module: mod, fset: token.NewFileSet(), pkgs: map[string][]*file{}}
	r := &Repo{Root: root, Module: mod}
	if r.Ops, err = l.ops(); err != nil {
		return nil, err
	}
	if r.Specs, err = l.specs(r.Ops); err != nil {
		return nil, err
	}
	if r.Mutants, err = l.mutants(r.Specs); err != nil {
		return nil, err
	}
	return r, nil
}

func modulePath(gomod string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	return "", fmt.Errorf("%s: no module line", gomod)
}

type file struct {
	path string // repository path, slash-separated
	ast  *ast.File
}

type loader struct {
	root, module string
	fset         *token.FileSet
	pkgs         map[string][]*file // by dir + "\x00" + tags
}

// pkg parses the non-test, non-generated files of dir built with tags.
func (l *loader) pkg(dir string, tags ...string) ([]*file, error) {
	key := dir + "\x00" + strings.Join(tags, ",")
	if fs, ok := l.pkgs[key]; ok {
		return fs, nil
	}
	ents, err := os.ReadDir(filepath.Join(l.root, filepath.FromSlash(dir)))
	if err != nil {
		return nil, err
	}
	var fs []*file
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		p := path.Join(dir, name)
		f, err := parser.ParseFile(l.fset, filepath.Join(l.root, filepath.FromSlash(p)), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		if ast.IsGenerated(f) || !builds(f, tags) {
			continue
		}
		fs = append(fs, &file{path: p, ast: f})
	}
	l.pkgs[key] = fs
	return fs, nil
}

// builds evaluates f's //go:build line with only tags (and the usual
// platform) set.
func builds(f *ast.File, tags []string) bool {
	for _, cg := range f.Comments {
		if cg.Pos() >= f.Package {
			break
		}
		for _, c := range cg.List {
			if !constraint.IsGoBuild(c.Text) {
				continue
			}
			x, err := constraint.Parse(c.Text)
			if err != nil {
				return false
			}
			return x.Eval(func(tag string) bool {
				return slices.Contains(tags, tag) || tag == "linux" || tag == "unix" || tag == "amd64" || strings.HasPrefix(tag, "go1.")
			})
		}
	}
	return true
}

// constructors returns dir's exported, parameterless, receiverless funcs
// whose single result is accepted by result, in file then declaration order.
func (l *loader) constructors(dir string, result func(ast.Expr) bool) ([]*file, []*ast.FuncDecl, error) {
	fs, err := l.pkg(dir)
	if err != nil {
		return nil, nil, err
	}
	var files []*file
	var decls []*ast.FuncDecl
	for _, f := range fs {
		for _, d := range f.ast.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || !fd.Name.IsExported() || fd.Type.TypeParams != nil ||
				fd.Type.Params.NumFields() != 0 || fd.Type.Results.NumFields() != 1 || !result(fd.Type.Results.List[0].Type) {
				continue
			}
			files, decls = append(files, f), append(decls, fd)
		}
	}
	return files, decls, nil
}

// pointerToGeneric reports whether t is *name[...].
func pointerToGeneric(name string) func(ast.Expr) bool {
	return func(t ast.Expr) bool {
		star, ok := t.(*ast.StarExpr)
		if !ok {
			return false
		}
		var x ast.Expr
		switch ix := star.X.(type) {
		case *ast.IndexExpr:
			x = ix.X
		case *ast.IndexListExpr:
			x = ix.X
		default:
			return false
		}
		id, ok := x.(*ast.Ident)
		return ok && id.Name == name
	}
}

// importName returns the name f refers to the package at importPath by, or "".
func importName(f *ast.File, importPath string) string {
	for _, s := range f.Imports {
		p, _ := strconv.Unquote(s.Path.Value)
		if p != importPath {
			continue
		}
		if s.Name != nil {
			return s.Name.Name
		}
		return path.Base(p)
	}
	return ""
}

func (l *loader) pos(n ast.Node) string { return l.fset.Position(n.Pos()).String() }

func (l *loader) ops() ([]*Op, error) {
	files, decls, err := l.constructors(CatalogDir, pointerToGeneric("Op"))
	if err != nil {
		return nil, err
	}
	var ops []*Op
	seen := map[string]*Op{}
	for i, fd := range decls {
		op := &Op{Func: fd.Name.Name, File: files[i].path}
		lit := opLiteral(fd)
		if lit == nil {
			return nil, fmt.Errorf("%s: %s: no &Op{OpName: \"...\"} literal", l.pos(fd), fd.Name.Name)
		}
		for _, e := range lit.Elts {
			kv, ok := e.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			key, _ := kv.Key.(*ast.Ident)
			if key == nil {
				continue
			}
			switch key.Name {
			case "OpName", "SpecRef":
				bl, ok := kv.Value.(*ast.BasicLit)
				if !ok || bl.Kind != token.STRING {
					return nil, fmt.Errorf("%s: %s: %s must be a string literal", l.pos(kv), fd.Name.Name, key.Name)
				}
				s, err := strconv.Unquote(bl.Value)
				if err != nil {
					return nil, err
				}
				if key.Name == "OpName" {
					op.Name = s
				} else {
					op.SpecRef = s
				}
			case "Ref", "Fast", "CUDA":
				tw, err := l.twin(files[i], kv.Value, key.Name == "CUDA")
				if err != nil {
					return nil, fmt.Errorf("%s: %s.%s: %w", l.pos(kv), fd.Name.Name, key.Name, err)
				}
				switch key.Name {
				case "Ref":
					op.Ref = tw
				case "Fast":
					op.Fast = tw
				default:
					op.CUDA = tw
				}
			}
		}
		if prev, ok := seen[op.Name]; ok {
			return nil, fmt.Errorf("op %q is registered by both %s and %s", op.Name, prev.Func, op.Func)
		}
		seen[op.Name] = op
		ops = append(ops, op)
	}
	slices.SortFunc(ops, func(a, b *Op) int { return strings.Compare(a.Name, b.Name) })
	return ops, nil
}

// opLiteral finds the composite literal in fd's body that sets OpName.
func opLiteral(fd *ast.FuncDecl) *ast.CompositeLit {
	var found *ast.CompositeLit
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		lit, ok := n.(*ast.CompositeLit)
		if !ok || found != nil {
			return found == nil
		}
		for _, e := range lit.Elts {
			if kv, ok := e.(*ast.KeyValueExpr); ok {
				if id, ok := kv.Key.(*ast.Ident); ok && id.Name == "OpName" {
					found = lit
					return false
				}
			}
		}
		return true
	})
	return found
}

// twin resolves a twin field: pkg.Func to the file of pkg declaring Func
// (built with -tags cuda for the CUDA field), anything else to the catalog
// file itself.
func (l *loader) twin(f *file, x ast.Expr, cuda bool) (*Twin, error) {
	tw := &Twin{Expr: exprString(x), File: f.path}
	sel, ok := x.(*ast.SelectorExpr)
	if !ok {
		return tw, nil
	}
	pkgID, ok := sel.X.(*ast.Ident)
	if !ok {
		return tw, nil
	}
	var dir string
	for _, s := range f.ast.Imports {
		p, _ := strconv.Unquote(s.Path.Value)
		if importName(f.ast, p) == pkgID.Name {
			rel, ok := strings.CutPrefix(p, l.module+"/")
			if !ok {
				return nil, fmt.Errorf("%s is not a package of %s", p, l.module)
			}
			dir = rel
		}
	}
	if dir == "" {
		return tw, nil
	}
	var tags []string
	if cuda {
		tags = []string{"cuda"}
	}
	fs, err := l.pkg(dir, tags...)
	if err != nil {
		return nil, err
	}
	for _, pf := range fs {
		if declares(pf.ast, sel.Sel.Name) {
			tw.File = pf.path
			return tw, nil
		}
	}
	return nil, fmt.Errorf("no declaration of %s in %s", tw.Expr, dir)
}

// declares reports whether f declares the package-level func or var name.
func declares(f *ast.File, name string) bool {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil && d.Name.Name == name {
				return true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				if vs, ok := s.(*ast.ValueSpec); ok {
					for _, n := range vs.Names {
						if n.Name == name {
							return true
						}
					}
				}
			}
		}
	}
	return false
}

func exprString(x ast.Expr) string {
	switch x := x.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return exprString(x.X) + "." + x.Sel.Name
	}
	return "(inline)"
}

func (l *loader) specs(ops []*Op) ([]*Spec, error) {
	files, decls, err := l.constructors(EquivDir, pointerToGeneric("Spec"))
	if err != nil {
		return nil, err
	}
	byFunc := map[string]*Op{}
	for _, op := range ops {
		byFunc[op.Func] = op
	}
	var specs []*Spec
	for i, fd := range decls {
		s := &Spec{Func: fd.Name.Name, File: files[i].path}
		catalogName := importName(files[i].ast, l.module+"/"+CatalogDir)
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			kv, ok := n.(*ast.KeyValueExpr)
			if !ok || s.Op != nil {
				return s.Op == nil
			}
			if key, ok := kv.Key.(*ast.Ident); !ok || key.Name != "Op" {
				return true
			}
			call, ok := kv.Value.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == catalogName {
					s.Op = byFunc[sel.Sel.Name]
				}
			}
			return true
		})
		if s.Op == nil {
			return nil, fmt.Errorf("%s: spec %s: no `Op: catalog.X()` naming an op constructor", l.pos(fd), s.Func)
		}
		if s.Op.Spec != nil {
			return nil, fmt.Errorf("op %s has two specs: %s and %s", s.Op.Name, s.Op.Spec.Func, s.Func)
		}
		s.Op.Spec = s
		specs = append(specs, s)
	}
	slices.SortFunc(specs, func(a, b *Spec) int { return strings.Compare(a.Op.Name, b.Op.Name) })
	return specs, nil
}

func (l *loader) mutants(specs []*Spec) ([]*Mutant, error) {
	isKillable := func(t ast.Expr) bool {
		sel, ok := t.(*ast.SelectorExpr)
		return ok && sel.Sel.Name == "Killable"
	}
	files, decls, err := l.constructors(MutantsDir, isKillable)
	if err != nil {
		return nil, err
	}
	fs, err := l.pkg(MutantsDir)
	if err != nil {
		return nil, err
	}
	// The package's funcs, with the name each one's file gives package equiv.
	type local struct {
		decl  *ast.FuncDecl
		equiv string
	}
	locals := map[string]local{}
	for _, f := range fs {
		for _, d := range f.ast.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
				locals[fd.Name.Name] = local{fd, importName(f.ast, l.module+"/"+EquivDir)}
			}
		}
	}
	byFunc := map[string]*Spec{}
	for _, s := range specs {
		byFunc[s.Func] = s
	}
	var ms []*Mutant
	for i, fd := range decls {
		m := &Mutant{Func: fd.Name.Name, File: files[i].path, Line: l.fset.Position(fd.Pos()).Line}
		found := map[string]bool{}
		visited := map[string]bool{}
		var walk func(name string)
		walk = func(name string) {
			lc, ok := locals[name]
			if !ok || visited[name] {
				return
			}
			visited[name] = true
			var visit func(n ast.Node) bool
			visit = func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.SelectorExpr:
					if id, ok := n.X.(*ast.Ident); ok && id.Name == lc.equiv && byFunc[n.Sel.Name] != nil {
						found[n.Sel.Name] = true
					}
					ast.Inspect(n.X, visit)
					return false
				case *ast.Ident:
					walk(n.Name)
				}
				return true
			}
			ast.Inspect(lc.decl.Body, visit)
		}
		walk(fd.Name.Name)
		names := slices.Sorted(maps.Keys(found))
		if len(names) != 1 {
			return nil, fmt.Errorf("%s: mutant %s reaches %d spec constructors %v, want exactly one (equiv.X())", l.pos(fd), m.Func, len(names), names)
		}
		m.Spec = byFunc[names[0]]
		ms = append(ms, m)
	}
	slices.SortFunc(ms, MutantOrder)
	for _, m := range ms {
		m.Spec.Op.Mutants = append(m.Spec.Op.Mutants, m)
	}
	return ms, nil
}
