package repolint

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// The identifier rule extends the file-name rule (docs/design/ARCHITECTURE.md
// "Files and names") from files to Go names. An op's stem is its name's
// words, family first, each capitalized or spelled as opWords says:
// cp.page_descriptors → CPPageDescriptors, admission.round →
// AdmissionRound, hicache.ack_script → HiCacheAckScript. Then, for every op
// of the catalog:
//
//   - ref and fast export func <stem>(spec.Limits, spec.<stem>Input)
//     (spec.<stem>Output, error), and fast/cuda does too (both builds) when the op has a CUDA
//     twin; spec declares <stem>Input and <stem>Output (an alias where the
//     output is a noun of its own, as kvev.decode's KVMessage);
//   - the catalog registers it as <stem>() *Op[spec.<stem>Input,
//     spec.<stem>Output] with Ref ref.<stem>, Fast fast.<stem> and CUDA
//     cuda.<stem>, and equiv's spec is <stem>() with Op catalog.<stem>();
//   - an exported ref func named Validate… is Validate<stem>: the op's
//     whole-input validator (a piece of one is a Check…).
//
// And no exported identifier of ref, fast or fast/cuda misspells an
// initialism (spellings): CPNodeMeta, not CpNodeMeta; TopK, not Topk.

// opWords spells the op-name words that capitalizing does not: Go's
// initialisms and the spec's own spellings (HiCache, DeepGEMM, KVEv, the
// KV-event family).
var opWords = map[string]string{
	"cp": "CP", "deepgemm": "DeepGEMM", "fp8": "FP8", "glm": "GLM", "hicache": "HiCache",
	"kvev": "KVEv", "mqa": "MQA", "nsa": "NSA", "topk": "TopK",
}

// spellings maps a word, lower-cased, to the one spelling an exported
// identifier may give it: staticcheck's default initialisms (ST1003), the
// spec's initialisms and the spec's mixed-case words. A word is a run of a
// camel-case identifier (identWords).
var spellings = func() map[string]string {
	m := map[string]string{}
	for _, w := range strings.Fields(`ACL API ASCII CPU CSS DNS EOF GUID HTML HTTP HTTPS ID IP JSON QPS RAM RPC
		SLA SMTP SQL SSH TCP TLS TTL UDP UI GID UID UUID URI URL UTF8 VM XML XMPP XSRF XSS SIP RTP AMQP DB TS
		CP KV FP8 FP32 BF16 NSA MQA MLA MHA GLM LPF SSE TBO GPU CUDA PTX GEMM LRU LFU FIFO MRU FILO
		TopK MoE HiCache DeepGEMM KVEv`) {
		m[strings.ToLower(w)] = w
	}
	return m
}()

// opStem is the Go stem of an op name: its words split at '.' and '_',
// each spelled by opWords or capitalized.
func opStem(op string) string {
	var b strings.Builder
	for _, w := range strings.FieldsFunc(op, func(r rune) bool { return r == '.' || r == '_' }) {
		if s, ok := opWords[w]; ok {
			b.WriteString(s)
			continue
		}
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String()
}

// identWords splits a camel-case identifier into words: a word starts at an
// upper-case letter that follows a lower-case letter or a digit, or at the
// last upper-case letter of a run that a lower-case letter follows; digits
// stay with the word before them, and '_' separates. CPNodeMeta is CP,
// Node, Meta; FP8Rows is FP8, Rows; TopKAll is Top, K, All.
func identWords(name string) []string {
	var words []string
	rs := []rune(name)
	start := 0
	cut := func(i int) {
		if i > start {
			words = append(words, string(rs[start:i]))
		}
		start = i
	}
	for i := 1; i < len(rs); i++ {
		prev, cur := rs[i-1], rs[i]
		switch {
		case cur == '_':
			cut(i)
			start = i + 1
		case unicode.IsUpper(cur) && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
			cut(i)
		case unicode.IsUpper(cur) && unicode.IsUpper(prev) && i+1 < len(rs) && unicode.IsLower(rs[i+1]):
			cut(i)
		}
	}
	cut(len(rs))
	return words
}

// misspelled returns the words of name that spellings fixes, each as
// "Word (want Spelling)"; a plural takes the spelling plus "s" (IDs).
func misspelled(name string) []string {
	var bad []string
	for _, w := range identWords(name) {
		want, ok := spellings[strings.ToLower(w)]
		if !ok && len(w) > 1 && w[len(w)-1] == 's' {
			if s, plural := spellings[strings.ToLower(w[:len(w)-1])]; plural {
				want, ok = s+"s", true
			}
		}
		if ok && w != want {
			bad = append(bad, fmt.Sprintf("%s (want %s)", w, want))
		}
	}
	return bad
}

// goFile is one parsed non-test source file and whether its build
// constraint needs the cuda tag.
type goFile struct {
	path string
	ast  *ast.File
	cuda bool // //go:build cuda
	stub bool // //go:build !cuda
}

// parseDir parses every non-test .go file of dir, whatever its build tags.
func parseDir(fset *token.FileSet, dir string) ([]goFile, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var files []goFile
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		gf := goFile{path: p, ast: f}
		for _, cg := range f.Comments {
			if cg.Pos() > f.Package {
				break
			}
			for _, c := range cg.List {
				switch strings.TrimSpace(c.Text) {
				case "//go:build cuda":
					gf.cuda = true
				case "//go:build !cuda":
					gf.stub = true
				}
			}
		}
		files = append(files, gf)
	}
	return files, nil
}

// catalogOp is one op as catalog/ registers it.
type catalogOp struct {
	pos             string
	name            string // the constructor
	op              string // OpName
	in, out         string // the Op's type arguments
	ref, fast, cuda string // the twins' expressions; cuda "" when absent
}

// catalogOps reads catalog/'s registered ops from the source, as
// internal/gen/model does: exported funcs without receiver returning
// *Op[In, Out] with a literal OpName.
func catalogOps(fset *token.FileSet, root string) ([]catalogOp, error) {
	files, err := parseDir(fset, filepath.Join(root, "catalog"))
	if err != nil {
		return nil, err
	}
	var ops []catalogOp
	for _, f := range files {
		for _, d := range f.ast.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || !fd.Name.IsExported() || fd.Type.Params.NumFields() > 0 || fd.Type.Results == nil || len(fd.Type.Results.List) != 1 {
				continue
			}
			star, ok := fd.Type.Results.List[0].Type.(*ast.StarExpr)
			if !ok {
				continue
			}
			idx, ok := star.X.(*ast.IndexListExpr)
			if !ok || types.ExprString(idx.X) != "Op" || len(idx.Indices) != 2 {
				continue
			}
			o := catalogOp{pos: fset.Position(fd.Pos()).String(), name: fd.Name.Name,
				in: types.ExprString(idx.Indices[0]), out: types.ExprString(idx.Indices[1])}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				kv, ok := n.(*ast.KeyValueExpr)
				if !ok {
					return true
				}
				switch types.ExprString(kv.Key) {
				case "OpName":
					if lit, ok := kv.Value.(*ast.BasicLit); ok {
						o.op = strings.Trim(lit.Value, `"`)
					}
				case "Ref":
					o.ref = types.ExprString(kv.Value)
				case "Fast":
					o.fast = types.ExprString(kv.Value)
				case "CUDA":
					o.cuda = types.ExprString(kv.Value)
				}
				return true
			})
			if o.op != "" {
				ops = append(ops, o)
			}
		}
	}
	return ops, nil
}

// funcsOf indexes the funcs without receiver of files by name.
func funcsOf(files []goFile) map[string][]*ast.FuncDecl {
	m := map[string][]*ast.FuncDecl{}
	for _, f := range files {
		for _, d := range f.ast.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
				m[fd.Name.Name] = append(m[fd.Name.Name], fd)
			}
		}
	}
	return m
}

// typesOf is the set of type names files declare at top level.
func typesOf(files []goFile) map[string]bool {
	m := map[string]bool{}
	for _, f := range files {
		for _, d := range f.ast.Decls {
			if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.TYPE {
				for _, s := range gd.Specs {
					m[s.(*ast.TypeSpec).Name.Name] = true
				}
			}
		}
	}
	return m
}

// signature is a func's parameter and result types, "(A, B) (C, error)".
func signature(fd *ast.FuncDecl) string {
	list := func(fl *ast.FieldList) string {
		var ts []string
		if fl != nil {
			for _, f := range fl.List {
				for range max(1, len(f.Names)) {
					ts = append(ts, types.ExprString(f.Type))
				}
			}
		}
		return "(" + strings.Join(ts, ", ") + ")"
	}
	return list(fd.Type.Params) + " " + list(fd.Type.Results)
}

// opNameViolations checks the identifier rule for every op of the tree at
// root and returns one line per violation.
func opNameViolations(root string) ([]string, error) {
	fset := token.NewFileSet()
	ops, err := catalogOps(fset, root)
	if err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		return nil, fmt.Errorf("no op found in %s/catalog", root)
	}
	pkgs := map[string][]goFile{}
	for _, dir := range []string{"spec", "ref", "fast", "fast/cuda", "equiv"} {
		if pkgs[dir], err = parseDir(fset, filepath.Join(root, filepath.FromSlash(dir))); err != nil {
			return nil, err
		}
	}
	refFuncs, fastFuncs, cudaFuncs := funcsOf(pkgs["ref"]), funcsOf(pkgs["fast"]), funcsOf(pkgs["fast/cuda"])
	specTypes := typesOf(pkgs["spec"])
	specs := equivSpecs(pkgs["equiv"])
	var bad []string
	report := func(o catalogOp, format string, args ...any) {
		bad = append(bad, fmt.Sprintf("%s: %s (stem %s): %s", o.pos, o.op, opStem(o.op), fmt.Sprintf(format, args...)))
	}
	stems := map[string]bool{}
	for _, o := range ops {
		s := opStem(o.op)
		stems[s] = true
		in, out := s+"Input", s+"Output"
		if o.name != s {
			report(o, "catalog registers it as %s(), want %s()", o.name, s)
		}
		if o.in != "spec."+in || o.out != "spec."+out {
			report(o, "catalog's Op[%s, %s], want Op[spec.%s, spec.%s]", o.in, o.out, in, out)
		}
		for _, tw := range [][2]string{{"Ref", o.ref}, {"Fast", o.fast}, {"CUDA", o.cuda}} {
			pkg := map[string]string{"Ref": "ref", "Fast": "fast", "CUDA": "cuda"}[tw[0]]
			if tw[1] != "" && tw[1] != pkg+"."+s {
				report(o, "catalog's %s is %s, want %s.%s", tw[0], tw[1], pkg, s)
			}
		}
		for _, t := range []string{in, out} {
			if !specTypes[t] {
				report(o, "spec declares no type %s", t)
			}
		}
		twinSig := "(spec.Limits, spec." + in + ") (spec." + out + ", error)"
		checkFunc := func(pkg string, decls []*ast.FuncDecl, want string) {
			if len(decls) == 0 {
				report(o, "%s exports no func %s", pkg, s)
			}
			for _, fd := range decls {
				if got := signature(fd); got != want {
					report(o, "%s.%s%s, want %s", pkg, s, got, want)
				}
			}
		}
		checkFunc("ref", refFuncs[s], twinSig)
		checkFunc("fast", fastFuncs[s], twinSig)
		if o.cuda != "" {
			checkFunc("fast/cuda", cudaFuncs[s], twinSig)
			if n := len(cudaFuncs[s]); n != 2 {
				report(o, "fast/cuda declares %s %d times, want 2 (the cuda build and the !cuda stub)", s, n)
			}
		}
		switch got := specs[s]; got {
		case s:
		case "":
			report(o, "equiv has no spec whose Op is catalog.%s()", s)
		default:
			report(o, "equiv's spec of catalog.%s() is %s(), want %s()", s, got, s)
		}
	}
	for name := range refFuncs {
		if v, ok := strings.CutPrefix(name, "Validate"); ok && ast.IsExported(name) && !stems[v] {
			bad = append(bad, fmt.Sprintf("ref.%s: a Validate… is an op's whole-input validator, Validate<op stem>; %s is no op's stem (a piece of an op's validation is a Check…)", name, v))
		}
	}
	slices.Sort(bad)
	return bad, nil
}

// equivSpecs maps the catalog constructor each equiv spec names in
// `Op: catalog.X()` to the spec's own func name.
func equivSpecs(files []goFile) map[string]string {
	m := map[string]string{}
	for name, decls := range funcsOf(files) {
		for _, fd := range decls {
			if fd.Body == nil {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				kv, ok := n.(*ast.KeyValueExpr)
				if !ok || types.ExprString(kv.Key) != "Op" {
					return true
				}
				if call, ok := kv.Value.(*ast.CallExpr); ok && len(call.Args) == 0 {
					if x, ok := strings.CutPrefix(types.ExprString(call.Fun), "catalog."); ok {
						m[x] = name
					}
				}
				return true
			})
		}
	}
	return m
}

// exportedNames is every exported identifier files declare: top-level
// funcs, types, vars and consts, methods, struct fields and interface
// methods at any depth, as "file:line: Name".
func exportedNames(fset *token.FileSet, files []goFile) []string {
	var out []string
	add := func(id *ast.Ident) {
		if id != nil && id.IsExported() {
			out = append(out, fmt.Sprintf("%s: %s", fset.Position(id.Pos()), id.Name))
		}
	}
	for _, f := range files {
		ast.Inspect(f.ast, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				add(n.Name)
			case *ast.TypeSpec:
				add(n.Name)
			case *ast.ValueSpec:
				for _, id := range n.Names {
					add(id)
				}
			case *ast.Field:
				for _, id := range n.Names {
					add(id)
				}
			case *ast.BlockStmt:
				return false // locals are not API
			}
			return true
		})
	}
	return out
}

// initialismViolations lists the exported identifiers of the packages in
// dirs (relative to root, each with its subpackages) that misspell a word
// of spellings.
func initialismViolations(root string, dirs ...string) ([]string, error) {
	fset := token.NewFileSet()
	var bad []string
	for _, dir := range dirs {
		err := filepath.WalkDir(filepath.Join(root, filepath.FromSlash(dir)), func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			files, err := parseDir(fset, p)
			if err != nil {
				return err
			}
			for _, e := range exportedNames(fset, files) {
				name := e[strings.LastIndex(e, " ")+1:]
				if words := misspelled(name); len(words) > 0 {
					bad = append(bad, e+": "+strings.Join(words, ", "))
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return bad, nil
}

// TestOpStemSpellsTheOpNameInGo pins the derivation on the examples the
// rule is written with and on every spelled word.
func TestOpStemSpellsTheOpNameInGo(t *testing.T) {
	for op, want := range map[string]string{
		"cp.page_descriptors":           "CPPageDescriptors",
		"admission.round":               "AdmissionRound",
		"transfer.filter_cp_rank":       "TransferFilterCPRank",
		"fp8.quantize_index_k":          "FP8QuantizeIndexK",
		"mqa.chunked_topk":              "MQAChunkedTopK",
		"nsa.index_plan":                "NSAIndexPlan",
		"hicache.ack_script":            "HiCacheAckScript",
		"deepgemm.warmup_plan":          "DeepGEMMWarmupPlan",
		"kvev.decode":                   "KVEvDecode",
		"serving.glm_tool_args":         "ServingGLMToolArgs",
		"config.index_topk_overrides":   "ConfigIndexTopKOverrides",
		"serving.validate_input_length": "ServingValidateInputLength",
	} {
		if got := opStem(op); got != want {
			t.Errorf("opStem(%q) = %s, want %s", op, got, want)
		}
	}
}

// TestInitialismRuleTellsMisspellingsFromSpellings pins the word split and
// the spellings: initialisms upper-case, the spec's mixed-case words as
// the spec writes them, plurals with a lower-case s.
func TestInitialismRuleTellsMisspellingsFromSpellings(t *testing.T) {
	for _, ok := range []string{"CPNodeMeta", "TopKAll", "KVEvApply", "HiCacheAckScript", "DeepGEMMWarmupPlan",
		"FP8QuantizeRowOutput", "BF16FromF32", "E4M3NaN", "LayerIDs", "MoEWithCompaction", "ErrDGShape",
		"MLABF16RowBytes", "Ready", "Ids2", "Identity", "Topology", "WantTS", "ExtraKeyOf"} {
		if bad := misspelled(ok); len(bad) > 0 {
			t.Errorf("misspelled(%s) = %v, want none", ok, bad)
		}
	}
	for name, want := range map[string]string{
		"CpNodeMeta":             "Cp (want CP)",
		"IndexTopkFlag":          "Topk (want TopK)",
		"NodeId":                 "Id (want ID)",
		"NodeIds":                "Ids (want IDs)",
		"ParseJson":              "Json (want JSON)",
		"KvevApply":              "Kvev (want KVEv)",
		"HicacheAckScript":       "Hicache (want HiCache)",
		"DeepGemmWarmupPlan":     "Gemm (want GEMM)",
		"Fp8Rows":                "Fp8 (want FP8)",
		"MoeWithCompaction":      "Moe (want MoE)",
		"Layout_Http":            "Http (want HTTP)",
		"ErrTopkIndexOutOfRange": "Topk (want TopK)",
	} {
		if got := misspelled(name); len(got) != 1 || got[0] != want {
			t.Errorf("misspelled(%s) = %v, want [%s]", name, got, want)
		}
	}
}

// TestTwinsExportEveryOpUnderItsStem holds the identifier rule on the
// repository: every op's twins, types, catalog entry and spec are named
// for the op, and every Validate… of ref is an op's.
func TestTwinsExportEveryOpUnderItsStem(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bad, err := opNameViolations(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// TestTwinsSpellInitialismsAsGoDoes holds the initialism rule on every
// exported identifier of spec, ref, fast and fast/cuda, fields and methods
// included, in every build.
func TestTwinsSpellInitialismsAsGoDoes(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bad, err := initialismViolations(root, "spec", "ref", "fast")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// TestNameRulesFailOnPlantedViolations runs both checks on a small tree
// with one op named wrong in every place the rule looks, and one
// misspelled export, so neither check can pass by finding nothing.
func TestNameRulesFailOnPlantedViolations(t *testing.T) {
	root := t.TempDir()
	write := func(rel, src string) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("catalog/ops.go", `package catalog

func ExamplePageTotal() *Op[spec.ExamplePageTotalInput, spec.ExamplePageTotalOutput] {
	return &Op[spec.ExamplePageTotalInput, spec.ExamplePageTotalOutput]{OpName: "example.page_total", Ref: ref.ExamplePageTotal, Fast: fast.ExamplePageTotal}
}

func PageSum() *Op[spec.PageSumInput, spec.ExampleCopiesOutput] {
	return &Op[spec.PageSumInput, spec.ExampleCopiesOutput]{OpName: "example.copies", Ref: ref.PageSum, Fast: fast.PageSum, CUDA: cuda.ExampleCopies}
}
`)
	write("spec/ops.go", `package spec

type ExamplePageTotalInput struct{}
type ExamplePageTotalOutput struct{}
type ExampleCopiesOutput = ExamplePageTotalOutput

type CpNodeMeta struct{ NodeId int }
`)
	write("ref/ops.go", `package ref

func ExamplePageTotal(spec.Limits, spec.ExamplePageTotalInput) (spec.ExamplePageTotalOutput, error) { return spec.ExamplePageTotalOutput{}, nil }
func PageSum(spec.Limits, spec.PageSumInput) (spec.ExampleCopiesOutput, error) { return spec.ExampleCopiesOutput{}, nil }
func ValidateExamplePageTotal(spec.ExamplePageTotalInput) error { return nil }
func ValidatePageSum(spec.PageSumInput) error { return nil }
`)
	write("fast/ops.go", `package fast

func ExamplePageTotal(_ spec.Limits, in spec.ExamplePageTotalInput) (spec.ExamplePageTotalOutput, error) { return spec.ExamplePageTotalOutput{}, nil }
func PageSum(spec.Limits, spec.PageSumInput) (spec.ExampleCopiesOutput, error) { return spec.ExampleCopiesOutput{}, nil }
`)
	write("fast/cuda/nocuda.go", `//go:build !cuda

package cuda

func ExampleCopies(spec.Limits, spec.ExampleCopiesInput) (spec.ExampleCopiesOutput, error) { return spec.ExampleCopiesOutput{}, nil }
`)
	write("equiv/specs.go", `package equiv

func ExamplePageTotal() *Spec[spec.ExamplePageTotalInput, spec.ExamplePageTotalOutput] {
	return &Spec[spec.ExamplePageTotalInput, spec.ExamplePageTotalOutput]{Op: catalog.ExamplePageTotal()}
}

func PageSum() *Spec[spec.PageSumInput, spec.ExampleCopiesOutput] {
	return &Spec[spec.PageSumInput, spec.ExampleCopiesOutput]{Op: catalog.PageSum()}
}
`)
	bad, err := opNameViolations(root)
	if err != nil {
		t.Fatal(err)
	}
	wants := []string{
		"catalog registers it as PageSum(), want ExampleCopies()",
		"catalog's Op[spec.PageSumInput, spec.ExampleCopiesOutput], want Op[spec.ExampleCopiesInput, spec.ExampleCopiesOutput]",
		"catalog's Ref is ref.PageSum, want ref.ExampleCopies",
		"catalog's Fast is fast.PageSum, want fast.ExampleCopies",
		"spec declares no type ExampleCopiesInput",
		"ref exports no func ExampleCopies",
		"fast exports no func ExampleCopies",
		"fast/cuda declares ExampleCopies 1 times, want 2",
		"equiv has no spec whose Op is catalog.ExampleCopies()",
		"ref.ValidatePageSum: a Validate… is an op's whole-input validator",
	}
	if len(bad) != len(wants) {
		t.Errorf("got %d violations, want %d:\n%s", len(bad), len(wants), strings.Join(bad, "\n"))
	}
	for _, w := range wants {
		if !slices.ContainsFunc(bad, func(b string) bool { return strings.Contains(b, w) }) {
			t.Errorf("no violation says %q in:\n%s", w, strings.Join(bad, "\n"))
		}
	}
	for _, b := range bad {
		if strings.Contains(b, "example.page_total") {
			t.Errorf("the well-named op is reported: %s", b)
		}
	}

	mis, err := initialismViolations(root, "spec", "ref", "fast")
	if err != nil {
		t.Fatal(err)
	}
	if len(mis) != 2 || !strings.HasSuffix(mis[0], "CpNodeMeta: Cp (want CP)") || !strings.HasSuffix(mis[1], "NodeId: Id (want ID)") {
		t.Errorf("initialism violations = %q, want CpNodeMeta's Cp and NodeId's Id", mis)
	}
}
