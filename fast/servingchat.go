package fast

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/kvtwin/kvtwin/internal/servingfault"
	"github.com/kvtwin/kvtwin/ref"
)

// The fast chat layer never decodes the request: gjson reads the few members
// it needs (with their byte offsets), the changes are collected as splices,
// and the output is built in one allocation. Members it does not edit keep
// their bytes and places (admission-serving.md S2; docs/decisions.md).

// splice replaces doc[start:end] with repl (start == end inserts).
type splice struct {
	start, end int
	repl       string
}

// chatDoc is one request being normalized.
type chatDoc struct {
	b       []byte // the document; returned as is when nothing changes
	s       string // b viewed as a string for gjson
	edits   []splice
	closing int  // offset of the top-level object's closing brace
	members bool // the top-level object has (or has been given) a member
}

// replace records a new value for the member value v.
func (d *chatDoc) replace(v gjson.Result, repl string) {
	if v.Raw == repl {
		return
	}
	d.edits = append(d.edits, splice{v.Index, v.Index + len(v.Raw), repl})
}

// setTop replaces the top-level member v, or appends key when v is absent.
func (d *chatDoc) setTop(v gjson.Result, key, repl string) {
	if v.Exists() {
		d.replace(v, repl)
		return
	}
	sep := ","
	if !d.members {
		sep = ""
	}
	d.members = true
	d.edits = append(d.edits, splice{d.closing, d.closing, sep + `"` + key + `":` + repl})
}

// build applies the splices in document order (stable: two appends keep
// the order they were made in).
func (d *chatDoc) build() json.RawMessage {
	if len(d.edits) == 0 {
		return d.b
	}
	slices.SortStableFunc(d.edits, func(a, b splice) int { return cmp.Compare(a.start, b.start) })
	n := len(d.s)
	for _, e := range d.edits {
		n += len(e.repl) - (e.end - e.start)
	}
	out := make([]byte, 0, n)
	prev := 0
	for _, e := range d.edits {
		out = append(out, d.s[prev:e.start]...)
		out = append(out, e.repl...)
		prev = e.end
	}
	return append(out, d.s[prev:]...)
}

// ChatNormalize is serving.chat_normalize (S2.2–S2.4, S2.7).
func ChatNormalize(lim ref.Limits, in ref.ChatNormalizeInput) (ref.ChatNormalizeOutput, error) {
	return chatNormalize(servingfault.Faults{}, in)
}

// ChatNormalizeFaulty is ChatNormalize with bugs put back, for the bug zoo.
func ChatNormalizeFaulty(f servingfault.Faults) func(ref.Limits, ref.ChatNormalizeInput) (ref.ChatNormalizeOutput, error) {
	return func(_ ref.Limits, in ref.ChatNormalizeInput) (ref.ChatNormalizeOutput, error) {
		return chatNormalize(f, in)
	}
}

// bytesView reads b as a string without copying; gjson never writes, and
// the results only live while the input does.
func bytesView(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// kindOf is ref's JSON kind name of a gjson value ("" when absent).
func kindOf(v gjson.Result) string {
	switch v.Type {
	case gjson.Null:
		if v.Raw == "" {
			return ""
		}
		return "null"
	case gjson.False, gjson.True:
		return "boolean"
	case gjson.Number:
		return "number"
	case gjson.String:
		return "string"
	}
	if v.IsArray() {
		return "array"
	}
	return "object"
}

// requestKind is the bad value of a request that is not a JSON object.
func requestKind(s string) string {
	if !gjson.Valid(s) {
		return "invalid JSON"
	}
	return kindOf(gjson.Parse(s))
}

var topKeys = []string{"messages", "tools", "tool_choice", "max_tokens", "max_completion_tokens"}

func chatNormalize(f servingfault.Faults, in ref.ChatNormalizeInput) (ref.ChatNormalizeOutput, error) {
	if err := ref.CheckChatNormalize(in); err != nil {
		return ref.ChatNormalizeOutput{}, err
	}
	s := bytesView(in.Request)
	root := gjson.Parse(s)
	if !root.IsObject() || !gjson.Valid(s) {
		return ref.ChatNormalizeOutput{}, ref.Reject(ref.ErrNotJSONObject, "request", requestKind(s), "a JSON object")
	}
	if in.Endpoint == ref.EndpointCompletions {
		return ref.ChatNormalizeOutput{Status: 200, Request: in.Request}, nil
	}
	d := chatDoc{b: in.Request, s: s, closing: strings.LastIndexByte(s, '}')}
	var top [5]gjson.Result
	root.ForEach(func(k, v gjson.Result) bool {
		d.members = true
		for i, want := range topKeys {
			if k.Str == want {
				top[i] = v
			}
		}
		return true
	})
	soft, msg := d.normalize(f, in, top)
	if msg != "" {
		return ref.ChatNormalizeOutput{Status: ref.StatusBadRequest, Message: msg}, nil
	}
	return ref.ChatNormalizeOutput{Status: 200, Request: d.build(), SoftMaxTokens: soft}, nil
}

// normalize records the edits in ref's order and returns the soft flag, or
// the 400 message.
func (d *chatDoc) normalize(f servingfault.Faults, in ref.ChatNormalizeInput, top [5]gjson.Result) (bool, string) {
	msgs, tools, tc := top[0], top[1], top[2]
	if !msgs.IsArray() {
		return false, ref.MsgMessagesNotList
	}
	nTools, names := 0, []string(nil)
	switch tools.Type {
	case gjson.Null:
	case gjson.JSON:
		if !tools.IsArray() {
			return false, ref.MsgToolsNotList
		}
		nTools, names = toolNames(tools)
	default:
		return false, ref.MsgToolsNotList
	}
	if msg := d.toolChoice(tc, nTools, names, in.Flags.NormalizeToolChoice); msg != "" {
		return false, msg
	}
	if msg := d.messages(f, msgs, in.Flags.FlattenToolRoleContent); msg != "" {
		return false, msg
	}
	dflt := in.Flags.ParaChatDefaultMaxTokens
	if f.ParaDefaultUngated && dflt == nil {
		para := int64(32768)
		dflt = &para
	}
	if dflt == nil || !absentOrNull(top[3]) || !absentOrNull(top[4]) {
		return false, ""
	}
	n := int64(-1)
	if in.PromptTokens != nil {
		n = *in.PromptTokens
	}
	d.setTop(top[3], "max_tokens", strconv.FormatInt(ref.SoftMaxTokens(*dflt, n, in.ContextLen), 10))
	return true, ""
}

func absentOrNull(v gjson.Result) bool { return v.Type == gjson.Null }

// toolNames counts the tools and lists the string names of those with one.
func toolNames(tools gjson.Result) (int, []string) {
	n := 0
	var names []string
	var fn, name [1]gjson.Result
	tools.ForEach(func(_, t gjson.Result) bool {
		n++
		if !t.IsObject() {
			return true
		}
		lastMembers(t, fnKey, fn[:])
		if !fn[0].IsObject() {
			return true
		}
		lastMembers(fn[0], nameKey, name[:])
		if name[0].Type == gjson.String {
			names = append(names, name[0].Str)
		}
		fn[0], name[0] = gjson.Result{}, gjson.Result{}
		return true
	})
	return n, names
}

var (
	fnKey    = []string{"function"}
	nameKey  = []string{"name"}
	tcKeys   = []string{"type", "name", "function"}
	msgKeys  = []string{"role", "content"}
	partKeys = []string{"type", "text", "image_url"}
)

// toolChoice is S2.3 (flag on) or upstream's validation (flag off).
func (d *chatDoc) toolChoice(tc gjson.Result, nTools int, names []string, on bool) string {
	if !on {
		return upstreamToolChoice(tc)
	}
	if nTools == 0 {
		d.setTop(tc, "tool_choice", `"none"`)
		return ""
	}
	switch kindOf(tc) {
	case "", "null":
		d.setTop(tc, "tool_choice", `"auto"`)
		return ""
	case "string":
		v, msg := toolChoiceString(tc.Str, names)
		if msg == "" {
			d.replace(tc, v)
		}
		return msg
	case "object":
		v, msg := toolChoiceObject(tc, names)
		if msg == "" {
			d.replace(tc, v)
		}
		return msg
	}
	return ref.ToolChoiceShapeError(kindOf(tc))
}

func upstreamToolChoice(tc gjson.Result) string {
	switch tc.Type {
	case gjson.Null:
		return ""
	case gjson.String:
		if tc.Str == "none" || tc.Str == "auto" || tc.Str == "required" {
			return ""
		}
	case gjson.JSON:
		if tc.IsObject() {
			var m [3]gjson.Result
			lastMembers(tc, tcKeys, m[:])
			var name [1]gjson.Result
			if m[2].IsObject() {
				lastMembers(m[2], nameKey, name[:])
			}
			if m[0].Raw == `"function"` && m[2].IsObject() && name[0].Type == gjson.String {
				return ""
			}
		}
	}
	return ref.MsgUpstreamToolChoice
}

func countName(names []string, n string) int {
	c := 0
	for _, x := range names {
		if x == n {
			c++
		}
	}
	return c
}

func toolChoiceString(s string, names []string) (string, string) {
	t := strings.TrimSpace(s)
	switch strings.ToLower(t) {
	case "auto":
		return `"auto"`, ""
	case "none":
		return `"none"`, ""
	case "required", "any":
		return `"required"`, ""
	}
	if countName(names, t) == 1 {
		return ref.NamedToolChoice(t), ""
	}
	return "", ref.ToolChoiceStringError(s)
}

func toolChoiceObject(tc gjson.Result, names []string) (string, string) {
	var m [3]gjson.Result
	lastMembers(tc, tcKeys, m[:])
	if t := m[0]; t.Exists() && t.Raw != `"function"` {
		return "", ref.ToolChoiceTypeError(textOf(t))
	}
	name := m[1]
	if m[2].IsObject() {
		var fn [1]gjson.Result
		lastMembers(m[2], nameKey, fn[:])
		name = fn[0]
	}
	if name.Type != gjson.String {
		return "", ref.ToolChoiceShapeError("an object without a function name")
	}
	if countName(names, name.Str) == 0 {
		return "", ref.ToolChoiceNameError(name.Str)
	}
	return ref.NamedToolChoice(name.Str), ""
}

// textOf is a string's text, else the value's literal.
func textOf(v gjson.Result) string {
	if v.Type == gjson.String {
		return v.Str
	}
	return v.Raw
}

// messages walks messages in order: tool-role flattening (flag on), else
// string image_url parts.
//
// Both rules fire only on a literal "tool" role or a literal "image_url"
// part type (ref compares the raw literals too), so a message whose bytes
// contain neither is skipped without being parsed: strings.Contains is far
// cheaper than gjson's member walk.
func (d *chatDoc) messages(f servingfault.Faults, msgs gjson.Result, flatten bool) string {
	needs := func(raw string) bool {
		return strings.Contains(raw, `"image_url"`) || (flatten && strings.Contains(raw, `"tool"`))
	}
	if !needs(msgs.Raw) {
		return ""
	}
	msg, i := "", 0
	msgs.ForEach(func(_, m gjson.Result) bool {
		if m.IsObject() && needs(m.Raw) {
			var rc [2]gjson.Result
			lastMembers(m, msgKeys, rc[:])
			if flatten && rc[0].Raw == `"tool"` {
				msg = d.flatten(i, rc[1])
			} else if rc[1].IsArray() {
				msg = d.imageParts(f, i, rc[1])
			}
		}
		i++
		return msg == ""
	})
	return msg
}

func (d *chatDoc) flatten(i int, content gjson.Result) string {
	switch kindOf(content) {
	case "", "string":
		return ""
	case "null":
		d.replace(content, `""`)
		return ""
	case "array":
	default:
		return ref.ToolContentError(i)
	}
	var b strings.Builder
	msg, j := "", 0
	content.ForEach(func(_, p gjson.Result) bool {
		var tt [3]gjson.Result
		if p.IsObject() {
			lastMembers(p, partKeys[:2], tt[:2])
		}
		if !p.IsObject() || tt[0].Raw != `"text"` || tt[1].Type != gjson.String {
			msg = ref.ToolPartError(i, j, ref.PartTypeName(kindOf(p), kindOf(tt[0]), textOf(tt[0])))
			return false
		}
		if j > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(tt[1].Str)
		j++
		return true
	})
	if msg == "" {
		d.replace(content, ref.JSONString(b.String()))
	}
	return msg
}

func (d *chatDoc) imageParts(f servingfault.Faults, i int, content gjson.Result) string {
	msg, j := "", 0
	content.ForEach(func(_, p gjson.Result) bool {
		if p.IsObject() {
			var m [3]gjson.Result
			lastMembers(p, partKeys, m[:])
			if m[0].Raw == `"image_url"` {
				switch u := m[2]; {
				case u.IsObject():
				case u.Type == gjson.String && u.Str != "" && !f.RejectStringImageURL:
					d.replace(u, ref.ImageURLObject(u.Raw))
				default:
					msg = ref.ImageURLError(i, j)
				}
			}
		}
		j++
		return msg == ""
	})
	return msg
}
