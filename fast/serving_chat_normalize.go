package fast

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/internal/jsonscan"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// The fast chat layer never decodes the request. One validating pass
// (internal/jsonscan) walks the document, records where the few
// members S2 reads are, and normalizes each message as soon as its object
// closes; the changes are collected as splices and the output is built in
// one allocation, or not at all when nothing changes. Members it does not
// edit keep their bytes and places (docs/spec/admission-serving.md S2;
// docs/decisions.md "Preflight in one pass").

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

	// Set while scanning a chat request.
	f       fault.Serving
	flatten bool     // --flatten-tool-role-content
	top     chatTop  // the last occurrence of each member S2 reads
	msgErr  string   // the first message's 400, in message order
	nTools  int      // len(tools) of the last tools member, when a list
	names   []string // the string tools[*].function.name, in order
}

// chatTop holds the spans of the top-level members S2 reads.
type chatTop struct{ msgs, tools, tc, maxTokens, maxCompletion valSpan }

// result is the value at sp as a gjson result whose offsets are the
// document's (gjson adds a parent's Index to its children's).
func (d *chatDoc) result(sp valSpan) gjson.Result {
	if !sp.exists() {
		return gjson.Result{}
	}
	r := gjson.Parse(d.s[sp.start:sp.end])
	r.Index = sp.start
	return r
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
	// strings.Builder.Grow allocates without zeroing (the output is
	// written whole just below), which matters at 32 KB.
	var out strings.Builder
	out.Grow(n)
	prev := 0
	for _, e := range d.edits {
		out.WriteString(d.s[prev:e.start])
		out.WriteString(e.repl)
		prev = e.end
	}
	out.WriteString(d.s[prev:])
	r := out.String()
	// The builder's bytes are handed over as the result; nothing else
	// holds r, so the bytes may be read and written as a slice.
	return unsafe.Slice(unsafe.StringData(r), len(r))
}

// ServingChatNormalize is serving.chat_normalize (S2.2–S2.4, S2.7).
func ServingChatNormalize(lim spec.Limits, in spec.ServingChatNormalizeInput) (spec.ServingChatNormalizeOutput, error) {
	return chatNormalize(fault.Serving{}, in)
}

// servingChatNormalizeWithFaults is ServingChatNormalize with the historic bugs f selects
// put back (RejectStringImageURL), for the bug zoo only: fault.Hooks hands it
// to equiv/mutants (hooks.go). Called with the zero value it is ServingChatNormalize.
func servingChatNormalizeWithFaults(_ spec.Limits, in spec.ServingChatNormalizeInput, f fault.Serving) (spec.ServingChatNormalizeOutput, error) {
	return chatNormalize(f, in)
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

// requestKind is the bad value of a request that is not a JSON object
// (ref's jsonKindOrInvalid).
func requestKind(b []byte) string {
	if !jsonscan.Valid(b) {
		return "invalid JSON"
	}
	return kindOf(gjson.ParseBytes(b))
}

func chatNormalize(f fault.Serving, in spec.ServingChatNormalizeInput) (spec.ServingChatNormalizeOutput, error) {
	if err := ref.CheckChatNormalize(in); err != nil {
		return spec.ServingChatNormalizeOutput{}, err
	}
	var edits [8]splice
	var names [16]string
	d := chatDoc{b: in.Request, s: bytesView(in.Request), edits: edits[:0], names: names[:0],
		f: f, flatten: in.Flags.FlattenToolRoleContent}
	if !d.scan(in.Endpoint == spec.EndpointChat) {
		return spec.ServingChatNormalizeOutput{}, spec.Reject(spec.ErrNotJSONObject, "request", requestKind(in.Request), "a JSON object")
	}
	if in.Endpoint == spec.EndpointCompletions {
		return spec.ServingChatNormalizeOutput{Status: 200, Request: in.Request}, nil
	}
	soft, msg := d.normalize(in)
	if msg != "" {
		return spec.ServingChatNormalizeOutput{Status: spec.StatusBadRequest, Message: msg}, nil
	}
	return spec.ServingChatNormalizeOutput{Status: 200, Request: d.build(), SoftMaxTokens: soft}, nil
}

// scan validates the whole request in one pass and reports whether it is
// one JSON object. For a chat request (chat true) it also records the
// top-level members S2 reads and normalizes every message on the way.
func (d *chatDoc) scan(chat bool) bool {
	p := jsonscan.New(d.b)
	p.WS()
	if !p.At('{') {
		return false
	}
	ok := p.Members(func(key []byte) bool {
		d.members = true
		if !chat {
			return p.Value()
		}
		return d.topMember(p, key)
	})
	d.closing = p.Pos() - 1
	return ok && p.End()
}

// topMember scans one top-level member's value, recording the last
// occurrence of each member S2 reads (Python's json.loads keeps the last).
func (d *chatDoc) topMember(p *jsonscan.Scanner, key []byte) bool {
	start := p.Pos()
	var at *valSpan
	switch {
	case jsonscan.KeyIs(key, "messages"):
		// A repeated messages member replaces the earlier one: forget what
		// the earlier one's messages recorded (the only edits so far).
		d.edits, d.msgErr, at = d.edits[:0], "", &d.top.msgs
		if p.At('[') {
			ok := p.Elems(func(i int) bool { return d.message(p, i) })
			*at = valSpan{start, p.Pos()}
			return ok
		}
	case jsonscan.KeyIs(key, "tools"):
		d.nTools, d.names, at = 0, d.names[:0], &d.top.tools
		if p.At('[') {
			ok := p.Elems(func(int) bool { return d.tool(p) })
			*at = valSpan{start, p.Pos()}
			return ok
		}
	case jsonscan.KeyIs(key, "tool_choice"):
		at = &d.top.tc
	case jsonscan.KeyIs(key, "max_tokens"):
		at = &d.top.maxTokens
	case jsonscan.KeyIs(key, "max_completion_tokens"):
		at = &d.top.maxCompletion
	}
	ok := p.Value()
	if at != nil {
		*at = valSpan{start, p.Pos()}
	}
	return ok
}

// message scans messages[i] and, once its object has closed (so it is
// valid), applies S2.4 (tool role, flag on) or S2.7 (string image_url
// parts) to it, as ref's normalizeMessage does. After the first message
// error the rest is only validated.
func (d *chatDoc) message(p *jsonscan.Scanner, i int) bool {
	if !p.At('{') {
		return p.Value() // not an object: not ours to validate
	}
	var role, content valSpan
	ok := p.Members(func(key []byte) bool {
		start := p.Pos()
		ok := p.Value()
		switch {
		case jsonscan.KeyIs(key, "role"):
			role = valSpan{start, p.Pos()}
		case jsonscan.KeyIs(key, "content"):
			content = valSpan{start, p.Pos()}
		}
		return ok
	})
	if !ok || d.msgErr != "" {
		return ok
	}
	if d.flatten && d.s[role.start:role.end] == `"tool"` {
		d.msgErr = d.flattenContent(i, d.result(content))
	} else if content.exists() && d.b[content.start] == '[' &&
		// ref compares the part type's literal, so an array without that
		// literal holds no part to rewrite: skip gjson's walk.
		strings.Contains(d.s[content.start:content.end], `"image_url"`) {
		d.msgErr = d.imageParts(i, d.result(content))
	}
	return true
}

// tool scans one element of tools and records its function's string name
// (ref's toolNames: the last "function" member, if an object, and its last
// "name" member, if a string).
func (d *chatDoc) tool(p *jsonscan.Scanner) bool {
	d.nTools++
	if !p.At('{') {
		return p.Value()
	}
	var fn, name valSpan
	ok := p.Members(func(key []byte) bool {
		if !jsonscan.KeyIs(key, "function") {
			return p.Value()
		}
		fn, name = valSpan{p.Pos(), 0}, valSpan{}
		if !p.At('{') {
			return p.Value()
		}
		ok := p.Members(func(key []byte) bool {
			start := p.Pos()
			ok := p.Value()
			if jsonscan.KeyIs(key, "name") {
				name = valSpan{start, p.Pos()}
			}
			return ok
		})
		fn.end = p.Pos()
		return ok
	})
	if ok && d.b[fn.start] == '{' && name.exists() && d.b[name.start] == '"' {
		d.names = append(d.names, d.decodeString(name))
	}
	return ok
}

// decodeString is the string literal at sp, decoded: a view of the
// document when it is plain ASCII without escapes, else encoding/json's
// decoding (invalid UTF-8 becomes U+FFFD there, as in ref).
func (d *chatDoc) decodeString(sp valSpan) string {
	raw := d.s[sp.start+1 : sp.end-1]
	for i := 0; i < len(raw); i++ {
		if raw[i] == '\\' || raw[i] >= utf8.RuneSelf {
			var s string
			_ = json.Unmarshal(d.b[sp.start:sp.end], &s) // validated above
			return s
		}
	}
	return raw
}

// normalize applies the top-level rules in ref's order (messages' shape,
// tools, tool_choice, the messages' own errors, then the max_tokens
// default) and returns the soft flag, or the 400 message.
func (d *chatDoc) normalize(in spec.ServingChatNormalizeInput) (bool, string) {
	t := d.top
	if !t.msgs.exists() || d.b[t.msgs.start] != '[' {
		return false, spec.MsgMessagesNotList
	}
	if t.tools.exists() && d.b[t.tools.start] != '[' && d.s[t.tools.start:t.tools.end] != "null" {
		return false, spec.MsgToolsNotList
	}
	if msg := d.toolChoice(d.result(t.tc), d.nTools, d.names, in.Flags.NormalizeToolChoice); msg != "" {
		return false, msg
	}
	if d.msgErr != "" {
		return false, d.msgErr
	}
	dflt := in.Flags.ParaChatDefaultMaxTokens
	if dflt == nil || !absentOrNull(d.result(t.maxTokens)) || !absentOrNull(d.result(t.maxCompletion)) {
		return false, ""
	}
	n := int64(-1)
	if in.PromptTokens != nil {
		n = *in.PromptTokens
	}
	d.setTop(d.result(t.maxTokens), "max_tokens", strconv.FormatInt(ref.SoftMaxTokens(*dflt, n, in.ContextLen), 10))
	return true, ""
}

func absentOrNull(v gjson.Result) bool { return v.Type == gjson.Null }

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
			lastMembers(tc, m[:], "type", "name", "function")
			var name [1]gjson.Result
			if m[2].IsObject() {
				lastMembers(m[2], name[:], "name")
			}
			if m[0].Raw == `"function"` && m[2].IsObject() && name[0].Type == gjson.String {
				return ""
			}
		}
	}
	return spec.MsgUpstreamToolChoice
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
	lastMembers(tc, m[:], "type", "name", "function")
	if t := m[0]; t.Exists() && t.Raw != `"function"` {
		return "", ref.ToolChoiceTypeError(textOf(t))
	}
	name := m[1]
	if m[2].IsObject() {
		var fn [1]gjson.Result
		lastMembers(m[2], fn[:], "name")
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

// flattenContent is S2.4 for messages[i]'s content.
func (d *chatDoc) flattenContent(i int, content gjson.Result) string {
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
			lastMembers(p, tt[:2], "type", "text")
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
		d.replace(content, jsonString(b.String()))
	}
	return msg
}

// imageParts is S2.7 for messages[i]'s content parts.
func (d *chatDoc) imageParts(i int, content gjson.Result) string {
	msg, j := "", 0
	content.ForEach(func(_, p gjson.Result) bool {
		if p.IsObject() {
			var m [3]gjson.Result
			lastMembers(p, m[:], "type", "text", "image_url")
			if m[0].Raw == `"image_url"` {
				switch u := m[2]; {
				case u.IsObject():
				case u.Type == gjson.String && u.Str != "" && !d.f.RejectStringImageURL:
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

// jsonString is ref.JSONString (encoding/json, HTML escaping off) for the
// flattened tool content: text parts joined by newlines are mostly
// printable ASCII, which it writes itself — quotes, backslashes and the
// \n \r \t escapes encoding/json writes for them — instead of building an
// encoder per message (about 4 % of the flags-on preflight op). Any other
// byte (control characters, non-ASCII, which encoding/json may rewrite)
// goes to ref.JSONString, so the bytes are encoding/json's either way.
func jsonString(s string) string {
	extra := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			extra++
		case c < 0x20 || c >= utf8.RuneSelf:
			return ref.JSONString(s)
		}
	}
	b := make([]byte, 0, len(s)+extra+2)
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, c)
		}
	}
	b = append(b, '"')
	return unsafe.String(unsafe.SliceData(b), len(b))
}
