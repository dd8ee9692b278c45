package equiv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// ---- serving.chat_normalize (S2.2–S2.4, S2.7) ----

// ServingChatNormalize is the differential spec of serving.chat_normalize.
func ServingChatNormalize() *Spec[spec.ServingChatNormalizeInput, spec.ServingChatNormalizeOutput] {
	return &Spec[spec.ServingChatNormalizeInput, spec.ServingChatNormalizeOutput]{
		Op:          catalog.ServingChatNormalize(),
		Valid:       rapid.Custom(chatValid),
		Invalid:     rapid.Custom(chatInvalid),
		Boundary:    chatBoundary(),
		Regressions: chatRegressions(),
		Props: []Prop[spec.ServingChatNormalizeInput, spec.ServingChatNormalizeOutput]{
			{"flags-off-is-upstream", chatFlagsOffIdentity},
			{"other-members-untouched-in-order", chatOthersUntouched},
			{"tool-choice-canonical-and-idempotent", chatToolChoiceIdempotent},
			{"soft-max-tokens-rule", chatSoftRule},
			{"no-string-image-url-left", chatNoStringImageURL},
			{"tool-content-flattened", chatToolFlattened},
		},
	}
}

func i64(v int64) *int64 { return &v }

var toolNamePool = []string{"get_weather", "search", "run", "Search", "a<b"}

// chatRequest draws a chat request as text: members in random order with
// random spacing, unknown members with escapes and non-ASCII text, and
// every form S2 reads.
func chatRequest(t *rapid.T) json.RawMessage {
	sp := rapid.SampledFrom([]string{"", "", " ", "\n  "}).Draw(t, "space")
	var members []string
	add := func(k, v string) { members = append(members, ref.JSONString(k)+":"+sp+v) }
	add("model", `"glm-4.5"`)
	add("messages", chatMessages(t, sp))
	if rapid.IntRange(0, 3).Draw(t, "has_tools") > 0 {
		add("tools", chatTools(t))
	} else if rapid.Bool().Draw(t, "null_tools") {
		add("tools", "null")
	}
	if tc := rapid.SampledFrom([]string{"", "null", `"auto"`, `"none"`, `"required"`, `" Any "`, `"AUTO"`, `"search"`, `"Search"`, `"missing"`,
		`{"type":"function","function":{"name":"search"}}`, `{"name":"run"}`, `{"function":{"name":"a<b"}}`, `{"type":"function","name":"get_weather"}`,
		`{"type":"tool","name":"run"}`, `{"type":null}`, `{"name":"nope"}`, `{}`, `7`, `["auto"]`}).Draw(t, "tool_choice"); tc != "" {
		if strings.HasPrefix(tc, "{") && rapid.IntRange(0, 2).Draw(t, "tool_choice_unnamed") == 0 {
			tc = chatUnnamedToolChoice(t, tc)
		}
		add("tool_choice", tc)
	}
	if mt := rapid.SampledFrom([]string{"", "", "null", "128"}).Draw(t, "max_tokens"); mt != "" {
		add("max_tokens", mt)
	}
	if mt := rapid.SampledFrom([]string{"", "", "", "null", "64"}).Draw(t, "max_completion_tokens"); mt != "" {
		add("max_completion_tokens", mt)
	}
	if rapid.Bool().Draw(t, "extras") {
		add("x_extra", `{"z":1.50,"a":[true,null,"\u00e9\/<>"],"é":"ü"}`)
		add("temperature", "0.70")
	}
	for i := len(members) - 1; i > 0; i-- {
		j := rapid.IntRange(0, i).Draw(t, "swap")
		members[i], members[j] = members[j], members[i]
	}
	return json.RawMessage("{" + sp + strings.Join(members, ","+sp) + sp + "}")
}

// chatUnnamedToolChoice gives an object tool_choice members S2.3 does not
// name, in the object or in its function (a reach class of issue 30):
// normalization drops them with the rest of the object, upstream's
// validation keeps them.
func chatUnnamedToolChoice(t *rapid.T, tc string) string {
	if strings.Contains(tc, `"function":{`) && rapid.Bool().Draw(t, "unnamed_in_function") {
		tc = strings.Replace(tc, `"function":{`, `"function":{"x_fn":[1,"é"],`, 1)
	}
	if rapid.Bool().Draw(t, "unnamed_in_object") {
		tc = `{"x_choice":{"why":null},` + tc[1:]
		tc = strings.Replace(tc, `,}`, `}`, 1) // {} becomes {"x_choice":…}
	}
	return tc
}

func chatTools(t *rapid.T) string {
	n := rapid.IntRange(0, 3).Draw(t, "n_tools")
	tools := make([]string, n)
	for i := range tools {
		name := rapid.SampledFrom(toolNamePool).Draw(t, "tool_name")
		tools[i] = `{"type":"function","function":{"name":` + ref.JSONString(name) + `,"parameters":{"type":"object","properties":{"q":{"type":"string"}}}` +
			rapid.SampledFrom([]string{"", "", `,"strict":true`, `,"description":"d","x_vendor":{"k":[1,2]}`}).Draw(t, "function_extra") + `}` +
			rapid.SampledFrom([]string{"", "", `,"x_cache":null`}).Draw(t, "tool_extra") + `}`
		if rapid.IntRange(0, 6).Draw(t, "nameless") == 0 {
			tools[i] = `{"type":"function","function":{"description":"no name"}}`
		}
	}
	return "[" + strings.Join(tools, ",") + "]"
}

func chatMessages(t *rapid.T, sp string) string {
	if rapid.IntRange(0, 30).Draw(t, "messages_not_list") == 0 {
		return `"hi"`
	}
	n := rapid.IntRange(0, 4).Draw(t, "n_messages")
	msgs := make([]string, n)
	for i := range msgs {
		role := rapid.SampledFrom([]string{"user", "assistant", "system", "tool", "tool"}).Draw(t, "role")
		content := rapid.SampledFrom([]string{"", "null", `"plain"`, `"a\nb"`, "parts", "parts", "7"}).Draw(t, "content")
		if content == "parts" {
			content = chatParts(t, sp)
		}
		m := `"role":` + sp + `"` + role + `"`
		if content != "" {
			m += "," + sp + `"content":` + sp + content
		}
		if role == "tool" {
			m = `"tool_call_id":"call_1",` + m
		}
		// members the spec does not name ride along and must not change the result
		if extra := rapid.SampledFrom([]string{"", "", "", `"name":"bob"`, `"x_meta":{"k":[1,"é"]}`, `"reasoning_content":null`}).Draw(t, "message_extra"); extra != "" {
			m += "," + sp + extra
		}
		msgs[i] = "{" + m + "}"
	}
	return "[" + strings.Join(msgs, ","+sp) + "]"
}

func chatParts(t *rapid.T, sp string) string {
	n := rapid.IntRange(0, 3).Draw(t, "n_parts")
	parts := make([]string, n)
	for i := range parts {
		parts[i] = rapid.SampledFrom([]string{
			`{"type":"text","text":"a"}`, `{"type":"text","text":"b\u00e9 \"q\""}`, `{"type":"text","text":""}`,
			`{"type":"text","text":"a"}`, `{"type":"text","text":"z"}`,
			`{"type":"image_url","image_url":"https://x/y.png"}`, `{"type":"image_url","image_url":` + sp + `"data:image/png;base64,AAAA\/"}`,
			`{"type":"image_url","image_url":{"url":"https://x/z.png","detail":"high"}}`, `{"type":"image_url","image_url":""}`,
			`{"type":"image_url"}`, `{"type":"text"}`, `{"type":7}`, `"bare"`, `{"text":"untyped"}`,
			`{"type":"text","text":"c","x_extra":{"a":1}}`, `{"x_first":true,"type":"image_url","image_url":{"url":"https://x/w.png","x_size":3}}`,
		}).Draw(t, "part")
	}
	return "[" + strings.Join(parts, ","+sp) + "]"
}

func chatFlags(t *rapid.T) spec.CompatFlags {
	var f spec.CompatFlags
	if rapid.IntRange(0, 2).Draw(t, "all_off") == 0 {
		return f
	}
	if rapid.Bool().Draw(t, "para") {
		f.ParaChatDefaultMaxTokens = i64(rapid.SampledFrom([]int64{1, 512, 32768}).Draw(t, "para_value"))
	}
	f.Family = rapid.SampledFrom([]string{"", "none", "glm", "kimi"}).Draw(t, "family")
	f.NormalizeToolChoice = rapid.Bool().Draw(t, "normalize_tool_choice")
	f.FlattenToolRoleContent = rapid.Bool().Draw(t, "flatten")
	f.StreamFirstChunkPreflight = rapid.Bool().Draw(t, "preflight")
	return f
}

func chatValid(t *rapid.T) spec.ServingChatNormalizeInput {
	in := spec.ServingChatNormalizeInput{
		Endpoint:   rapid.SampledFrom([]string{spec.EndpointChat, spec.EndpointChat, spec.EndpointChat, spec.EndpointCompletions}).Draw(t, "endpoint"),
		Request:    chatRequest(t),
		ContextLen: rapid.SampledFrom([]int64{1, 600, 32768}).Draw(t, "context_len"),
		Flags:      chatFlags(t),
	}
	if rapid.Bool().Draw(t, "tokenized") {
		in.PromptTokens = i64(rapid.SampledFrom([]int64{0, 1, 598, 599, 600, 1000, 32766}).Draw(t, "prompt_tokens"))
	}
	return in
}

func chatInvalid(t *rapid.T) Bad[spec.ServingChatNormalizeInput] {
	in := chatValid(t)
	switch rapid.IntRange(0, 5).Draw(t, "violation") {
	case 0:
		in.Endpoint = rapid.SampledFrom([]string{"", "Chat", "embeddings"}).Draw(t, "bad_endpoint")
		return Bad[spec.ServingChatNormalizeInput]{in, spec.ErrBadEnum}
	case 1:
		in.ContextLen = rapid.Int64Range(-5, 0).Draw(t, "bad_context_len")
		return Bad[spec.ServingChatNormalizeInput]{in, spec.ErrPoolTooSmall}
	case 2:
		in.PromptTokens = i64(rapid.Int64Range(-5, -1).Draw(t, "negative_n"))
		return Bad[spec.ServingChatNormalizeInput]{in, spec.ErrNegative}
	case 3:
		in.Flags.ParaChatDefaultMaxTokens = i64(rapid.Int64Range(-3, 0).Draw(t, "bad_para"))
		return Bad[spec.ServingChatNormalizeInput]{in, spec.ErrBadFlag}
	case 4:
		in.Flags.Family = rapid.SampledFrom([]string{"glm4", "GLM", "openai"}).Draw(t, "bad_family")
		return Bad[spec.ServingChatNormalizeInput]{in, spec.ErrBadFlag}
	}
	in.Request = json.RawMessage(rapid.SampledFrom([]string{`[]`, `"x"`, `7`, `null`, ` [{}] `}).Draw(t, "not_object"))
	return Bad[spec.ServingChatNormalizeInput]{in, spec.ErrNotJSONObject}
}

func chatBoundary() []Case[spec.ServingChatNormalizeInput] {
	d := i64(32768)
	req := func(s string) json.RawMessage { return json.RawMessage(s) }
	return append([]Case[spec.ServingChatNormalizeInput]{
		{"s2.2-example", spec.ServingChatNormalizeInput{Endpoint: "chat", Request: req(`{"messages":[]}`), PromptTokens: i64(1000), ContextLen: 32768, Flags: spec.CompatFlags{ParaChatDefaultMaxTokens: d}}},
		{"s2.2-clamp-below-one-keeps-d", spec.ServingChatNormalizeInput{Endpoint: "chat", Request: req(`{"messages":[]}`), PromptTokens: i64(32767), ContextLen: 32768, Flags: spec.CompatFlags{ParaChatDefaultMaxTokens: d}}},
		{"s2.2-null-max-tokens-replaced", spec.ServingChatNormalizeInput{Endpoint: "chat", Request: req(`{"max_tokens":null,"messages":[]}`), ContextLen: 32768, Flags: spec.CompatFlags{ParaChatDefaultMaxTokens: d}}},
		{"empty-object", spec.ServingChatNormalizeInput{Endpoint: "chat", Request: req(`{ }`), ContextLen: 10, Flags: spec.CompatFlags{NormalizeToolChoice: true}}},
		{"empty-messages-append-both", spec.ServingChatNormalizeInput{Endpoint: "chat", Request: req(` { "messages" : [ ] } `), ContextLen: 10, Flags: spec.CompatFlags{NormalizeToolChoice: true, ParaChatDefaultMaxTokens: d}}},
		{"s2.4-example", spec.ServingChatNormalizeInput{Endpoint: "chat", Request: req(`{"messages":[{"role":"tool","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`), ContextLen: 10, Flags: spec.CompatFlags{FlattenToolRoleContent: true}}},
		{"duplicate-tool-choice-last-wins", spec.ServingChatNormalizeInput{Endpoint: "chat", Request: req(`{"messages":[],"tools":[{"function":{"name":"f"}}],"tool_choice":"f","tool_choice":"any"}`), ContextLen: 10, Flags: spec.CompatFlags{NormalizeToolChoice: true}}},
		{"escaped-key", spec.ServingChatNormalizeInput{Endpoint: "chat", Request: req(`{"m\u0065ssages":[{"role":"user","content":[{"type":"image_url","image_url":"u"}]}]}`), ContextLen: 10}},
		{"completions-untouched", spec.ServingChatNormalizeInput{Endpoint: "completions", Request: req(`{"prompt":"hi","tool_choice":7}`), ContextLen: 10, Flags: spec.CompatFlags{ParaChatDefaultMaxTokens: d, NormalizeToolChoice: true}}},
		// Members S2.3 does not name in upstream's tool_choice object and its
		// function ride along untouched with the flags off (a reach class of
		// issue 30); normalization replaces the whole object.
		// Members S2 does not name in a text part and in an image part's
		// object ride along untouched (a reach class of issue 30).
		{"content-parts-with-unnamed-members", spec.ServingChatNormalizeInput{Endpoint: "chat", ContextLen: 10,
			Request: req(`{"messages":[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"image_url","image_url":{"url":"https://x/y.png","x_size":[3]}}]}]}`)}},
		{"tool-choice-unnamed-members-flags-off", spec.ServingChatNormalizeInput{Endpoint: "chat", ContextLen: 10,
			Request: req(`{"messages":[],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"x_choice":1,"type":"function","function":{"name":"f","x_fn":[2]}}}`)}},
		{"tool-choice-unnamed-members-normalized", spec.ServingChatNormalizeInput{Endpoint: "chat", ContextLen: 10, Flags: spec.CompatFlags{NormalizeToolChoice: true},
			Request: req(`{"messages":[],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"x_choice":1,"function":{"x_fn":[2],"name":"f"}}}`)}},
	}, chatPathCases()...)
}

// chatPathCases pins, one case each, the S2 paths a generator run reaches
// only on some seeds or not at all: tools that are not a list; each kind
// S2.4's message names for a non-text tool part; a tool_choice type given
// as a string; tool names with escapes and non-ASCII text (decoded, not
// viewed); upstream's canonical object with the flags off; a mixed-case
// "auto"; tool and message entries that are not objects (skipped); a
// tool_choice object naming no function, a string naming an unknown one;
// S2.7's empty string URL.
func chatPathCases() []Case[spec.ServingChatNormalizeInput] {
	tc := spec.CompatFlags{NormalizeToolChoice: true}
	flat := spec.CompatFlags{FlattenToolRoleContent: true}
	chat := func(name, request string, f spec.CompatFlags) Case[spec.ServingChatNormalizeInput] {
		return Case[spec.ServingChatNormalizeInput]{name, spec.ServingChatNormalizeInput{Endpoint: "chat", Request: json.RawMessage(request), ContextLen: 10, Flags: f}}
	}
	tool := func(parts string) string {
		return `{"messages":[{"role":"tool","tool_call_id":"c","content":[{"type":"text","text":"ok"},` + parts + `]}]}`
	}
	return []Case[spec.ServingChatNormalizeInput]{
		chat("tools-object-not-a-list-400", `{"messages":[],"tools":{"type":"function","function":{"name":"f"}}}`, tc),
		chat("s2.4-bare-string-part-400", tool(`"bare"`), flat),
		chat("s2.4-boolean-part-400", tool(`true`), flat),
		chat("s2.4-untyped-part-400", tool(`{"text":"x"}`), flat),
		chat("s2.4-image-part-400", tool(`{"type":"image_url","image_url":"https://x/y.png"}`), flat),
		chat("s2.4-numeric-type-part-400", tool(`{"type":7,"text":"x"}`), flat),
		chat("s2.4-text-part-with-number-text-400", tool(`{"type":"text","text":5}`), flat),
		// Flattened ASCII text with every escape the fast path writes itself
		// (quote, backslash, \n, \r, \t): its bytes must be encoding/json's.
		chat("s2.4-flattened-ascii-escapes", tool(`{"type":"text","text":"say \"hi\"\\ \r\n"},{"type":"text","text":"a\tb"}`), flat),
		chat("tool-choice-type-string-not-function-400", `{"messages":[],"tools":[{"function":{"name":"f"}}],"tool_choice":{"type":"tool","function":{"name":"f"}}}`, tc),
		chat("tool-names-escaped-and-non-ascii", `{"messages":[],"tools":[{"function":{"name":"m\u00e9t\u00e9o"}},{"function":{"name":"café \"x\""}}],"tool_choice":"météo"}`, tc),
		chat("upstream-canonical-object-flags-off", `{"messages":[],"tools":[{"type":"function","function":{"name":"search"}}],"tool_choice":{"type":"function","function":{"name":"search"}}}`, spec.CompatFlags{}),
		chat("tool-choice-mixed-case-auto", `{"messages":[],"tools":[{"function":{"name":"f"}}],"tool_choice":" Auto "}`, tc),
		chat("tools-and-messages-with-non-objects", `{"messages":[7,{"role":"user","content":"hi"}],"tools":[7,{"function":"f"},{"function":{"name":"f"}}],"tool_choice":"f"}`, tc),
		chat("tool-choice-string-unknown-400", `{"messages":[],"tools":[{"function":{"name":"f"}}],"tool_choice":"g"}`, tc),
		chat("s2.7-empty-string-image-url-400", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":""}]}]}`, spec.CompatFlags{}),
		chat("tool-choice-object-without-name-400", `{"messages":[],"tools":[{"function":{"name":"f"}}],"tool_choice":{"type":"function","function":{}}}`, tc),
		// the "none" spelling, and an object naming a tool the request lacks
		chat("s2.4-number-tool-content-400", `{"messages":[{"role":"tool","tool_call_id":"c","content":7}]}`, flat),
		chat("s2.4-null-tool-content-becomes-empty-string", `{"messages":[{"role":"tool","tool_call_id":"c","content":null}]}`, flat),
		chat("tool-choice-none", `{"messages":[],"tools":[{"function":{"name":"f"}}],"tool_choice":" NONE"}`, tc),
		chat("tool-choice-object-unknown-name-400", `{"messages":[],"tools":[{"function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"g"}}}`, tc),
	}
}

func chatRegressions() []Case[spec.ServingChatNormalizeInput] {
	return []Case[spec.ServingChatNormalizeInput]{
		{"s2-b1-para-default-ungated", spec.ServingChatNormalizeInput{Endpoint: "chat", Request: json.RawMessage(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`), ContextLen: 32768}},
		{"s2-b3-string-image-url-rejected", spec.ServingChatNormalizeInput{Endpoint: "chat", ContextLen: 32768,
			Request: json.RawMessage(`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":"https://x/y.png"}]}]}`)}},
	}
}

func compactJSON(raw []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return nil
	}
	return b.Bytes()
}

// hasStringImageURL is true when some message part is a string image_url (S2.7).
func hasStringImageURL(req json.RawMessage) bool {
	found := false
	gjson.GetBytes(req, "messages").ForEach(func(_, m gjson.Result) bool {
		m.Get("content").ForEach(func(_, p gjson.Result) bool {
			if p.Get("type").String() == "image_url" && p.Get("image_url").Type == gjson.String {
				found = true
			}
			return !found
		})
		return !found
	})
	return found
}

func flagsOff(f spec.CompatFlags) bool {
	return f.ParaChatDefaultMaxTokens == nil && !f.NormalizeToolChoice && !f.FlattenToolRoleContent
}

func chatFlagsOffIdentity(_ spec.Limits, in spec.ServingChatNormalizeInput, out spec.ServingChatNormalizeOutput) error {
	if !flagsOff(in.Flags) || out.Status != 200 || hasStringImageURL(in.Request) {
		return nil
	}
	if got, want := compactJSON(out.Request), compactJSON(in.Request); !bytes.Equal(got, want) || out.SoftMaxTokens {
		return fmt.Errorf("every flag off: request changed\n got %s\nwant %s", got, want)
	}
	return nil
}

// topMembers lists a document's top-level (key, compact value) pairs in order.
func topMembers(raw []byte) [][2]string {
	var ms [][2]string
	gjson.ParseBytes(raw).ForEach(func(k, v gjson.Result) bool {
		ms = append(ms, [2]string{k.Str, string(compactJSON([]byte(v.Raw)))})
		return true
	})
	return ms
}

var editedMembers = map[string]bool{"messages": true, "tool_choice": true, "max_tokens": true}

func chatOthersUntouched(_ spec.Limits, in spec.ServingChatNormalizeInput, out spec.ServingChatNormalizeOutput) error {
	if out.Status != 200 {
		return nil
	}
	before, after := topMembers(in.Request), topMembers(out.Request)
	if len(after) < len(before) {
		return fmt.Errorf("members dropped: %d before, %d after", len(before), len(after))
	}
	for i, m := range before {
		if after[i][0] != m[0] {
			return fmt.Errorf("member %d is %q, was %q: order changed", i, after[i][0], m[0])
		}
		if !editedMembers[m[0]] && after[i][1] != m[1] {
			return fmt.Errorf("member %q changed from %s to %s", m[0], m[1], after[i][1])
		}
	}
	for _, m := range after[len(before):] {
		if m[0] != "tool_choice" && m[0] != "max_tokens" {
			return fmt.Errorf("member %q appended; only tool_choice and max_tokens may be", m[0])
		}
	}
	return nil
}

func chatToolChoiceIdempotent(lim spec.Limits, in spec.ServingChatNormalizeInput, out spec.ServingChatNormalizeOutput) error {
	if out.Status != 200 || in.Endpoint != spec.EndpointChat || !in.Flags.NormalizeToolChoice {
		return nil
	}
	tc := lastTop(out.Request, "tool_choice")
	switch {
	case tc.Raw == `"none"` || tc.Raw == `"auto"` || tc.Raw == `"required"`:
	case tc.IsObject() && string(compactJSON([]byte(tc.Raw))) == ref.NamedToolChoice(tc.Get("function.name").String()):
	default:
		return fmt.Errorf("tool_choice %s is not canonical", tc.Raw)
	}
	again := in
	again.Request = out.Request
	out2, err := ref.ServingChatNormalize(lim, again)
	if err != nil || out2.Status != 200 || !bytes.Equal(compactJSON(out2.Request), compactJSON(out.Request)) {
		return fmt.Errorf("normalizing the output again changed it: %s", out2.Request)
	}
	return nil
}

func chatSoftRule(_ spec.Limits, in spec.ServingChatNormalizeInput, out spec.ServingChatNormalizeOutput) error {
	if out.Status != 200 {
		return nil
	}
	before, after := lastTop(in.Request, "max_tokens"), lastTop(out.Request, "max_tokens")
	if !out.SoftMaxTokens {
		if before.Raw != after.Raw {
			return fmt.Errorf("max_tokens changed from %q to %q without the soft default", before.Raw, after.Raw)
		}
		return nil
	}
	d := in.Flags.ParaChatDefaultMaxTokens
	if d == nil || in.Endpoint != spec.EndpointChat {
		return fmt.Errorf("max_tokens injected with --para-chat-default-max-tokens unset")
	}
	want := *d
	if n := in.PromptTokens; n != nil && *n+*d >= in.ContextLen && in.ContextLen-*n-1 >= 1 {
		want = in.ContextLen - *n - 1
	}
	if after.Int() != want || lastTop(in.Request, "max_completion_tokens").Type != gjson.Null || (before.Exists() && before.Type != gjson.Null) {
		return fmt.Errorf("soft max_tokens = %s, want %d (client values are never changed)", after.Raw, want)
	}
	return nil
}

func chatNoStringImageURL(_ spec.Limits, in spec.ServingChatNormalizeInput, out spec.ServingChatNormalizeOutput) error {
	if out.Status == 200 && in.Endpoint == spec.EndpointChat && hasStringImageURL(out.Request) {
		return fmt.Errorf("a string image_url part is left in %s", out.Request)
	}
	return nil
}

func chatToolFlattened(_ spec.Limits, in spec.ServingChatNormalizeInput, out spec.ServingChatNormalizeOutput) error {
	if out.Status != 200 || in.Endpoint != spec.EndpointChat || !in.Flags.FlattenToolRoleContent {
		return nil
	}
	var err error
	gjson.GetBytes(out.Request, "messages").ForEach(func(_, m gjson.Result) bool {
		if c := m.Get("content"); m.Get("role").Raw == `"tool"` && c.Exists() && c.Type != gjson.String {
			err = fmt.Errorf("tool message content %s is not a string", c.Raw)
		}
		return err == nil
	})
	return err
}

// lastTop is the last top-level member named key (Python's json.loads keeps the last).
func lastTop(raw []byte, key string) gjson.Result {
	var r gjson.Result
	gjson.ParseBytes(raw).ForEach(func(k, v gjson.Result) bool {
		if k.Str == key {
			r = v
		}
		return true
	})
	return r
}
