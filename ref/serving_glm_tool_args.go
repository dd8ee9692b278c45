package ref

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/kvtwin/kvtwin/spec"
)

// GLM tool-call markup (docs/spec/admission-serving.md S2.8).
const (
	pyWhitespace = " \t\n\r\f\v" // Python's ASCII \s, allowed between a key and its value
)

// CheckGLMTools checks that tools is absent, null or a JSON list.
func CheckGLMTools(tools json.RawMessage) error {
	if IsAbsentOrNull(tools) {
		return nil
	}
	if k := jsonKindOrInvalid(tools); k != "array" {
		return spec.Reject(spec.ErrBadEnum, "tools", k, "a JSON list of tools or null")
	}
	return nil
}

// glmSchemaType is the "type" of parameter key of function name in tools
// (the last tool so named; "" when there is no schema or no string type).
func glmSchemaType(tools json.RawMessage, name, key string) string {
	list, _ := parseArray(tools)
	typ := ""
	for _, t := range list {
		obj, _ := parseObject(t)
		fn, _ := parseObject(obj.get("function"))
		if n := fn.get("name"); jsonKind(n) != "string" || decodeString(n) != name {
			continue
		}
		params, _ := parseObject(fn.get("parameters"))
		props, _ := parseObject(params.get("properties"))
		prop, _ := parseObject(props.get(key))
		typ = ""
		if tt := prop.get("type"); jsonKind(tt) == "string" {
			typ = decodeString(tt)
		}
	}
	return typ
}

// ServingGLMToolArgs is serving.glm_tool_args (S2.8): each complete
// <tool_call>…</tool_call> becomes a call whose name is the text up to the
// first newline (or first <arg_key>), trimmed, and whose arguments are the
// <arg_key>K</arg_key> (whitespace) <arg_value>V</arg_value> pairs in order,
// K trimmed and V parsed by ParseGLMArg from its exact bytes. A key not
// followed by a value is skipped; a repeated key keeps its first place and
// its last value (a Python dict). Text outside calls, and an unclosed call,
// is normal text.
func ServingGLMToolArgs(_ spec.Limits, in spec.ServingGLMToolArgsInput) (spec.ServingGLMToolArgsOutput, error) {
	if err := CheckGLMTools(in.Tools); err != nil {
		return spec.ServingGLMToolArgsOutput{}, err
	}
	out := spec.ServingGLMToolArgsOutput{Calls: []spec.GLMToolCall{}}
	var normal strings.Builder
	rest := in.Text
	for {
		before, after, ok := strings.Cut(rest, spec.GLMCallOpen)
		if !ok {
			break
		}
		body, tail, ok := strings.Cut(after, spec.GLMCallClose)
		if !ok {
			break
		}
		normal.WriteString(before)
		out.Calls = append(out.Calls, parseGLMCall(body, in.Tools))
		rest = tail
	}
	normal.WriteString(rest)
	out.NormalText = normal.String()
	return out, nil
}

func parseGLMCall(body string, tools json.RawMessage) spec.GLMToolCall {
	nameEnd := len(body)
	if i := strings.Index(body, "\n"); i >= 0 {
		nameEnd = i
	}
	if i := strings.Index(body, spec.GLMKeyOpen); i >= 0 && i < nameEnd {
		nameEnd = i
	}
	name := strings.TrimSpace(body[:nameEnd])
	var keys []string
	vals := map[string]string{}
	rest := body[nameEnd:]
	for {
		_, afterOpen, ok := strings.Cut(rest, spec.GLMKeyOpen)
		if !ok {
			break
		}
		k, afterKey, ok := strings.Cut(afterOpen, spec.GLMKeyClose)
		if !ok {
			break
		}
		vstart := strings.TrimLeft(afterKey, pyWhitespace)
		if !strings.HasPrefix(vstart, spec.GLMValueOpen) {
			rest = afterKey
			continue
		}
		v, afterVal, ok := strings.Cut(vstart[len(spec.GLMValueOpen):], spec.GLMValueClose)
		if !ok {
			break
		}
		key := strings.TrimSpace(k)
		if _, seen := vals[key]; !seen {
			keys = append(keys, key)
		}
		vals[key] = ParseGLMArg(v, glmSchemaType(tools, name, key))
		rest = afterVal
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(pyJSONString(k, false))
		b.WriteString(": ")
		b.WriteString(vals[k])
	}
	b.WriteByte('}')
	return spec.GLMToolCall{Name: name, Arguments: b.String()}
}

// ParseGLMArg is S2.8's value contract, returning the value as Python's
// json.dumps (ensure_ascii=False) writes it. v is never trimmed: only
// JSON's own insignificant whitespace is ignored when v is valid JSON.
func ParseGLMArg(v, schemaType string) string {
	valid := json.Valid([]byte(v))
	switch schemaType {
	case "string":
		if valid && jsonKind(json.RawMessage(strings.TrimSpace(v))) == "string" {
			return pyDumps(v)
		}
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			return pyJSONString(v[1:len(v)-1], false)
		}
		return pyJSONString(v, false)
	case "number":
		if valid {
			if t := strings.TrimSpace(v); jsonKind(json.RawMessage(t)) == "string" {
				if s := decodeString(json.RawMessage(t)); isDigits(s) {
					return pyDumps(s)
				}
			}
			return pyDumps(v)
		}
		return pyJSONString(v, false)
	}
	if valid {
		return pyDumps(v)
	}
	return pyJSONString(v, false)
}

// isDigits is true for a non-empty string of ASCII digits with an optional leading '-'.
func isDigits(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// pyDumps re-encodes the valid JSON text v as Python's
// json.dumps(json.loads(v), ensure_ascii=False) does: ", " and ": "
// separators, integers exact, floats in repr form (Infinity on overflow),
// a repeated object key at its first place with its last value.
func pyDumps(v string) string {
	dec := json.NewDecoder(strings.NewReader(v))
	dec.UseNumber()
	var b strings.Builder
	pyDumpValue(&b, dec)
	return b.String()
}

func pyDumpValue(b *strings.Builder, dec *json.Decoder) {
	t, err := dec.Token()
	if err != nil {
		return // unreachable: v was validated
	}
	switch x := t.(type) {
	case json.Delim:
		if x == '[' {
			pyDumpArray(b, dec)
		} else {
			pyDumpObject(b, dec)
		}
	case string:
		b.WriteString(pyJSONString(x, false))
	case json.Number:
		b.WriteString(pyNumber(string(x)))
	case bool:
		b.WriteString(map[bool]string{true: "true", false: "false"}[x])
	default:
		b.WriteString("null")
	}
}

func pyDumpArray(b *strings.Builder, dec *json.Decoder) {
	b.WriteByte('[')
	for i := 0; dec.More(); i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		pyDumpValue(b, dec)
	}
	_, _ = dec.Token()
	b.WriteByte(']')
}

func pyDumpObject(b *strings.Builder, dec *json.Decoder) {
	var keys []string
	vals := map[string]string{}
	for dec.More() {
		t, _ := dec.Token()
		k, _ := t.(string)
		var vb strings.Builder
		pyDumpValue(&vb, dec)
		if _, seen := vals[k]; !seen {
			keys = append(keys, k)
		}
		vals[k] = vb.String()
	}
	_, _ = dec.Token()
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(pyJSONString(k, false))
		b.WriteString(": ")
		b.WriteString(vals[k])
	}
	b.WriteByte('}')
}

// pyNumber is a JSON number literal as Python's json round trip writes it:
// an integer literal as the exact integer, anything else as repr(float).
func pyNumber(lit string) string {
	if !strings.ContainsAny(lit, ".eE") {
		n, _ := new(big.Int).SetString(lit, 10)
		return n.String()
	}
	f, _ := strconv.ParseFloat(lit, 64) // out of range gives ±Inf, as float() does
	return pyFloatRepr(f)
}

// pyFloatRepr is Python's repr(float) (and json.dumps of a float): the
// shortest round-tripping digits, fixed notation for 1e-4 <= |f| < 1e16
// with at least one fractional digit, else d.ddde±XX.
func pyFloatRepr(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case math.IsNaN(f):
		return "NaN"
	}
	s := strconv.FormatFloat(f, 'e', -1, 64)
	sign := ""
	if s[0] == '-' {
		sign, s = "-", s[1:]
	}
	mant, expText, _ := strings.Cut(s, "e")
	exp, _ := strconv.Atoi(expText)
	digits := strings.Replace(mant, ".", "", 1)
	decpt := exp + 1
	if decpt > -4 && decpt <= 16 {
		switch {
		case decpt <= 0:
			return sign + "0." + strings.Repeat("0", -decpt) + digits
		case decpt >= len(digits):
			return sign + digits + strings.Repeat("0", decpt-len(digits)) + ".0"
		}
		return sign + digits[:decpt] + "." + digits[decpt:]
	}
	var b bytes.Buffer
	b.WriteString(sign)
	b.WriteByte(digits[0])
	if len(digits) > 1 {
		b.WriteByte('.')
		b.WriteString(digits[1:])
	}
	es := "+"
	if exp < 0 {
		es, exp = "-", -exp
	}
	b.WriteString("e" + es)
	if exp < 10 {
		b.WriteByte('0')
	}
	b.WriteString(strconv.Itoa(exp))
	return b.String()
}
