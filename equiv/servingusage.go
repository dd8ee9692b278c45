package equiv

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/tidwall/gjson"
	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
)

// ---- serving.usage (S2.6) ----

// Usage is the differential spec of serving.usage.
func Usage() *Spec[ref.UsageInput, ref.Usage] {
	return &Spec[ref.UsageInput, ref.Usage]{
		Op:      catalog.Usage(),
		Valid:   rapid.Custom(usageValid),
		Invalid: rapid.Custom(usageInvalid),
		Boundary: []Case[ref.UsageInput]{
			{"no-choices-glm", ref.UsageInput{Family: ref.FamilyGLM}},
			{"glm-r0-emitted", ref.UsageInput{Family: ref.FamilyGLM, PromptTokens: 3, Choices: []ref.UsageChoice{{CompletionTokens: 5}}}},
			{"glm-replaces-existing-reasoning", ref.UsageInput{Family: ref.FamilyGLM, Choices: []ref.UsageChoice{{CompletionTokens: 5, ReasoningTokens: 2}},
				CompletionTokensDetails: json.RawMessage(`{"reasoning_tokens":9, "accepted_prediction_tokens":1}`)}},
			{"empty-details-glm", ref.UsageInput{Family: ref.FamilyGLM, CompletionTokensDetails: json.RawMessage(` { } `)}},
			{"max-sum", ref.UsageInput{PromptTokens: 1, Choices: []ref.UsageChoice{{CompletionTokens: math.MaxInt64 - 1}}}},
		},
		Regressions: []Case[ref.UsageInput]{
			{"s2-b4-glm-usage-missing-details", ref.UsageInput{Family: ref.FamilyGLM, PromptTokens: 12, Choices: []ref.UsageChoice{{CompletionTokens: 40, ReasoningTokens: 25}}}},
		},
		Props: []Prop[ref.UsageInput, ref.Usage]{
			{"total-is-prompt-plus-completion", usageTotal},
			{"reasoning-within-completion", usageReasoningBounded},
			{"glm-details-merge", usageGLMDetails},
			{"non-glm-details-untouched", usageNonGLM},
		},
	}
}

func usageValid(t *rapid.T) ref.UsageInput {
	in := ref.UsageInput{
		Family:       rapid.SampledFrom([]string{"", ref.FamilyNone, ref.FamilyGLM, ref.FamilyGLM, ref.FamilyKimi}).Draw(t, "family"),
		PromptTokens: rapid.Int64Range(0, 1<<20).Draw(t, "prompt_tokens"),
		Choices:      []ref.UsageChoice{},
	}
	for range rapid.IntRange(0, 4).Draw(t, "n_choices") {
		c := rapid.Int64Range(0, 1<<16).Draw(t, "completion")
		in.Choices = append(in.Choices, ref.UsageChoice{CompletionTokens: c, ReasoningTokens: rapid.Int64Range(0, c).Draw(t, "reasoning")})
	}
	details := []string{"", "null", `{}`, `{"accepted_prediction_tokens":7}`, `{"reasoning_tokens":99,"rejected_prediction_tokens":1}`, `{ "x" : [1, "é"] }`}
	if d := rapid.SampledFrom(details).Draw(t, "completion_details"); d != "" {
		in.CompletionTokensDetails = json.RawMessage(d)
	}
	if d := rapid.SampledFrom([]string{"", "null", `{"cached_tokens":3}`}).Draw(t, "prompt_details"); d != "" {
		in.PromptTokensDetails = json.RawMessage(d)
	}
	return in
}

func usageInvalid(t *rapid.T) Bad[ref.UsageInput] {
	in := usageValid(t)
	if len(in.Choices) == 0 {
		in.Choices = []ref.UsageChoice{{CompletionTokens: 3, ReasoningTokens: 1}}
	}
	i := rapid.IntRange(0, len(in.Choices)-1).Draw(t, "at")
	switch rapid.IntRange(0, 5).Draw(t, "violation") {
	case 0:
		in.Family = rapid.SampledFrom([]string{"glm4", "GLM", "x"}).Draw(t, "bad_family")
		return Bad[ref.UsageInput]{in, ref.ErrBadFlag}
	case 1:
		in.CompletionTokensDetails = json.RawMessage(rapid.SampledFrom([]string{`[]`, `7`, `"x"`}).Draw(t, "bad_details"))
		return Bad[ref.UsageInput]{in, ref.ErrNotJSONObject}
	case 2:
		in.Choices[i].CompletionTokens = rapid.Int64Range(math.MinInt64, -1).Draw(t, "negative")
		return Bad[ref.UsageInput]{in, ref.ErrNegative}
	case 3:
		in.Choices[i].ReasoningTokens = in.Choices[i].CompletionTokens + rapid.Int64Range(1, 9).Draw(t, "excess")
		return Bad[ref.UsageInput]{in, ref.ErrReasoningExceedsCompletion}
	case 4:
		in.Choices = append(in.Choices, ref.UsageChoice{CompletionTokens: math.MaxInt64})
		in.Choices[0].CompletionTokens, in.Choices[0].ReasoningTokens = 1, 0
		return Bad[ref.UsageInput]{in, ref.ErrOverflow}
	}
	in.PromptTokens = rapid.Int64Range(math.MinInt64, -1).Draw(t, "negative_prompt")
	return Bad[ref.UsageInput]{in, ref.ErrNegative}
}

func usageTotal(_ ref.Limits, in ref.UsageInput, u ref.Usage) error {
	var c int64
	for _, ch := range in.Choices {
		c += ch.CompletionTokens
	}
	if u.CompletionTokens != c || u.TotalTokens != u.PromptTokens+u.CompletionTokens || u.PromptTokens != in.PromptTokens {
		return fmt.Errorf("usage %+v: total must be prompt + completion, completion the sum %d", u, c)
	}
	return nil
}

func usageReasoningBounded(_ ref.Limits, in ref.UsageInput, u ref.Usage) error {
	var r int64
	for _, ch := range in.Choices {
		r += ch.ReasoningTokens
	}
	if u.ReasoningTokens != r || u.ReasoningTokens < 0 || u.ReasoningTokens > u.CompletionTokens {
		return fmt.Errorf("reasoning_tokens %d: want the sum %d, within [0, completion_tokens=%d]", u.ReasoningTokens, r, u.CompletionTokens)
	}
	return nil
}

func usageGLMDetails(_ ref.Limits, in ref.UsageInput, u ref.Usage) error {
	if in.Family != ref.FamilyGLM {
		return nil
	}
	d := gjson.ParseBytes(u.CompletionTokensDetails)
	if !d.IsObject() || d.Get("reasoning_tokens").Raw != fmt.Sprint(u.ReasoningTokens) {
		return fmt.Errorf("glm: completion_tokens_details %s must carry reasoning_tokens = %d", u.CompletionTokensDetails, u.ReasoningTokens)
	}
	var err error
	if prev := gjson.ParseBytes(in.CompletionTokensDetails); prev.IsObject() {
		prev.ForEach(func(k, v gjson.Result) bool {
			if k.Str != "reasoning_tokens" && string(compactJSON([]byte(d.Get(gjsonEscape(k.Str)).Raw))) != string(compactJSON([]byte(v.Raw))) {
				err = fmt.Errorf("glm: existing detail %q was not kept", k.Str)
			}
			return err == nil
		})
	}
	return err
}

func gjsonEscape(k string) string {
	r := strings.NewReplacer(".", `\.`, "*", `\*`, "?", `\?`)
	return r.Replace(k)
}

func usageNonGLM(_ ref.Limits, in ref.UsageInput, u ref.Usage) error {
	if in.Family == ref.FamilyGLM {
		return nil
	}
	want := in.CompletionTokensDetails
	if ref.IsAbsentOrNull(want) {
		want = nil
	}
	if string(compactJSON(u.CompletionTokensDetails)) != string(compactJSON(want)) {
		return fmt.Errorf("family %q: completion_tokens_details changed to %s", in.Family, u.CompletionTokensDetails)
	}
	return nil
}

// ---- serving.glm_tool_args (S2.8) ----

// GLMToolArgs is the differential spec of serving.glm_tool_args.
func GLMToolArgs() *Spec[ref.GLMToolArgsInput, ref.GLMToolArgsOutput] {
	return &Spec[ref.GLMToolArgsInput, ref.GLMToolArgsOutput]{
		Op:      catalog.GLMToolArgs(),
		Valid:   rapid.Custom(glmValid),
		Invalid: rapid.Custom(glmInvalid),
		Boundary: []Case[ref.GLMToolArgsInput]{
			{"unclosed-call", ref.GLMToolArgsInput{Text: "a<tool_call>run\n<arg_key>code</arg_key><arg_value>x"}},
			{"key-without-value", ref.GLMToolArgsInput{Text: "<tool_call>run<arg_key>a</arg_key>x<arg_key>b</arg_key> <arg_value>1</arg_value></tool_call>"}},
			{"repeated-key", ref.GLMToolArgsInput{Text: "<tool_call>f\n<arg_key>a</arg_key><arg_value>1</arg_value><arg_key>b</arg_key><arg_value>2</arg_value><arg_key>a</arg_key><arg_value>3</arg_value></tool_call>"}},
			{"numbers", ref.GLMToolArgsInput{Text: "<tool_call>f\n<arg_key>a</arg_key><arg_value>1.0</arg_value><arg_key>b</arg_key><arg_value>1e16</arg_value><arg_key>c</arg_key><arg_value>-0</arg_value><arg_key>d</arg_key><arg_value>123456789012345678901234567890</arg_value></tool_call>"}},
		},
		Regressions: []Case[ref.GLMToolArgsInput]{
			{"s2-b2-glm-args-stripped", ref.GLMToolArgsInput{Tools: glmTools(),
				Text: "<tool_call>run\n<arg_key>code</arg_key>\n<arg_value>  def f():\n    return 1\n</arg_value>\n</tool_call>"}},
		},
		Props: []Prop[ref.GLMToolArgsInput, ref.GLMToolArgsOutput]{
			{"arguments-are-json-objects", glmArgsJSON},
			{"string-values-keep-their-bytes", glmStringBytes},
		},
	}
}

func glmTools() json.RawMessage {
	return json.RawMessage(`[{"type":"function","function":{"name":"run","parameters":{"type":"object","properties":{"code":{"type":"string"},"n":{"type":"number"},"k":{"type":"integer"},"flag":{"type":"boolean"},"cfg":{"type":"object"}}}}}]`)
}

var glmValues = []string{
	"  def f():\n    return 1\n", " x ", "plain", `"quoted  "`, `'single '`, `  "json string"  `, "42", " 42 ", `"42"`, "1.50", "true",
	`{"a": [1, 2.0, "é"]}`, "[1,2]", "null", "", "\t", "<b>", "1e999", `"\u00e9\n"`, "'", `"`,
}

func glmValid(t *rapid.T) ref.GLMToolArgsInput {
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
	in := ref.GLMToolArgsInput{Text: b.String()}
	if rapid.Bool().Draw(t, "has_tools") {
		in.Tools = glmTools()
	}
	return in
}

func glmInvalid(t *rapid.T) Bad[ref.GLMToolArgsInput] {
	in := glmValid(t)
	in.Tools = json.RawMessage(rapid.SampledFrom([]string{`{}`, `7`, `"tools"`}).Draw(t, "bad_tools"))
	return Bad[ref.GLMToolArgsInput]{in, ref.ErrBadEnum}
}

func glmArgsJSON(_ ref.Limits, _ ref.GLMToolArgsInput, out ref.GLMToolArgsOutput) error {
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
func glmStringBytes(_ ref.Limits, in ref.GLMToolArgsInput, out ref.GLMToolArgsOutput) error {
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
