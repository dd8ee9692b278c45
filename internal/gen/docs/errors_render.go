package main

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"maps"
	"slices"
	"strings"
)

// This file renders the arguments of a spec.Reject call as templates: the
// text the error will hold, with each part computed at run time written
// `{expr}`, expr being the Go expression of ref that computes it
// (`in [0, layers ({layers}))`). Constants are written as their values,
// string concatenations and fmt.Sprintf as the text they build, calls of a
// one-line helper (spec.Idx) inlined, and a parameter bound by the walk as
// its caller's argument.

// constString is the value of x if it is a string constant, else "".
func constString(info *types.Info, x ast.Expr) string {
	tv, ok := info.Types[x]
	if !ok || tv.Value == nil || tv.Value.Kind() != constant.String {
		return ""
	}
	return constant.StringVal(tv.Value)
}

// constText is a constant as %v prints it.
func constText(v constant.Value) string {
	return fmt.Sprint(constGo(v))
}

// constGo is a constant as the Go value fmt would format.
func constGo(v constant.Value) any {
	switch v.Kind() {
	case constant.String:
		return constant.StringVal(v)
	case constant.Bool:
		return constant.BoolVal(v)
	case constant.Int:
		if i, ok := constant.Int64Val(v); ok {
			return i
		}
		if u, ok := constant.Uint64Val(v); ok {
			return u
		}
		return v.ExactString()
	case constant.Float:
		f, _ := constant.Float64Val(v)
		return f
	}
	return v.ExactString()
}

// render is x, in node n under e, as a template; depth counts inlined
// helpers.
func (w *walker) render(n *node, x ast.Expr, e env, depth int) string {
	x = ast.Unparen(x)
	info := n.pkg.TypesInfo
	if tv, ok := info.Types[x]; ok && tv.Value != nil {
		return constText(tv.Value)
	}
	switch v := x.(type) {
	case *ast.Ident:
		if obj, ok := info.Uses[v].(*types.Var); ok {
			if b, ok := e[obj]; ok {
				return b.tmpl
			}
			if x, ok := assignedOnce(n, obj); ok && depth < maxInlineDepth && !slices.Contains(n.params, obj) && !mentions(n.pkg.TypesInfo, x, obj) {
				return w.render(n, x, e, depth+1)
			}
		}
	case *ast.BinaryExpr:
		if v.Op == token.ADD && isString(info.TypeOf(v)) {
			return w.render(n, v.X, e, depth) + w.render(n, v.Y, e, depth)
		}
	case *ast.SelectorExpr:
		if v.Sel.Name == "Field" && isInputError(info.TypeOf(v.X)) {
			return fieldPlaceholder
		}
	case *ast.CallExpr:
		if s, ok := w.renderCall(n, v, e, depth); ok {
			return s
		}
	}
	return placeholder(types.ExprString(x))
}

// Placeholders are delimited by two private-use runes while templates are
// built, so that text holding braces is never taken for one; the page
// writes them {expr}.
const (
	phOpen  = "\uE000"
	phClose = "\uE001"
)

// placeholder is the template part computed at run time by expr.
func placeholder(expr string) string { return phOpen + expr + phClose }

// fieldPlaceholder stands for the field of the error a rewrite moves.
const fieldPlaceholder = phOpen + "field" + phClose

// renderValue is the value argument as the message's %v prints it.
func (w *walker) renderValue(n *node, x ast.Expr, e env) string {
	if id, ok := ast.Unparen(x).(*ast.Ident); ok && id.Name == "nil" && n.pkg.TypesInfo.Uses[id] == types.Universe.Lookup("nil") {
		return "<nil>"
	}
	return w.render(n, x, e, 0)
}

func isString(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Info()&types.IsString != 0
}

// renderCall renders the calls whose text is known: fmt.Sprintf, the
// strconv formatters, and one-line helpers of the loaded packages (a
// function, or a func literal bound to a local name, whose body is one
// return statement).
func (w *walker) renderCall(n *node, c *ast.CallExpr, e env, depth int) (string, bool) {
	info := n.pkg.TypesInfo
	if f := calleeFunc(info, c); f != nil && f.Pkg() != nil {
		switch f.Pkg().Path() + "." + f.Name() {
		case "fmt.Sprintf":
			return w.renderSprintf(n, c, e, depth)
		case "strconv.Itoa", "strconv.FormatInt":
			return w.render(n, c.Args[0], e, depth), true
		case "strconv.Quote":
			return `"` + w.render(n, c.Args[0], e, depth) + `"`, true
		}
	}
	if depth >= maxInlineDepth {
		return "", false
	}
	body, params, ok := w.oneLiner(n, c)
	if !ok || len(params) != len(c.Args) {
		return "", false
	}
	inner := env{}
	for i, a := range c.Args {
		inner[params[i]] = binding{tmpl: w.render(n, a, e, depth+1)}
	}
	return w.render(body.node, body.expr, inner, depth+1), true
}

// inlined is the returned expression of a one-line helper and its node.
type inlined struct {
	node *node
	expr ast.Expr
}

// oneLiner finds the helper c calls, if its body is `return expr`: a
// function of the loaded packages, or a func literal assigned once to a
// local name in n.
func (w *walker) oneLiner(n *node, c *ast.CallExpr) (inlined, []*types.Var, bool) {
	info := n.pkg.TypesInfo
	if key := calleeKey(info, c); key != "" {
		callee := w.prog.nodes[key]
		if callee == nil || callee.variadic {
			return inlined{}, nil, false
		}
		x, ok := singleReturn(callee.body)
		return inlined{callee, x}, callee.params, ok
	}
	id := exprIdent(c.Fun)
	if id == nil {
		return inlined{}, nil, false
	}
	v, ok := info.Uses[id].(*types.Var)
	if !ok {
		return inlined{}, nil, false
	}
	lit := localFuncLit(n, v)
	if lit == nil {
		return inlined{}, nil, false
	}
	x, ok := singleReturn(lit.Body)
	var params []*types.Var
	for _, f := range lit.Type.Params.List {
		for _, name := range f.Names {
			p, _ := info.Defs[name].(*types.Var)
			params = append(params, p)
		}
	}
	return inlined{n, x}, params, ok
}

// assignedOnce is the value of the local v of n when v is given one by a
// single assignment (`bound := fmt.Sprintf(…)`), so a message built in
// two steps reads as one template.
func assignedOnce(n *node, v *types.Var) (ast.Expr, bool) {
	if v.IsField() || v.Parent() == nil || (v.Pkg() != nil && v.Parent() == v.Pkg().Scope()) {
		return nil, false
	}
	info := n.pkg.TypesInfo
	var value ast.Expr
	count := 0
	ast.Inspect(n.body, func(x ast.Node) bool {
		switch a := x.(type) {
		case *ast.AssignStmt:
			for i, l := range a.Lhs {
				if id := exprIdent(l); id != nil && (info.Defs[id] == v || info.Uses[id] == v) {
					count++
					if len(a.Lhs) == len(a.Rhs) && (a.Tok == token.ASSIGN || a.Tok == token.DEFINE) {
						value = a.Rhs[i]
					} else {
						count++ // a multi-value or an operator assignment: not one value
					}
				}
			}
		case *ast.ValueSpec:
			for i, id := range a.Names {
				if info.Defs[id] == v {
					count++
					if i < len(a.Values) {
						value = a.Values[i]
					} else {
						count++
					}
				}
			}
		case *ast.IncDecStmt:
			if id := exprIdent(a.X); id != nil && info.Uses[id] == v {
				count += 2
			}
		case *ast.RangeStmt:
			for _, k := range []ast.Expr{a.Key, a.Value} {
				if id := exprIdent(k); id != nil && (info.Defs[id] == v || info.Uses[id] == v) {
					count += 2
				}
			}
		case *ast.UnaryExpr:
			if id := exprIdent(a.X); a.Op == token.AND && id != nil && info.Uses[id] == v {
				count += 2 // its address is taken
			}
		}
		return true
	})
	return value, count == 1 && value != nil
}

// mentions reports whether x uses v.
func mentions(info *types.Info, x ast.Expr, v *types.Var) bool {
	found := false
	ast.Inspect(x, func(y ast.Node) bool {
		if id, ok := y.(*ast.Ident); ok && info.Uses[id] == v {
			found = true
		}
		return !found
	})
	return found
}

// singleReturn is the expression of a body that is `{ return expr }`.
func singleReturn(body ast.Node) (ast.Expr, bool) {
	b, ok := body.(*ast.BlockStmt)
	if !ok || len(b.List) != 1 {
		return nil, false
	}
	r, ok := b.List[0].(*ast.ReturnStmt)
	if !ok || len(r.Results) != 1 {
		return nil, false
	}
	return r.Results[0], true
}

// localFuncLit is the func literal v is defined as in n (`v := func…`),
// nil if v is defined otherwise or assigned again.
func localFuncLit(n *node, v *types.Var) *ast.FuncLit {
	info := n.pkg.TypesInfo
	var lit *ast.FuncLit
	assigned := 0
	ast.Inspect(n.body, func(x ast.Node) bool {
		a, ok := x.(*ast.AssignStmt)
		if !ok || len(a.Lhs) != len(a.Rhs) {
			return true
		}
		for i, l := range a.Lhs {
			id := exprIdent(l)
			if id == nil || (info.Defs[id] != v && info.Uses[id] != v) {
				continue
			}
			assigned++
			lit, _ = ast.Unparen(a.Rhs[i]).(*ast.FuncLit)
		}
		return true
	})
	if assigned != 1 {
		return nil
	}
	return lit
}

// renderSprintf renders fmt.Sprintf with a constant format: each verb
// becomes its argument, formatted as fmt would where the argument is a
// constant, else the argument's template (quoted for %q).
func (w *walker) renderSprintf(n *node, c *ast.CallExpr, e env, depth int) (string, bool) {
	if len(c.Args) == 0 {
		return "", false
	}
	info := n.pkg.TypesInfo
	tv, ok := info.Types[c.Args[0]]
	if !ok || tv.Value == nil || tv.Value.Kind() != constant.String {
		return "", false
	}
	format, args := constant.StringVal(tv.Value), c.Args[1:]
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			b.WriteByte(format[i])
			continue
		}
		j := i + 1
		for j < len(format) && strings.IndexByte("+-# 0123456789.", format[j]) >= 0 {
			j++
		}
		if j >= len(format) {
			return "", false
		}
		verb := format[i : j+1]
		i = j
		if verb == "%%" {
			b.WriteByte('%')
			continue
		}
		if len(args) == 0 {
			return "", false
		}
		a := args[0]
		args = args[1:]
		if atv, ok := info.Types[a]; ok && atv.Value != nil {
			fmt.Fprintf(&b, verb, constGo(atv.Value))
			continue
		}
		t := w.render(n, a, e, depth)
		if verb[len(verb)-1] == 'q' {
			t = `"` + t + `"`
		}
		b.WriteString(t)
	}
	return b.String(), true
}

// sentinelsOf is the sentinels the expression x of n can be: a sentinel
// var, a parameter bound to some, a local assigned some, or a struct field
// set to some in n's composite literals or its package's var tables.
func (w *walker) sentinelsOf(n *node, x ast.Expr, e env, depth int) []sentinel {
	if depth > maxInlineDepth {
		return nil
	}
	info := n.pkg.TypesInfo
	var id *ast.Ident
	switch v := ast.Unparen(x).(type) {
	case *ast.Ident:
		id = v
	case *ast.SelectorExpr:
		id = v.Sel
	default:
		return nil
	}
	v, ok := info.Uses[id].(*types.Var)
	if !ok {
		return nil
	}
	if s, ok := w.prog.sentinels[varKeyOrEmpty(v)]; ok {
		return []sentinel{s}
	}
	if b, ok := e[v]; ok {
		return b.sentinels
	}
	if v.IsField() {
		return w.fieldSentinels(v, depth)
	}
	return sortSentinels(w.assignedSentinels(n, v, e, depth))
}

// sortSentinels orders sentinels by code, so the page does not depend on
// the order the source was searched in.
func sortSentinels(ss []sentinel) []sentinel {
	slices.SortFunc(ss, func(a, b sentinel) int { return strings.Compare(a.code+"\x00"+a.text, b.code+"\x00"+b.text) })
	return ss
}

// varKeyOrEmpty is varKey for a package-level var, "" for another.
func varKeyOrEmpty(v *types.Var) string {
	if v.Pkg() == nil || v.Parent() != v.Pkg().Scope() {
		return ""
	}
	return varKey(v)
}

// assignedSentinels collects what the local v is assigned in n.
func (w *walker) assignedSentinels(n *node, v *types.Var, e env, depth int) []sentinel {
	info := n.pkg.TypesInfo
	var out []sentinel
	ast.Inspect(n.body, func(x ast.Node) bool {
		a, ok := x.(*ast.AssignStmt)
		if !ok || len(a.Lhs) != len(a.Rhs) {
			return true
		}
		for i, l := range a.Lhs {
			if id := exprIdent(l); id != nil && (info.Defs[id] == v || info.Uses[id] == v) {
				out = addSentinels(out, w.sentinelsOf(n, a.Rhs[i], e, depth+1))
			}
		}
		return true
	})
	return out
}

// fieldSentinels collects the values struct field f is given in the
// composite literals of the loaded source, keyed or positional (a table of
// checks, a place carrying its sentinel), once per field. A field is the
// same object only within one package's view of the types, so a literal
// is found where it is written in the package whose code reads it.
func (w *walker) fieldSentinels(f *types.Var, depth int) []sentinel {
	if ss, ok := w.prog.fieldCache[f]; ok {
		return ss
	}
	w.prog.fieldCache[f] = nil // a literal whose value is the field itself ends here
	var out []sentinel
	for _, key := range slices.Sorted(maps.Keys(w.prog.nodes)) {
		m := w.prog.nodes[key]
		ast.Inspect(m.body, func(x ast.Node) bool {
			if lit, ok := x.(*ast.CompositeLit); ok {
				if v := fieldValue(m.pkg.TypesInfo, lit, f); v != nil {
					out = addSentinels(out, w.sentinelsOf(m, v, nil, depth+1))
				}
			}
			return true
		})
	}
	out = sortSentinels(out)
	w.prog.fieldCache[f] = out
	return out
}

// fieldValue is the expression lit gives field f, nil if none.
func fieldValue(info *types.Info, lit *ast.CompositeLit, f *types.Var) ast.Expr {
	t := info.TypeOf(lit)
	if t == nil {
		return nil
	}
	st, ok := t.Underlying().(*types.Struct)
	if !ok {
		return nil
	}
	for i, el := range lit.Elts {
		if kv, ok := el.(*ast.KeyValueExpr); ok {
			if id := exprIdent(kv.Key); id != nil && info.Uses[id] == f {
				return kv.Value
			}
			continue
		}
		if i < st.NumFields() && st.Field(i) == f {
			return el
		}
	}
	return nil
}

// addSentinels appends the sentinels of more that out lacks.
func addSentinels(out, more []sentinel) []sentinel {
	for _, s := range more {
		if !containsSentinel(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func containsSentinel(ss []sentinel, s sentinel) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
