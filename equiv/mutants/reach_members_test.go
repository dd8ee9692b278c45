package mutants

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/spec"
)

// The reach class of members the spec allows but does not name: a JSON
// object or a msgpack map (or array tail) that carries them, everywhere
// the spec allows them. Each plant is a parser that trips on them at one
// place only (drops them when it re-serializes, ignores the object that
// carries them, or refuses it); the suite must produce an unnamed member
// at every place and see the difference.

// jsonNode is parsed JSON that keeps member order and the raw bytes of
// every key and scalar, so that a rebuilt document differs from the
// original only where a plant edits it (and in whitespace).
type jsonNode struct {
	raw  []byte // a scalar's bytes
	obj  []jsonMember
	arr  []*jsonNode
	kind byte // 'o', 'a' or 's'
}

type jsonMember struct {
	key    string // decoded
	rawKey []byte
	val    *jsonNode
}

func parseJSON(data []byte) (*jsonNode, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := parseJSONValue(dec, data)
	if err == nil && dec.More() {
		err = fmt.Errorf("trailing data")
	}
	return n, err
}

func parseJSONValue(dec *json.Decoder, data []byte) (*jsonNode, error) {
	start := dec.InputOffset()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		n := &jsonNode{kind: 'o'}
		for dec.More() {
			ks := dec.InputOffset()
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			rawKey := bytes.TrimLeft(data[ks:dec.InputOffset()], " \t\r\n,")
			v, err := parseJSONValue(dec, data)
			if err != nil {
				return nil, err
			}
			n.obj = append(n.obj, jsonMember{key: kt.(string), rawKey: rawKey, val: v})
		}
		_, err = dec.Token()
		return n, err
	case json.Delim('['):
		n := &jsonNode{kind: 'a'}
		for dec.More() {
			v, err := parseJSONValue(dec, data)
			if err != nil {
				return nil, err
			}
			n.arr = append(n.arr, v)
		}
		_, err = dec.Token()
		return n, err
	}
	return &jsonNode{kind: 's', raw: bytes.TrimLeft(data[start:dec.InputOffset()], " \t\r\n,:")}, nil
}

func (n *jsonNode) bytes() []byte {
	var b bytes.Buffer
	n.write(&b)
	return b.Bytes()
}

func (n *jsonNode) write(b *bytes.Buffer) {
	switch n.kind {
	case 'o':
		b.WriteByte('{')
		for i, m := range n.obj {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(m.rawKey)
			b.WriteByte(':')
			m.val.write(b)
		}
		b.WriteByte('}')
	case 'a':
		b.WriteByte('[')
		for i, v := range n.arr {
			if i > 0 {
				b.WriteByte(',')
			}
			v.write(b)
		}
		b.WriteByte(']')
	default:
		b.Write(n.raw)
	}
}

// walk calls visit on every object of n with its path: "$" for the top,
// "<path>.<key>" for a member's value, "<path>[]" for an element.
func (n *jsonNode) walk(path string, visit func(path string, obj *jsonNode)) {
	switch n.kind {
	case 'o':
		visit(path, n)
		for _, m := range n.obj {
			m.val.walk(path+"."+m.key, visit)
		}
	case 'a':
		for _, v := range n.arr {
			v.walk(path+"[]", visit)
		}
	}
}

// unnamed reports whether obj has a member whose key is not in named.
func (n *jsonNode) unnamed(named []string) bool {
	return slices.ContainsFunc(n.obj, func(m jsonMember) bool { return !slices.Contains(named, m.key) })
}

// editJSON rebuilds doc with edit applied to every object at path; doc
// is returned unchanged when it is not JSON or no object there matches.
func editJSON(doc json.RawMessage, path string, edit func(obj *jsonNode) bool) json.RawMessage {
	root, err := parseJSON(doc)
	if err != nil {
		return doc
	}
	changed := false
	root.walk("$", func(p string, obj *jsonNode) {
		if p == path && edit(obj) {
			changed = true
		}
	})
	if !changed {
		return doc
	}
	return root.bytes()
}

// chatPlaces are the objects of a chat request (docs/spec/admission-
// serving.md S2.2-S2.4, S2.7, and the OpenAI request they edit) with the
// members the spec or the OpenAI schema names there; any other member is
// allowed and must ride along untouched.
var chatPlaces = []struct {
	path  string
	named []string
}{
	{"$", []string{"model", "messages", "tools", "tool_choice", "max_tokens", "max_completion_tokens", "temperature", "stream"}},
	{"$.messages[]", []string{"role", "content", "tool_call_id", "name"}},
	{"$.messages[].content[]", []string{"type", "text", "image_url"}},
	{"$.messages[].content[].image_url", []string{"url", "detail"}},
	{"$.tools[]", []string{"type", "function"}},
	{"$.tools[].function", []string{"name", "description", "parameters", "strict"}},
	{"$.tool_choice", []string{"type", "function", "name"}},
	{"$.tool_choice.function", []string{"name"}},
}

// chatDropsUnnamed is fast's serving.chat_normalize with a parser that
// drops the unnamed members of the objects at path.
func chatDropsUnnamed(path string, named []string) catalog.Func[spec.ServingChatNormalizeInput, spec.ServingChatNormalizeOutput] {
	return func(lim spec.Limits, in spec.ServingChatNormalizeInput) (spec.ServingChatNormalizeOutput, error) {
		in.Request = editJSON(in.Request, path, func(obj *jsonNode) bool {
			n := len(obj.obj)
			obj.obj = slices.DeleteFunc(obj.obj, func(m jsonMember) bool { return !slices.Contains(named, m.key) })
			return len(obj.obj) != n
		})
		return fast.ServingChatNormalize(lim, in)
	}
}

// glmPlaces are the objects of a GLM tools list (S2.8 reads a tool's
// function name and its parameters' property types) with their named
// members, and what a parser tripping on an unnamed member there loses.
var glmPlaces = []struct {
	path  string
	named []string
}{
	{"$[]", []string{"type", "function"}},
	{"$[].function", []string{"name", "description", "parameters", "strict"}},
	{"$[].function.parameters", []string{"type", "properties", "required"}},
	{"$[].function.parameters.properties.*", []string{"type", "description"}},
}

// glmIgnoresUnnamed is fast's serving.glm_tool_args with a tools parser
// that ignores an object at path carrying an unnamed member: its content
// is emptied (a tool or function so ignored loses its name, parameters
// and property schemas their types).
func glmIgnoresUnnamed(path string, named []string) catalog.Func[spec.ServingGLMToolArgsInput, spec.ServingGLMToolArgsOutput] {
	return func(lim spec.Limits, in spec.ServingGLMToolArgsInput) (spec.ServingGLMToolArgsOutput, error) {
		if len(in.Tools) > 0 {
			root, err := parseJSON(in.Tools)
			if err == nil {
				changed := false
				root.walk("$", func(p string, obj *jsonNode) {
					if glmPathMatches(p, path) && obj.unnamed(named) {
						obj.obj, changed = nil, true
					}
				})
				if changed {
					in.Tools = root.bytes()
				}
			}
		}
		return fast.ServingGLMToolArgs(lim, in)
	}
}

// glmPathMatches matches a walk path against a place whose last segment
// may be "*" (any property name).
func glmPathMatches(p, place string) bool {
	const props = "$[].function.parameters.properties."
	if place == props+"*" {
		name, ok := strings.CutPrefix(p, props)
		return ok && name != "" && !strings.ContainsAny(name, ".[")
	}
	return p == place
}

// TestReachMembersTheSpecAllowsButDoesNotName: every object S2 edits or
// reads, and every event map, array tail and batch of kv-events.md §1.4
// rule 3 ("unknown keys are ignored; extra trailing positions are
// ignored"), carries an unnamed member in some generated or table case,
// and a parser that trips on it there is caught.
func TestReachMembersTheSpecAllowsButDoesNotName(t *testing.T) {
	chat := reachClass[spec.ServingChatNormalizeInput, spec.ServingChatNormalizeOutput]{spec: equiv.ServingChatNormalize()}
	for _, pl := range chatPlaces {
		chat.plants = append(chat.plants, reachPlant[spec.ServingChatNormalizeInput, spec.ServingChatNormalizeOutput]{
			name: "fast: chat drops unnamed members at " + pl.path, fn: chatDropsUnnamed(pl.path, pl.named)})
	}
	chat.run(t)

	glm := reachClass[spec.ServingGLMToolArgsInput, spec.ServingGLMToolArgsOutput]{spec: equiv.ServingGLMToolArgs()}
	for _, pl := range glmPlaces {
		glm.plants = append(glm.plants, reachPlant[spec.ServingGLMToolArgsInput, spec.ServingGLMToolArgsOutput]{
			name: "fast: GLM tools parser ignores an object with unnamed members at " + pl.path, fn: glmIgnoresUnnamed(pl.path, pl.named)})
	}
	glm.run(t)

	dec := reachClass[spec.KVEvDecodeInput, spec.KVEvDecodeOutput]{spec: equiv.KVEvDecode()}
	for _, pl := range kvPlaces {
		dec.plants = append(dec.plants, reachPlant[spec.KVEvDecodeInput, spec.KVEvDecodeOutput]{
			name: "fast: the decoder refuses unnamed members in " + pl.name, fn: kvRefusesUnnamed(pl.name, pl.has)})
	}
	dec.run(t)
}

// kvPlaces are the places §1.4 rule 3 and §1.3 allow members they do not
// name, each with a test for one in a decoded batch.
var kvPlaces = []struct {
	name string
	has  func(batch any) bool
}{
	{"a form-B BlockStored", kvMapEvent(spec.EventStored)},
	{"a form-B BlockRemoved", kvMapEvent(spec.EventRemoved)},
	{"a form-B AllBlocksCleared", kvMapEvent(spec.EventCleared)},
	{"a form-A BlockStored's tail", kvArrayEvent(spec.EventStored, 12)},
	{"a form-A BlockRemoved's tail", kvArrayEvent(spec.EventRemoved, 4)},
	{"a form-A AllBlocksCleared's tail", kvArrayEvent(spec.EventCleared, 1)},
	{"a map-shaped batch", func(b any) bool {
		m, ok := b.(map[string]any)
		return ok && slices.ContainsFunc(mapKeys(m), func(k string) bool {
			return !slices.Contains([]string{"ts", "events", "data_parallel_rank", "publisher_id"}, k)
		})
	}},
	{"an array batch's tail", func(b any) bool {
		a, ok := b.([]any)
		return ok && len(a) > 4
	}},
}

var kvFieldNames = map[string][]string{
	spec.EventStored:  {"type", "block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium", "lora_name", "extra_keys", "group_idx", "kv_cache_spec_kind", "kv_cache_spec_sliding_window"},
	spec.EventRemoved: {"type", "block_hashes", "medium", "group_idx"},
	spec.EventCleared: {"type"},
}

func mapKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// kvEvents is a decoded batch's events, nil when it has none.
func kvEvents(b any) []any {
	switch b := b.(type) {
	case []any:
		if len(b) >= 2 {
			evs, _ := b[1].([]any)
			return evs
		}
	case map[string]any:
		evs, _ := b["events"].([]any)
		return evs
	}
	return nil
}

// kvMapEvent: some form-B event tagged tag has a key §1.4 does not name.
func kvMapEvent(tag string) func(any) bool {
	return func(b any) bool {
		return slices.ContainsFunc(kvEvents(b), func(e any) bool {
			m, ok := e.(map[string]any)
			return ok && m["type"] == tag && slices.ContainsFunc(mapKeys(m), func(k string) bool { return !slices.Contains(kvFieldNames[tag], k) })
		})
	}
}

// kvArrayEvent: some form-A event tagged tag is longer than its n fields.
func kvArrayEvent(tag string, n int) func(any) bool {
	return func(b any) bool {
		return slices.ContainsFunc(kvEvents(b), func(e any) bool {
			a, ok := e.([]any)
			return ok && len(a) > n && a[0] == tag
		})
	}
}

// kvRefusesUnnamed is fast's kvev.decode refusing a message it accepts
// when has finds an unnamed member at its place.
func kvRefusesUnnamed(place string, has func(any) bool) catalog.Func[spec.KVEvDecodeInput, spec.KVEvDecodeOutput] {
	return func(lim spec.Limits, in spec.KVEvDecodeInput) (spec.KVEvDecodeOutput, error) {
		out, err := fast.KVEvDecode(lim, in)
		if err != nil || len(in.Frames) != 3 {
			return out, err
		}
		var batch any
		if msgpack.Unmarshal(in.Frames[2], &batch) != nil || !has(batch) {
			return out, err
		}
		return spec.KVEvDecodeOutput{}, spec.Reject(spec.ErrEventShape, "events", place, "only the members §1.4 names")
	}
}
