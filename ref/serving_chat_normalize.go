package ref

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/kvtwin/kvtwin/spec"
)

// checkCompatFlags is the startup validation of S2.10; field is the JSON
// path prefix of the flags.
func checkCompatFlags(field string, f spec.CompatFlags) error {
	if d := f.ParaChatDefaultMaxTokens; d != nil && *d < 1 {
		return spec.Reject(spec.ErrBadFlag, field+".para_chat_default_max_tokens", *d, ">= 1 (--para-chat-default-max-tokens)")
	}
	switch f.Family {
	case "", spec.FamilyNone, spec.FamilyGLM, spec.FamilyKimi:
		return nil
	}
	return spec.Reject(spec.ErrBadFlag, field+".openai_compat_family", f.Family, "one of none, glm, kimi (--openai-compat-family)")
}

// CheckChatNormalize validates the op's own input (not the client's
// request, whose faults are 400 outputs): endpoint, request object,
// numbers, flags.
func CheckChatNormalize(in spec.ServingChatNormalizeInput) error {
	if in.Endpoint != spec.EndpointChat && in.Endpoint != spec.EndpointCompletions {
		return spec.Reject(spec.ErrBadEnum, "endpoint", in.Endpoint, `"chat" or "completions"`)
	}
	if in.ContextLen < 1 {
		return spec.Reject(spec.ErrPoolTooSmall, "context_len", in.ContextLen, ">= 1")
	}
	if in.PromptTokens != nil && *in.PromptTokens < 0 {
		return spec.Reject(spec.ErrNegative, "prompt_tokens", *in.PromptTokens, ">= 0 (input token count must be >= 0)")
	}
	return checkCompatFlags("flags", in.Flags)
}

// badRequest is a client fault: the layer answers 400 with msg.
type badRequest struct{ msg string }

func (b *badRequest) Error() string { return b.msg }

// ToolChoiceStringError is S2.3 rule 3's message for s.
func ToolChoiceStringError(s string) string {
	return `tool_choice "` + s + `" is not one of auto, none, required, any or a tool name`
}

// ToolChoiceTypeError is S2.3 rule 4's message for a type other than "function".
func ToolChoiceTypeError(t string) string {
	return `tool_choice.type must be "function", got "` + t + `"`
}

// ToolChoiceNameError is S2.3 rule 4's message for an unknown function.
func ToolChoiceNameError(n string) string {
	return `tool_choice names function "` + n + `" which is not in tools`
}

// ToolChoiceShapeError is the message for a tool_choice that is neither a
// string nor an object naming a function (normalization on).
func ToolChoiceShapeError(kind string) string {
	return "tool_choice must be a string or an object naming a function, got " + kind
}

// ToolPartError is S2.4's message for a non-text part.
func ToolPartError(i, j int, typ string) string {
	return fmt.Sprintf(`messages[%d].content[%d]: tool message parts must be text, got "%s"`, i, j, typ)
}

// ToolContentError is the message for tool content that is neither null, a string nor a list.
func ToolContentError(i int) string {
	return fmt.Sprintf("messages[%d].content: tool message content must be a string, a list of text parts or null", i)
}

// ImageURLError is S2.7's message.
func ImageURLError(i, j int) string {
	return fmt.Sprintf(`messages[%d].content[%d].image_url must be a non-empty URL string or an object with "url"`, i, j)
}

// NamedToolChoice is the canonical named form of S2.3 for function name.
func NamedToolChoice(name string) string {
	return `{"type":"function","function":{"name":` + JSONString(name) + `}}`
}

// ImageURLObject is S2.7's object form for a string URL given as its raw
// JSON literal (kept as written).
func ImageURLObject(rawURL string) string { return `{"url":` + rawURL + `,"detail":"auto"}` }

// SoftMaxTokens is S2.2: the injected default d, lowered after
// tokenization to context_len - n - 1 when n + d >= context_len and that
// is >= 1. n < 0 means "not tokenized yet".
func SoftMaxTokens(d, n, contextLen int64) int64 {
	if n < 0 || d < contextLen-n {
		return d
	}
	if lowered := contextLen - n - 1; lowered >= 1 {
		return lowered
	}
	return d
}

// PartTypeName is the <type> of S2.4's message: a part's "type" when it is
// a string, "missing" when absent, else the JSON kind of the value (or of
// the part itself when it is not an object).
func PartTypeName(partKind, typeKind, typeString string) string {
	switch {
	case partKind != "object":
		return partKind
	case typeKind == "":
		return "missing"
	case typeKind == "string":
		return typeString
	}
	return typeKind
}

// ServingChatNormalize is serving.chat_normalize (docs/spec/admission-serving.md S2.2–S2.4,
// S2.7): the request edited member by member; a client fault is a 400 output.
// Order: messages' shape, tools, tool_choice, then each message in order,
// then the max_tokens default.
func ServingChatNormalize(_ spec.Limits, in spec.ServingChatNormalizeInput) (spec.ServingChatNormalizeOutput, error) {
	if err := CheckChatNormalize(in); err != nil {
		return spec.ServingChatNormalizeOutput{}, err
	}
	doc, ok := parseObject(in.Request)
	if !ok {
		return spec.ServingChatNormalizeOutput{}, spec.Reject(spec.ErrNotJSONObject, "request", jsonKindOrInvalid(in.Request), "a JSON object")
	}
	if in.Endpoint == spec.EndpointCompletions {
		return spec.ServingChatNormalizeOutput{Status: 200, Request: doc.encode()}, nil
	}
	doc, soft, err := normalizeChat(doc, in)
	if err != nil {
		return spec.ServingChatNormalizeOutput{Status: spec.StatusBadRequest, Message: err.Error()}, nil
	}
	return spec.ServingChatNormalizeOutput{Status: 200, Request: doc.encode(), SoftMaxTokens: soft}, nil
}

func jsonKindOrInvalid(raw json.RawMessage) string {
	if !json.Valid(raw) {
		return "invalid JSON"
	}
	return jsonKind(raw)
}

func normalizeChat(doc jsonObject, in spec.ServingChatNormalizeInput) (jsonObject, bool, error) {
	msgs, ok := parseArray(doc.get("messages"))
	if !ok {
		return nil, false, &badRequest{spec.MsgMessagesNotList}
	}
	nTools, names, err := toolNames(doc.get("tools"))
	if err != nil {
		return nil, false, err
	}
	if tc, err := normalizeToolChoice(doc.get("tool_choice"), nTools, names, in.Flags.NormalizeToolChoice); err != nil {
		return nil, false, err
	} else if tc != nil {
		doc = doc.set("tool_choice", tc)
	}
	changed := false
	for i, m := range msgs {
		nm, err := normalizeMessage(i, m, in.Flags.FlattenToolRoleContent)
		if err != nil {
			return nil, false, err
		}
		if nm != nil {
			msgs[i], changed = nm, true
		}
	}
	if changed {
		doc = doc.set("messages", encodeArray(msgs))
	}
	d := in.Flags.ParaChatDefaultMaxTokens
	if d == nil || !IsAbsentOrNull(doc.get("max_tokens")) || !IsAbsentOrNull(doc.get("max_completion_tokens")) {
		return doc, false, nil
	}
	n := int64(-1)
	if in.PromptTokens != nil {
		n = *in.PromptTokens
	}
	v := SoftMaxTokens(*d, n, in.ContextLen)
	return doc.set("max_tokens", json.RawMessage(strconv.FormatInt(v, 10))), true, nil
}

// toolNames returns the number of tools and tools[i].function.name for
// every tool that has a string name, in order; tools must be absent, null
// or a list.
func toolNames(raw json.RawMessage) (int, []string, error) {
	if IsAbsentOrNull(raw) {
		return 0, nil, nil
	}
	tools, ok := parseArray(raw)
	if !ok {
		return 0, nil, &badRequest{spec.MsgToolsNotList}
	}
	names := []string{}
	for _, t := range tools {
		obj, ok := parseObject(t)
		if !ok {
			continue
		}
		fn, ok := parseObject(obj.get("function"))
		if !ok {
			continue
		}
		if name := fn.get("name"); jsonKind(name) == "string" {
			names = append(names, decodeString(name))
		}
	}
	return len(tools), names, nil
}

// normalizeToolChoice returns the new tool_choice value, or nil to leave
// the member as it is (S2.3; flag off: upstream validation only).
func normalizeToolChoice(raw json.RawMessage, nTools int, names []string, on bool) (json.RawMessage, error) {
	if !on {
		return nil, upstreamToolChoice(raw)
	}
	if nTools == 0 {
		return json.RawMessage(`"none"`), nil
	}
	switch jsonKind(raw) {
	case "", "null":
		return json.RawMessage(`"auto"`), nil
	case "string":
		return toolChoiceString(decodeString(raw), names)
	case "object":
		return toolChoiceObject(raw, names)
	}
	return nil, &badRequest{ToolChoiceShapeError(jsonKind(raw))}
}

func toolChoiceString(s string, names []string) (json.RawMessage, error) {
	t := strings.TrimSpace(s)
	switch strings.ToLower(t) {
	case "auto", "none", "required":
		return json.RawMessage(`"` + strings.ToLower(t) + `"`), nil
	case "any":
		return json.RawMessage(`"required"`), nil
	}
	if countName(names, t) == 1 {
		return json.RawMessage(NamedToolChoice(t)), nil
	}
	return nil, &badRequest{ToolChoiceStringError(s)}
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

func toolChoiceObject(raw json.RawMessage, names []string) (json.RawMessage, error) {
	obj, _ := parseObject(raw)
	if t := obj.get("type"); t != nil {
		if string(t) != `"function"` {
			return nil, &badRequest{ToolChoiceTypeError(typeText(t))}
		}
	}
	nameRaw := obj.get("name")
	if fn, ok := parseObject(obj.get("function")); ok {
		nameRaw = fn.get("name")
	}
	if jsonKind(nameRaw) != "string" {
		return nil, &badRequest{ToolChoiceShapeError("an object without a function name")}
	}
	name := decodeString(nameRaw)
	if countName(names, name) == 0 {
		return nil, &badRequest{ToolChoiceNameError(name)}
	}
	return json.RawMessage(NamedToolChoice(name)), nil
}

// typeText is how a bad "type" value appears in its message: a string's
// text, else its JSON literal.
func typeText(t json.RawMessage) string {
	if jsonKind(t) == "string" {
		return decodeString(t)
	}
	return string(t)
}

// upstreamToolChoice is upstream's validation with normalization off: the
// three strings or the canonical object only.
func upstreamToolChoice(raw json.RawMessage) error {
	switch jsonKind(raw) {
	case "", "null":
		return nil
	case "string":
		switch decodeString(raw) {
		case "none", "auto", "required":
			return nil
		}
	case "object":
		obj, _ := parseObject(raw)
		fn, ok := parseObject(obj.get("function"))
		if string(obj.get("type")) == `"function"` && ok && jsonKind(fn.get("name")) == "string" {
			return nil
		}
	}
	return &badRequest{spec.MsgUpstreamToolChoice}
}

// normalizeMessage returns message i rewritten, or nil when unchanged:
// tool-role flattening (flag on) or string image_url parts (always).
func normalizeMessage(i int, raw json.RawMessage, flatten bool) (json.RawMessage, error) {
	msg, ok := parseObject(raw)
	if !ok {
		return nil, nil // not ours to validate
	}
	content := msg.get("content")
	if flatten && string(msg.get("role")) == `"tool"` {
		flat, err := flattenToolContent(i, content)
		if err != nil || flat == nil {
			return nil, err
		}
		return msg.set("content", flat).encode(), nil
	}
	parts, ok := parseArray(content)
	if !ok {
		return nil, nil
	}
	changed := false
	for j, p := range parts {
		np, err := normalizeImagePart(i, j, p)
		if err != nil {
			return nil, err
		}
		if np != nil {
			parts[j], changed = np, true
		}
	}
	if !changed {
		return nil, nil
	}
	return msg.set("content", encodeArray(parts)).encode(), nil
}

// flattenToolContent is S2.4 for one tool message's content; nil means unchanged.
func flattenToolContent(i int, content json.RawMessage) (json.RawMessage, error) {
	switch jsonKind(content) {
	case "", "string":
		return nil, nil
	case "null":
		return json.RawMessage(`""`), nil
	case "array":
	default:
		return nil, &badRequest{ToolContentError(i)}
	}
	parts, _ := parseArray(content)
	texts := make([]string, 0, len(parts))
	for j, p := range parts {
		obj, ok := parseObject(p)
		typ, text := json.RawMessage(nil), json.RawMessage(nil)
		if ok {
			typ, text = obj.get("type"), obj.get("text")
		}
		if !ok || string(typ) != `"text"` || jsonKind(text) != "string" {
			return nil, &badRequest{ToolPartError(i, j, PartTypeName(jsonKind(p), jsonKind(typ), typeText(typ)))}
		}
		texts = append(texts, decodeString(text))
	}
	return json.RawMessage(JSONString(strings.Join(texts, "\n"))), nil
}

// normalizeImagePart is S2.7 for one content part; nil means unchanged.
func normalizeImagePart(i, j int, raw json.RawMessage) (json.RawMessage, error) {
	part, ok := parseObject(raw)
	if !ok || string(part.get("type")) != `"image_url"` {
		return nil, nil
	}
	u := part.get("image_url")
	switch jsonKind(u) {
	case "object":
		return nil, nil
	case "string":
		if decodeString(u) != "" {
			return part.set("image_url", json.RawMessage(ImageURLObject(string(u)))).encode(), nil
		}
	}
	return nil, &badRequest{ImageURLError(i, j)}
}
