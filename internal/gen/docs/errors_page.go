package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/kvtwin/kvtwin/internal/gen/model"
)

// ErrorsPage is the generated list of every error ref can return.
const ErrorsPage = "docs/errors.md"

// decodeRoot is where the input's decoding, common to every op, starts.
const decodeRoot = "func " + module + "/catalog.DecodeStrict"

// opErrors is what the walk found for one op (or for the decoding).
type opErrors struct {
	name     string
	sites    []errSite
	rewrites []string
	// examples holds, per site, the first golden message it matches ("" for none).
	examples []string
}

// errorsModel is the page's content: the decoding's errors, then each op's.
type errorsModel struct {
	decode opErrors
	ops    []opErrors
	codes  []sentinel
}

// buildErrors walks every op of the source from its ref function.
func buildErrors(root string) (*errorsModel, error) {
	repo, err := model.Load(root)
	if err != nil {
		return nil, err
	}
	prog, err := loadProgram(root)
	if err != nil {
		return nil, err
	}
	m := &errorsModel{decode: walkOp(prog, "decoding the input", decodeRoot)}
	for _, op := range repo.Ops {
		if op.Ref == nil {
			return nil, fmt.Errorf("op %s registers no ref twin", op.Name)
		}
		stem, ok := strings.CutPrefix(op.Ref.Expr, "ref.")
		if !ok {
			return nil, fmt.Errorf("op %s: ref twin %q is not a function of ref", op.Name, op.Ref.Expr)
		}
		key := "func " + module + "/ref." + stem
		if prog.nodes[key] == nil {
			return nil, fmt.Errorf("op %s: no source for %s", op.Name, op.Ref.Expr)
		}
		m.ops = append(m.ops, walkOp(prog, op.Name, key))
	}
	m.codes = usedCodes(m)
	golden, err := goldenErrors(root)
	if err != nil {
		return nil, err
	}
	for i := range m.ops {
		m.ops[i].examples = examples(m.ops[i].sites, golden[m.ops[i].name])
	}
	return m, nil
}

// walkOp walks one root and returns what it found.
func walkOp(prog *program, name, key string) opErrors {
	w := newWalker(prog)
	w.enter(key, "", nil)
	return opErrors{name: name, sites: w.sites, rewrites: w.rewrites}
}

// usedCodes lists every sentinel the page names, by code.
func usedCodes(m *errorsModel) []sentinel {
	var out []sentinel
	for _, o := range append([]opErrors{m.decode}, m.ops...) {
		for _, s := range o.sites {
			out = addSentinels(out, []sentinel{{s.code, s.text}})
		}
	}
	return sortSentinels(out)
}

// goldenError is one error object of a golden fixture: the case's own, or
// one inside its output (a script's rejected step).
type goldenError struct {
	Code    string `json:"code"`
	Field   string `json:"field"`
	Message string `json:"message"`
}

// goldenErrors reads every golden fixture's error objects, by op, in file
// order.
func goldenErrors(root string) (map[string][]goldenError, error) {
	files, err := filepath.Glob(filepath.Join(root, "fixtures", "testdata", "*.jsonl"))
	if err != nil {
		return nil, err
	}
	out := map[string][]goldenError{}
	for _, f := range files {
		if err := readGolden(f, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func readGolden(path string, out map[string][]goldenError) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<30)
	for sc.Scan() {
		var c struct {
			Op  string `json:"op"`
			Out any    `json:"out"`
			Err any    `json:"err"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		collectErrors(c.Err, func(g goldenError) { out[c.Op] = append(out[c.Op], g) })
		collectErrors(c.Out, func(g goldenError) { out[c.Op] = append(out[c.Op], g) })
	}
	return sc.Err()
}

// collectErrors calls add for every error object in v: an object with a
// string code and message.
func collectErrors(v any, add func(goldenError)) {
	switch x := v.(type) {
	case map[string]any:
		code, okc := x["code"].(string)
		msg, okm := x["message"].(string)
		if okc && okm {
			field, _ := x["field"].(string)
			add(goldenError{Code: code, Field: field, Message: msg})
			return
		}
		for _, k := range sortedKeys(x) {
			collectErrors(x[k], add)
		}
	case []any:
		for _, e := range x {
			collectErrors(e, add)
		}
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// message is a site's message template: what spec.InputError.Error writes.
func (s errSite) message() string {
	return s.field + " = " + s.value + ": want " + s.bound + " (" + s.text + ")"
}

// messageRegexp matches the messages a site can produce: each
// placeholder any text, and any prefix before the field (a rewrite may
// move it under a step).
func (s errSite) messageRegexp() *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^.*?")
	t := s.message()
	for t != "" {
		i := strings.Index(t, phOpen)
		if i < 0 {
			b.WriteString(regexp.QuoteMeta(t))
			break
		}
		b.WriteString(regexp.QuoteMeta(t[:i]))
		b.WriteString("(?s:.*?)")
		j := strings.Index(t[i:], phClose)
		if j < 0 {
			break
		}
		t = t[i+j+len(phClose):]
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// examples is, per site, the first golden message it matches.
func examples(sites []errSite, golden []goldenError) []string {
	out := make([]string, len(sites))
	for i, s := range sites {
		rx := s.messageRegexp()
		for _, g := range golden {
			if g.Code == s.code && rx.MatchString(g.Message) {
				out[i] = g.Message
				break
			}
		}
	}
	return out
}

// errorsPageText renders the page.
func errorsPageText(m *errorsModel) string {
	var b strings.Builder
	b.WriteString(errorsIntro)
	b.WriteString("\n## Codes\n\n")
	fmt.Fprintf(&b, "%d codes; the text ends every message of its code.\n\n", len(m.codes))
	b.WriteString("| code | text |\n|---|---|\n")
	for _, s := range m.codes {
		fmt.Fprintf(&b, "| `%s` | %s |\n", s.code, codeSpan(s.text))
	}
	b.WriteString("\n## Decoding the input (every op)\n\n")
	b.WriteString("Before an op runs, its input is decoded strictly (`catalog.DecodeStrict`): unknown members, a\n")
	b.WriteString("value of the wrong JSON type and trailing data are rejected with `bad_json`.\n\n")
	writeSites(&b, m.decode, false)
	for _, o := range m.ops {
		fmt.Fprintf(&b, "\n## `%s`\n\n", o.name)
		if len(o.rewrites) > 0 {
			var rs []string
			for _, r := range o.rewrites {
				rs = append(rs, codeSpan(r))
			}
			fmt.Fprintf(&b, "Fields rewritten on the way out: %s (`{field}`: the field of a row).\n\n", strings.Join(rs, ", "))
		}
		writeSites(&b, o, true)
	}
	return b.String()
}

// writeSites writes one table: a row per site, with the step column where
// a site has a step and the example column where asked.
func writeSites(b *strings.Builder, o opErrors, withExamples bool) {
	if len(o.sites) == 0 {
		b.WriteString("No input error: every input that decodes is accepted.\n")
		return
	}
	steps := slices.ContainsFunc(o.sites, func(s errSite) bool { return s.step != "" })
	head, rule := "| code | field | bound | message |", "|---|---|---|---|"
	if steps {
		head, rule = "| step "+head, "|---"+rule
	}
	if withExamples {
		head, rule = head+" example |", rule+"---|"
	}
	b.WriteString(head + "\n" + rule + "\n")
	for i, s := range o.sites {
		if steps {
			step := "—"
			if s.step != "" {
				step = codeSpan(s.step)
			}
			fmt.Fprintf(b, "| %s ", step)
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |", s.code, codeSpan(s.field), codeSpan(s.bound), codeSpan(s.message()))
		if withExamples {
			ex := "—"
			if o.examples[i] != "" {
				ex = codeSpan(o.examples[i])
			}
			fmt.Fprintf(b, " %s |", ex)
		}
		b.WriteString("\n")
	}
}

// codeSpan writes a template as a Markdown code span in a table cell:
// placeholders as {expr}, pipes escaped, backticks fenced by longer runs.
func codeSpan(t string) string {
	t = strings.NewReplacer(phOpen, "{", phClose, "}", "|", `\|`, "\n", " ").Replace(t)
	if t == "" {
		return "—"
	}
	fence := "`"
	for strings.Contains(t, fence) {
		fence += "`"
	}
	if strings.HasPrefix(t, "`") || strings.HasSuffix(t, "`") || len(fence) > 1 {
		return fence + " " + t + " " + fence
	}
	return fence + t + fence
}

const errorsIntro = `# Errors

Every error the reference (` + "`ref`" + `) can return for an input, per op, so that an adapter can
answer as it does: its ` + "`code`" + ` for ` + "`--errors code`" + `, and its ` + "`field`" + `, ` + "`value`" + `, ` + "`bound`" + ` and
` + "`message`" + ` for ` + "`--errors exact`" + ` ([adapters.md](adapters.md#the-values) says what each mode compares).
Generated by ` + "`make docs`" + ` (` + "`go run ./internal/gen/docs`" + `) from the source of ` + "`ref`" + `, ` + "`spec`" + ` and
` + "`catalog`" + `; ` + "`TestErrorsPageIsCurrent`" + ` fails when this page differs from what the generator writes,
and ` + "`TestErrorsPageHoldsEveryGoldenError`" + ` when an error object of the golden fixtures matches no row of
its op.

**The error object.** ref rejects an input with ` + "`spec.Reject(sentinel, field, value, bound)`" + `, whose
error object is

| member | holds |
|---|---|
| ` + "`code`" + ` | the sentinel's code ([the codes](#codes)) |
| ` + "`field`" + ` | the JSON path of the offending input field, e.g. ` + "`steps[3].slot`" + ` |
| ` + "`value`" + ` | the offending value, as JSON (omitted when there is none) |
| ` + "`bound`" + ` | what the value must satisfy |
| ` + "`message`" + ` | ` + "`FIELD = VALUE: want BOUND (TEXT)`" + `: the field, the value as Go's ` + "`%v`" + ` prints it (numbers in decimal, strings unquoted, a list as ` + "`[1 2 3]`" + `, no value as ` + "`<nil>`" + `), the bound and the code's text |

**The tables.** One row per error an op can return, found by walking, from the op's ref function,
every function it can reach (a static call, a function passed as a value, a method called through
an interface on every type that has it). ` + "`{expr}`" + ` is a part computed at run time, named by the Go
expression of ref that computes it (a parameter is replaced by its caller's argument where the
walk knows it; constants are written as their values). **step** is the script step kind whose
handling returns the error (the case of the script's switch on its step kind; ` + "`—`" + `: the whole
input, or no step). A script reports a rejected step inside its output, with the step's index
before the field: each op lists how its fields are rewritten on the way out (` + "`steps[{i}].{field}`" + `).
**example** is the first message of that row in the op's golden fixtures
(` + "`fixtures/testdata/<op>.jsonl`" + `), where there is one. The walk errs on the side of listing: a row
may be an error no input reaches (a check another check always runs first), and every error object
of the golden fixtures matches a row of its op.
`
