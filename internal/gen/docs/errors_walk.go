package main

import (
	"fmt"
	"go/ast"
	"go/types"
	"slices"
	"strings"

	gopackages "golang.org/x/tools/go/packages"
)

// This file finds, for each op, every error the reference can return: it
// loads spec, ref and catalog with their types and walks, from the op's
// ref function, every function it can reach, recording each spec.Reject
// call on the way as templates (errors_render.go) for docs/errors.md.
//
// What the walk reaches is a superset of what runs: a static call reaches
// its callee; a function or method named anywhere (a value passed on, a
// table entry) is reached from where it is named; a call through an
// interface reaches the method of that name on every loaded type that has
// all the interface's method names. A Reject reached by no such path is not
// an error of the op, so "every" holds as long as ref builds its errors
// with spec.Reject (TestErrorsPageHoldsEveryGoldenError checks that against
// the golden fixtures).

const (
	module = "github.com/kvtwin/kvtwin"
	// rejectFunc builds every input error (spec/errors.go).
	rejectFunc = module + "/spec.Reject"
	// newSentinel declares a class of rejection.
	newSentinel = module + "/spec.NewSentinel"
	// inputError is the type a rewrite of a field copies.
	inputError = module + "/spec.InputError"
)

// sentinel is a class of rejection: spec.NewSentinel's code and text.
type sentinel struct{ code, text string }

// errSite is one error an op can return: the step kind it belongs to ("" if
// none), its sentinel and its field, value and bound as templates.
type errSite struct {
	step, code, text, field, value, bound string
}

// node is a function (or a package-level var's initializer) with source.
type node struct {
	pkg *gopackages.Package
	// body is the function's body or the var's initializer.
	body ast.Node
	// params are the function's parameters in order (nil for a var).
	params []*types.Var
	// variadic reports whether the last parameter is variadic.
	variadic bool
	// isVar marks a package-level var's initializer.
	isVar bool
}

// program is the loaded source, indexed for the walk.
type program struct {
	nodes     map[string]*node
	sentinels map[string]sentinel
	// methods maps a method name to the keys of the concrete methods of
	// that name; methodSets a receiver type to its method names.
	methods    map[string][]string
	methodSets map[string]map[string]bool
	recvOf     map[string]string
	// reaches says whether a node can reach a spec.Reject call.
	reaches map[string]bool
	// fieldCache holds the sentinels each struct field is given.
	fieldCache map[*types.Var][]sentinel
}

// loadProgram loads, with their types, the packages of the module at root
// whose source the walk reads: ref's errors are built in ref and spec, the
// input decoding's in catalog.
func loadProgram(root string) (*program, error) {
	cfg := &gopackages.Config{Dir: root, Mode: gopackages.NeedName | gopackages.NeedFiles | gopackages.NeedSyntax |
		gopackages.NeedTypes | gopackages.NeedTypesInfo}
	pkgs, err := gopackages.Load(cfg, "./spec", "./ref", "./catalog")
	if err != nil {
		return nil, fmt.Errorf("load spec, ref and catalog: %w", err)
	}
	p := &program{nodes: map[string]*node{}, sentinels: map[string]sentinel{}, methods: map[string][]string{},
		methodSets: map[string]map[string]bool{}, recvOf: map[string]string{}, fieldCache: map[*types.Var][]sentinel{}}
	for _, pkg := range pkgs {
		if len(pkg.Errors) > 0 {
			return nil, fmt.Errorf("load %s: %v", pkg.PkgPath, pkg.Errors[0])
		}
		for _, f := range pkg.Syntax {
			p.index(pkg, f)
		}
	}
	p.reaches = p.reachability()
	return p, nil
}

// funcKey names a function or method the same in every package's view.
func funcKey(f *types.Func) string { return "func " + f.Origin().FullName() }

// varKey names a package-level var.
func varKey(v *types.Var) string { return "var " + v.Pkg().Path() + "." + v.Name() }

// index records the functions, methods, package vars and sentinels of f.
func (p *program) index(pkg *gopackages.Package, f *ast.File) {
	info := pkg.TypesInfo
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			fn, ok := info.Defs[d.Name].(*types.Func)
			if !ok || d.Body == nil {
				continue
			}
			n := &node{pkg: pkg, body: d.Body}
			sig := fn.Type().(*types.Signature)
			for i := range sig.Params().Len() {
				n.params = append(n.params, sig.Params().At(i))
			}
			n.variadic = sig.Variadic()
			key := funcKey(fn)
			p.nodes[key] = n
			if recv := sig.Recv(); recv != nil {
				t := recvTypeKey(recv.Type())
				p.methods[fn.Name()] = append(p.methods[fn.Name()], key)
				if p.methodSets[t] == nil {
					p.methodSets[t] = map[string]bool{}
				}
				p.methodSets[t][fn.Name()] = true
				p.recvOf[key] = t
			}
		case *ast.GenDecl:
			p.indexVars(pkg, d)
		}
	}
}

// indexVars records the package-level vars of d: sentinels by their
// NewSentinel call, every other initializer as a node the walk can enter.
func (p *program) indexVars(pkg *gopackages.Package, d *ast.GenDecl) {
	for _, spec := range d.Specs {
		vs, ok := spec.(*ast.ValueSpec)
		if !ok || len(vs.Values) != len(vs.Names) {
			continue
		}
		for i, name := range vs.Names {
			v, ok := pkg.TypesInfo.Defs[name].(*types.Var)
			if !ok {
				continue
			}
			if s, ok := sentinelDecl(pkg.TypesInfo, vs.Values[i]); ok {
				p.sentinels[varKey(v)] = s
				continue
			}
			p.nodes[varKey(v)] = &node{pkg: pkg, body: vs.Values[i], isVar: true}
		}
	}
}

// sentinelDecl reads spec.NewSentinel("code", "text").
func sentinelDecl(info *types.Info, x ast.Expr) (sentinel, bool) {
	c, ok := ast.Unparen(x).(*ast.CallExpr)
	if !ok || len(c.Args) != 2 || calleeKey(info, c) != "func "+newSentinel {
		return sentinel{}, false
	}
	code, text := constString(info, c.Args[0]), constString(info, c.Args[1])
	return sentinel{code, text}, code != ""
}

// recvTypeKey names a receiver's named type, pointer or not.
func recvTypeKey(t types.Type) string {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok {
		return n.Origin().Obj().Pkg().Path() + "." + n.Origin().Obj().Name()
	}
	return t.String()
}

// calleeKey is the key of the function c calls statically, "" for a call
// of a func value, a conversion or a builtin.
func calleeKey(info *types.Info, c *ast.CallExpr) string {
	if f := calleeFunc(info, c); f != nil {
		return funcKey(f)
	}
	return ""
}

// calleeFunc is the *types.Func c calls by name (a function, a method or
// an interface method), nil for anything else.
func calleeFunc(info *types.Info, c *ast.CallExpr) *types.Func {
	var id *ast.Ident
	switch f := ast.Unparen(c.Fun).(type) {
	case *ast.Ident:
		id = f
	case *ast.SelectorExpr:
		id = f.Sel
	case *ast.IndexExpr: // an explicit instantiation f[T]
		return calleeFunc(info, &ast.CallExpr{Fun: f.X})
	case *ast.IndexListExpr:
		return calleeFunc(info, &ast.CallExpr{Fun: f.X})
	default:
		return nil
	}
	f, _ := info.Uses[id].(*types.Func)
	return f
}

// interfaceCall reports the interface c calls a method of, if it does.
func interfaceCall(info *types.Info, c *ast.CallExpr) (*types.Interface, string, bool) {
	s, ok := ast.Unparen(c.Fun).(*ast.SelectorExpr)
	if !ok {
		return nil, "", false
	}
	return interfaceMethod(info, s)
}

// interfaceMethod reports the interface whose method s selects (a call's
// callee, or a method value `f := tree.DecLockRef`), if it does.
func interfaceMethod(info *types.Info, s *ast.SelectorExpr) (*types.Interface, string, bool) {
	sel := info.Selections[s]
	if sel == nil || sel.Kind() != types.MethodVal || !types.IsInterface(sel.Recv()) {
		return nil, "", false
	}
	it, ok := sel.Recv().Underlying().(*types.Interface)
	return it, s.Sel.Name, ok
}

// implementers are the keys of the concrete methods called name on every
// loaded type that has all of its method names, in key order.
func (p *program) implementers(it *types.Interface, name string) []string {
	var out []string
	for _, key := range p.methods[name] {
		set := p.methodSets[p.recvOf[key]]
		all := true
		for i := range it.NumMethods() {
			all = all && set[it.Method(i).Name()]
		}
		if all {
			out = append(out, key)
		}
	}
	slices.Sort(out)
	return out
}

// edges are the nodes n can enter, whatever the context: static callees,
// functions and vars it names, and interface calls' implementers.
func (p *program) edges(n *node) []string {
	var out []string
	info := n.pkg.TypesInfo
	ast.Inspect(n.body, func(x ast.Node) bool {
		switch x := x.(type) {
		case *ast.SelectorExpr:
			if it, name, ok := interfaceMethod(info, x); ok {
				out = append(out, p.implementers(it, name)...)
			}
		case *ast.Ident:
			out = append(out, p.named(info, x)...)
		}
		return true
	})
	return out
}

// named is the node an identifier names, if it names a function, a method
// or a package-level var with source.
func (p *program) named(info *types.Info, id *ast.Ident) []string {
	var key string
	switch obj := info.Uses[id].(type) {
	case *types.Func:
		key = funcKey(obj)
	case *types.Var:
		if obj.Pkg() == nil || obj.Parent() != obj.Pkg().Scope() {
			return nil
		}
		key = varKey(obj)
	default:
		return nil
	}
	if p.nodes[key] == nil {
		return nil
	}
	return []string{key}
}

// reachability computes, for every node, whether a spec.Reject call or a
// field rewrite is reachable from it, so the walk enters only nodes that
// matter.
func (p *program) reachability() map[string]bool {
	succ := map[string][]string{}
	reach := map[string]bool{}
	for key, n := range p.nodes {
		succ[key] = p.edges(n)
		reach[key] = slices.Contains(succ[key], "func "+rejectFunc) || rewritesAField(n)
	}
	for changed := true; changed; {
		changed = false
		for key, next := range succ {
			if reach[key] {
				continue
			}
			for _, s := range next {
				if reach[s] {
					reach[key], changed = true, true
					break
				}
			}
		}
	}
	return reach
}

// binding is what a parameter stands for in one call: its argument as a
// template and, for a *spec.Sentinel, the sentinels it can be.
type binding struct {
	tmpl      string
	sentinels []sentinel
}

// env binds the parameters of the function being walked.
type env map[*types.Var]binding

// key is env in a canonical form, for the walk's memo.
func (e env) key() string {
	var parts []string
	for v, b := range e {
		codes := make([]string, len(b.sentinels))
		for i, s := range b.sentinels {
			codes[i] = s.code
		}
		parts = append(parts, fmt.Sprintf("%d=%s/%s", v.Pos(), b.tmpl, strings.Join(codes, ",")))
	}
	slices.Sort(parts)
	return strings.Join(parts, ";")
}

// Bounds of one op's walk: contexts a node is entered in before the walk
// enters it unbound (keeping every error, with less resolved templates),
// and the depth of inlined single-return helpers when rendering.
const (
	maxContexts    = 64
	maxInlineDepth = 8
)

// walker walks one op.
type walker struct {
	prog     *program
	seen     map[string]bool
	contexts map[string]int
	onStack  map[string]bool
	sites    []errSite
	// siteSeen holds the shapes of the sites recorded.
	siteSeen map[errSite]bool
	// rewrites are the templates of the fields that rewrite another
	// error's field ({field}), in the order met.
	rewrites []string
}

func newWalker(p *program) *walker {
	return &walker{prog: p, seen: map[string]bool{}, contexts: map[string]int{}, onStack: map[string]bool{}, siteSeen: map[errSite]bool{}}
}

// enter walks node key in the step and bindings given, once per context.
func (w *walker) enter(key, step string, e env) {
	n := w.prog.nodes[key]
	if n == nil || !w.prog.reaches[key] {
		return
	}
	if w.onStack[key] || w.contexts[key] >= maxContexts {
		e = nil // recursion, or too many contexts: enter it unbound
	}
	memo := key + "\x00" + step + "\x00" + e.key()
	if w.seen[memo] {
		return
	}
	w.seen[memo] = true
	w.contexts[key]++
	w.onStack[key] = true
	defer delete(w.onStack, key)
	w.walk(n, n.body, step, e)
}

// walk visits the syntax x of node n.
func (w *walker) walk(n *node, x ast.Node, step string, e env) {
	info := n.pkg.TypesInfo
	ast.Inspect(x, func(y ast.Node) bool {
		switch y := y.(type) {
		case *ast.SwitchStmt:
			if label, ok := stepLabels(info, y); ok {
				w.stepSwitch(n, y, label, step, e)
				return false
			}
		case *ast.CallExpr:
			w.call(n, y, step, e)
			return false
		case *ast.AssignStmt:
			w.fieldRewrite(n, y, e)
		case *ast.SelectorExpr:
			if it, name, ok := interfaceMethod(info, y); ok { // a method value
				for _, key := range w.prog.implementers(it, name) {
					w.enter(key, step, nil)
				}
			}
		case *ast.Ident:
			for _, key := range w.prog.named(info, y) {
				w.enter(key, step, nil)
			}
		}
		return true
	})
}

// stepSwitch walks a switch over a script step's kind, each case in its
// step (the outermost such switch names the step).
func (w *walker) stepSwitch(n *node, s *ast.SwitchStmt, labels map[*ast.CaseClause]string, step string, e env) {
	if s.Init != nil {
		w.walk(n, s.Init, step, e)
	}
	w.walk(n, s.Tag, step, e)
	for _, stmt := range s.Body.List {
		cc := stmt.(*ast.CaseClause)
		inner := step
		if inner == "" {
			inner = labels[cc]
		}
		for _, b := range cc.Body {
			w.walk(n, b, inner, e)
		}
	}
}

// stepLabels recognizes `switch s.Op {…}` or `switch m.Kind {…}` whose
// cases are string constants: a script's dispatch on its step kind. Each
// case clause is labelled with its constants.
func stepLabels(info *types.Info, s *ast.SwitchStmt) (map[*ast.CaseClause]string, bool) {
	tag, ok := ast.Unparen(s.Tag).(*ast.SelectorExpr)
	if !ok || (tag.Sel.Name != "Op" && tag.Sel.Name != "Kind") {
		return nil, false
	}
	labels := map[*ast.CaseClause]string{}
	for _, stmt := range s.Body.List {
		cc := stmt.(*ast.CaseClause)
		var names []string
		for _, x := range cc.List {
			v := constString(info, x)
			if v == "" {
				return nil, false
			}
			names = append(names, v)
		}
		labels[cc] = strings.Join(names, ", ")
	}
	return labels, true
}

// call walks a call: a Reject is recorded, a static callee entered with
// its parameters bound to the arguments, an interface call's implementers
// entered unbound; the arguments and the receiver are walked in any case.
func (w *walker) call(n *node, c *ast.CallExpr, step string, e env) {
	info := n.pkg.TypesInfo
	for _, a := range c.Args {
		w.walk(n, a, step, e)
	}
	if s, ok := ast.Unparen(c.Fun).(*ast.SelectorExpr); ok {
		if _, isPkg := info.Uses[exprIdent(s.X)].(*types.PkgName); !isPkg {
			w.walk(n, s.X, step, e)
		}
	} else if _, ok := ast.Unparen(c.Fun).(*ast.Ident); !ok {
		w.walk(n, c.Fun, step, e) // a func literal called in place, an f[T]
	}
	if it, name, ok := interfaceCall(info, c); ok {
		for _, key := range w.prog.implementers(it, name) {
			w.enter(key, step, nil)
		}
		return
	}
	key := calleeKey(info, c)
	if key == "func "+rejectFunc {
		w.reject(n, c, step, e)
		return
	}
	if callee := w.prog.nodes[key]; callee != nil {
		w.enter(key, step, w.bind(n, callee, c, e))
	}
}

// exprIdent is x as an identifier, nil if it is not one.
func exprIdent(x ast.Expr) *ast.Ident {
	id, _ := ast.Unparen(x).(*ast.Ident)
	return id
}

// bind binds callee's parameters to c's arguments, rendered in n under e;
// nil when they do not pair up (a variadic or multi-value call).
func (w *walker) bind(n *node, callee *node, c *ast.CallExpr, e env) env {
	if callee.variadic || len(c.Args) != len(callee.params) || c.Ellipsis.IsValid() {
		return nil
	}
	out := env{}
	for i, a := range c.Args {
		out[callee.params[i]] = binding{tmpl: w.render(n, a, e, 0), sentinels: w.sentinelsOf(n, a, e, 0)}
	}
	return out
}

// reject records a spec.Reject call: one site per sentinel its first
// argument can be; a call re-wrapping another error's sentinel (ie.Err)
// is a rewrite of that error's field, not an error of its own.
func (w *walker) reject(n *node, c *ast.CallExpr, step string, e env) {
	if len(c.Args) != 4 {
		return
	}
	if s, ok := ast.Unparen(c.Args[0]).(*ast.SelectorExpr); ok && s.Sel.Name == "Err" && isInputError(n.pkg.TypesInfo.TypeOf(s.X)) {
		w.addRewrite(w.render(n, c.Args[1], e, 0))
		return
	}
	field, value, bound := w.render(n, c.Args[1], e, 0), w.renderValue(n, c.Args[2], e), w.render(n, c.Args[3], e, 0)
	sents := w.sentinelsOf(n, c.Args[0], e, 0)
	if len(sents) == 0 {
		sents = []sentinel{{code: "?", text: "?"}} // TestErrorsPageNamesEveryCode fails on it
	}
	for _, s := range sents {
		site := errSite{step: step, code: s.code, text: s.text, field: field, value: value, bound: bound}
		if shape := site.shape(); !w.siteSeen[shape] {
			w.siteSeen[shape] = true
			w.sites = append(w.sites, site)
		}
	}
}

// rewritesAField reports whether n assigns an InputError's field.
func rewritesAField(n *node) bool {
	found := false
	ast.Inspect(n.body, func(x ast.Node) bool {
		if a, ok := x.(*ast.AssignStmt); ok && isFieldAssign(n.pkg.TypesInfo, a) {
			found = true
		}
		return !found
	})
	return found
}

// isFieldAssign reports whether a is `x.Field = …` on a spec.InputError.
func isFieldAssign(info *types.Info, a *ast.AssignStmt) bool {
	if len(a.Lhs) != 1 || len(a.Rhs) != 1 {
		return false
	}
	s, ok := ast.Unparen(a.Lhs[0]).(*ast.SelectorExpr)
	return ok && s.Sel.Name == "Field" && isInputError(info.TypeOf(s.X))
}

// shape is s with every placeholder blank: two sites of one shape differ
// only in how ref names a value computed at run time (a check reached
// bound to its caller's argument and unbound), so the page lists one.
func (s errSite) shape() errSite {
	blank := func(t string) string {
		var b strings.Builder
		for {
			i := strings.Index(t, phOpen)
			j := strings.Index(t, phClose)
			if i < 0 || j < i {
				return b.String() + t
			}
			b.WriteString(t[:i] + phOpen + phClose)
			t = t[j+len(phClose):]
		}
	}
	return errSite{s.step, s.code, s.text, blank(s.field), blank(s.value), blank(s.bound)}
}

// fieldRewrite records `x.Field = …` on a spec.InputError: a helper
// moving an error's field under a prefix (a script step's `steps[i].`).
func (w *walker) fieldRewrite(n *node, a *ast.AssignStmt, e env) {
	if isFieldAssign(n.pkg.TypesInfo, a) {
		w.addRewrite(w.render(n, a.Rhs[0], e, 0))
	}
}

func (w *walker) addRewrite(t string) {
	if !slices.Contains(w.rewrites, t) {
		w.rewrites = append(w.rewrites, t)
	}
}

// isInputError reports whether t is spec.InputError or a pointer to it.
func isInputError(t types.Type) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path()+"."+n.Obj().Name() == inputError
}
