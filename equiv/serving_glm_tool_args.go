package equiv

import (
	"encoding/json"
	"fmt"
	"strings"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/spec"
)

// ServingGLMToolArgs is the differential spec of serving.glm_tool_args.
func ServingGLMToolArgs() *Spec[spec.ServingGLMToolArgsInput, spec.ServingGLMToolArgsOutput] {
	return &Spec[spec.ServingGLMToolArgsInput, spec.ServingGLMToolArgsOutput]{
		Op:      catalog.ServingGLMToolArgs(),
		Valid:   rapid.Custom(glmValid),
		Invalid: rapid.Custom(glmInvalid),
		Boundary: []Case[spec.ServingGLMToolArgsInput]{
			{"unclosed-call", spec.ServingGLMToolArgsInput{Text: "a<tool_call>run\n<arg_key>code</arg_key><arg_value>x"}},
			{"key-without-value", spec.ServingGLMToolArgsInput{Text: "<tool_call>run<arg_key>a</arg_key>x<arg_key>b</arg_key> <arg_value>1</arg_value></tool_call>"}},
			{"repeated-key", spec.ServingGLMToolArgsInput{Text: "<tool_call>f\n<arg_key>a</arg_key><arg_value>1</arg_value><arg_key>b</arg_key><arg_value>2</arg_value><arg_key>a</arg_key><arg_value>3</arg_value></tool_call>"}},
			{"numbers", spec.ServingGLMToolArgsInput{Text: "<tool_call>f\n<arg_key>a</arg_key><arg_value>1.0</arg_value><arg_key>b</arg_key><arg_value>1e16</arg_value><arg_key>c</arg_key><arg_value>-0</arg_value><arg_key>d</arg_key><arg_value>123456789012345678901234567890</arg_value></tool_call>"}},
			// repr(float)'s other forms: -Infinity, a negative fixed value,
			// 0.00123 (no integer digit), 1.5e+16 (several digits in
			// exponent form), 1e-05 (a negative two-digit exponent); and an
			// object value with two keys.
			{"number-repr-forms", spec.ServingGLMToolArgsInput{Text: "<tool_call>f\n<arg_key>a</arg_key><arg_value>-1e999</arg_value><arg_key>b</arg_key><arg_value>-2.5</arg_value><arg_key>c</arg_key><arg_value>0.00123</arg_value><arg_key>d</arg_key><arg_value>1.5e16</arg_value><arg_key>e</arg_key><arg_value>1e-5</arg_value><arg_key>g</arg_key><arg_value>{\"x\": 1.0, \"y\": [2], \"x\": 3}</arg_value></tool_call>"}},
			// S2.8 rule 1: a single-quoted value of a string key loses its quotes.
			{"string-schema-single-quoted", spec.ServingGLMToolArgsInput{Tools: glmTools(), Text: "<tool_call>run\n<arg_key>code</arg_key><arg_value>'x = 1 '</arg_value></tool_call>"}},
			// A number key's JSON string of digits becomes the number; "-"
			// alone is not digits and stays a string.
			{"number-schema-quoted-digits-and-minus", spec.ServingGLMToolArgsInput{Tools: glmTools(),
				Text: "<tool_call>run\n<arg_key>n</arg_key><arg_value>\"-42\"</arg_value></tool_call><tool_call>run\n<arg_key>n</arg_key><arg_value>\"-\"</arg_value></tool_call>"}},
			// An unclosed key, and a value open without its close, end the call's pairs.
			{"key-close-missing", spec.ServingGLMToolArgsInput{Text: "<tool_call>f\n<arg_key>a<arg_value>1</arg_value></tool_call>"}},
			{"value-close-missing", spec.ServingGLMToolArgsInput{Text: "<tool_call>f\n<arg_key>a</arg_key><arg_value>1</tool_call>"}},
			// Members S2.8 does not name, in the tool, its function, its
			// parameters and a property's schema, change no type (a reach
			// class of issue 30): "42" stays a string for code, becomes 42 for n.
			{"tools-with-unnamed-members-everywhere", spec.ServingGLMToolArgsInput{Tools: glmToolsUnnamed(glmUnnamedAll),
				Text: "<tool_call>run\n<arg_key>code</arg_key><arg_value>42</arg_value><arg_key>n</arg_key><arg_value>\"42\"</arg_value></tool_call>"}},
		},
		Regressions: []Case[spec.ServingGLMToolArgsInput]{
			{"s2-b2-glm-args-stripped", spec.ServingGLMToolArgsInput{Tools: glmTools(),
				Text: "<tool_call>run\n<arg_key>code</arg_key>\n<arg_value>  def f():\n    return 1\n</arg_value>\n</tool_call>"}},
		},
		Props: []Prop[spec.ServingGLMToolArgsInput, spec.ServingGLMToolArgsOutput]{
			{"arguments-are-json-objects", glmArgsJSON},
			{"string-values-keep-their-bytes", glmStringBytes},
		},
	}
}

func glmTools() json.RawMessage {
	return json.RawMessage(`[{"type":"function","function":{"name":"run","parameters":{"type":"object","properties":{"code":{"type":"string"},"n":{"type":"number"},"k":{"type":"integer"},"flag":{"type":"boolean"},"cfg":{"type":"object"}}}}}]`)
}

// The places of a tools list a member S2.8 does not name may sit in.
const (
	glmUnnamedTool = 1 << iota
	glmUnnamedFunction
	glmUnnamedParameters
	glmUnnamedSchema
	glmUnnamedAll = glmUnnamedTool | glmUnnamedFunction | glmUnnamedParameters | glmUnnamedSchema
)

// glmToolsUnnamed is glmTools with members S2.8 does not name (vendor
// extensions, JSON-schema keywords) at the places set in where; each goes
// first in its object, before the members S2.8 reads.
func glmToolsUnnamed(where int) json.RawMessage {
	x := func(bit int, member string) string {
		if where&bit != 0 {
			return member + ","
		}
		return ""
	}
	return json.RawMessage(`[{` + x(glmUnnamedTool, `"x_cache":{"ttl":3}`) + `"type":"function","function":{` + x(glmUnnamedFunction, `"strict_mode":true`) +
		`"name":"run","parameters":{` + x(glmUnnamedParameters, `"additionalProperties":false`) + `"type":"object","properties":{` +
		`"code":{` + x(glmUnnamedSchema, `"minLength":1`) + `"type":"string"},"n":{` + x(glmUnnamedSchema, `"enum":[1,2]`) + `"type":"number"},` +
		`"k":{"type":"integer"},"flag":{"type":"boolean"},"cfg":{"type":"object"}}}}}]`)
}

var glmValues = []string{
	"  def f():\n    return 1\n", " x ", "plain", `"quoted  "`, `'single '`, `  "json string"  `, "42", " 42 ", `"42"`, "1.50", "true",
	`{"a": [1, 2.0, "é"]}`, "[1,2]", "null", "", "\t", "<b>", "1e999", `"\u00e9\n"`, "'", `"`,
}

func glmValid(t *rapid.T) spec.ServingGLMToolArgsInput {
	var b strings.Builder
	for range rapid.IntRange(0, 3).Draw(t, "n_calls") {
		b.WriteString(rapid.SampledFrom([]string{"", "ok ", "thinking…\n", "<tool_"}).Draw(t, "normal"))
		b.WriteString("<tool_call>" + rapid.SampledFrom([]string{"run", " run ", "other", ""}).Draw(t, "name"))
		b.WriteString(rapid.SampledFrom([]string{"\n", "", " \n"}).Draw(t, "name_end"))
		for range rapid.IntRange(0, 4).Draw(t, "n_args") {
			key := rapid.SampledFrom([]string{"code", " n ", "k", "flag", "cfg", "free"}).Draw(t, "key")
			b.WriteString("<arg_key>" + key + "</arg_key>" + rapid.SampledFrom([]string{"\n", "", " \t"}).Draw(t, "gap"))
			b.WriteString("<arg_value>" + rapid.SampledFrom(glmValues).Draw(t, "value") + "</arg_value>\n")
		}
		if rapid.IntRange(0, 6).Draw(t, "unclosed") > 0 {
			b.WriteString("</tool_call>")
		}
	}
	b.WriteString(rapid.SampledFrom([]string{"", " done", "</tool_call>"}).Draw(t, "tail"))
	in := spec.ServingGLMToolArgsInput{Text: b.String()}
	if rapid.Bool().Draw(t, "has_tools") {
		in.Tools = glmTools()
	}
	if in.Tools != nil && rapid.Bool().Draw(t, "unnamed_members") {
		in.Tools = glmToolsUnnamed(rapid.IntRange(1, glmUnnamedAll).Draw(t, "unnamed_places"))
	}
	return in
}

func glmInvalid(t *rapid.T) Bad[spec.ServingGLMToolArgsInput] {
	in := glmValid(t)
	in.Tools = json.RawMessage(rapid.SampledFrom([]string{`{}`, `7`, `"tools"`}).Draw(t, "bad_tools"))
	return Bad[spec.ServingGLMToolArgsInput]{in, spec.ErrBadEnum}
}

func glmArgsJSON(_ spec.Limits, _ spec.ServingGLMToolArgsInput, out spec.ServingGLMToolArgsOutput) error {
	for _, c := range out.Calls {
		var m map[string]any
		if !strings.Contains(c.Arguments, "Infinity") && json.Unmarshal([]byte(c.Arguments), &m) != nil {
			return fmt.Errorf("call %s: arguments %q are not a JSON object", c.Name, c.Arguments)
		}
	}
	return nil
}

// glmStringBytes: for the "code" key of run (schema string), a value that
// is neither JSON nor quoted comes back byte for byte (S2.8 rule 1).
func glmStringBytes(_ spec.Limits, in spec.ServingGLMToolArgsInput, out spec.ServingGLMToolArgsOutput) error {
	if len(in.Tools) == 0 {
		return nil
	}
	for _, c := range out.Calls {
		if c.Name != "run" {
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(c.Arguments), &m) != nil {
			continue
		}
		code, ok := m["code"].(string)
		if !ok {
			continue
		}
		if strings.Contains(in.Text, "<arg_value>"+code+"</arg_value>") {
			continue // the value came back verbatim
		}
		for _, v := range glmValues {
			quoted := len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0]
			if v != code && strings.TrimSpace(v) == code && !json.Valid([]byte(v)) && !quoted &&
				strings.Contains(in.Text, "<arg_value>"+v+"</arg_value>") {
				return fmt.Errorf("code value %q came back as %q: its whitespace was stripped", v, code)
			}
		}
	}
	return nil
}
