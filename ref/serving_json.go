package ref

import (
	"bytes"
	"encoding/json"
	"strings"
)

// JSON documents on the serving surface are opaque: the twins read a few
// fields and edit surgically, and everything else passes through in order.
// The ref twin parses one level at a time into ordered members that keep
// each key's and value's exact bytes, and re-emits them plainly. Duplicate
// keys follow Python's json.loads: the last occurrence is the one read and
// the one edited (docs/spec/admission-serving.md §S2.1, amendment).

// jsonMember is one "key": value pair with its key and value bytes as written.
type jsonMember struct {
	key    string // decoded key, for lookup
	rawKey string // the key's literal, quotes and escapes as written
	value  json.RawMessage
}

// jsonObject is an object's members in document order.
type jsonObject []jsonMember

// parseObject splits raw, which must be one JSON object, into its members;
// ok is false when raw is not a JSON object.
func parseObject(raw []byte) (jsonObject, bool) {
	// The kind is read first: a decoder costs about a kilobyte, and a list
	// of a million one-byte non-objects ([1,1,…]) must not cost a gigabyte.
	if jsonKind(raw) != "object" || !json.Valid(raw) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	obj := jsonObject{}
	for dec.More() {
		start := dec.InputOffset()
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		rawKey := strings.TrimLeft(string(raw[start:dec.InputOffset()]), " \t\r\n,")
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		obj = append(obj, jsonMember{key: t.(string), rawKey: rawKey, value: v})
	}
	return obj, true
}

// parseArray splits raw, which must be one JSON array, into its elements.
func parseArray(raw []byte) ([]json.RawMessage, bool) {
	if jsonKind(raw) != "array" { // as in parseObject: no decoder for the other kinds
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return nil, false
	}
	elems := []json.RawMessage{}
	for dec.More() {
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		elems = append(elems, v)
	}
	return elems, true
}

// lookup returns the index of the last member named key, or -1.
func (o jsonObject) lookup(key string) int {
	for i := len(o) - 1; i >= 0; i-- {
		if o[i].key == key {
			return i
		}
	}
	return -1
}

// get returns the value of the last member named key, or nil.
func (o jsonObject) get(key string) json.RawMessage {
	if i := o.lookup(key); i >= 0 {
		return o[i].value
	}
	return nil
}

// set replaces the last member named key in place, or appends it.
func (o jsonObject) set(key string, v json.RawMessage) jsonObject {
	if i := o.lookup(key); i >= 0 {
		o[i].value = v
		return o
	}
	return append(o, jsonMember{key: key, rawKey: JSONString(key), value: v})
}

// encode writes the members back in order.
func (o jsonObject) encode() json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(m.rawKey)
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// encodeArray writes elements back in order.
func encodeArray(elems []json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, e := range elems {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(e)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// jsonKind names a raw JSON value's type like JSONKind, after leading
// whitespace; "" for nil, an absent member.
func jsonKind(raw json.RawMessage) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return ""
	}
	return JSONKind(raw)
}

// decodeString decodes a raw JSON string literal.
func decodeString(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s) // raw is a string literal of a validated document
	return s
}

// JSONString is s as a JSON string literal the way kvtwin's canonical
// encoding writes it (encoding/json without HTML escaping). Every value a
// serving op synthesizes from decoded text (tool names, flattened content)
// is written with it, so both twins emit the same bytes.
func JSONString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// IsAbsentOrNull reports whether a member is missing or JSON null; pydantic
// reads both as None.
func IsAbsentOrNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}
