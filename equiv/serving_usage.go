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
	"github.com/kvtwin/kvtwin/spec"
)

// ---- serving.usage (S2.6) ----

// ServingUsage is the differential spec of serving.usage.
func ServingUsage() *Spec[spec.ServingUsageInput, spec.ServingUsageOutput] {
	return &Spec[spec.ServingUsageInput, spec.ServingUsageOutput]{
		Op:      catalog.ServingUsage(),
		Valid:   rapid.Custom(usageValid),
		Invalid: rapid.Custom(usageInvalid),
		Boundary: []Case[spec.ServingUsageInput]{
			{"no-choices-glm", spec.ServingUsageInput{Family: spec.FamilyGLM}},
			{"glm-r0-emitted", spec.ServingUsageInput{Family: spec.FamilyGLM, PromptTokens: 3, Choices: []spec.UsageChoice{{CompletionTokens: 5}}}},
			{"glm-replaces-existing-reasoning", spec.ServingUsageInput{Family: spec.FamilyGLM, Choices: []spec.UsageChoice{{CompletionTokens: 5, ReasoningTokens: 2}},
				CompletionTokensDetails: json.RawMessage(`{"reasoning_tokens":9, "accepted_prediction_tokens":1}`)}},
			{"empty-details-glm", spec.ServingUsageInput{Family: spec.FamilyGLM, CompletionTokensDetails: json.RawMessage(` { } `)}},
			{"max-sum", spec.ServingUsageInput{PromptTokens: 1, Choices: []spec.UsageChoice{{CompletionTokens: math.MaxInt64 - 1}}}},
		},
		Regressions: []Case[spec.ServingUsageInput]{
			{"s2-b4-glm-usage-missing-details", spec.ServingUsageInput{Family: spec.FamilyGLM, PromptTokens: 12, Choices: []spec.UsageChoice{{CompletionTokens: 40, ReasoningTokens: 25}}}},
		},
		Props: []Prop[spec.ServingUsageInput, spec.ServingUsageOutput]{
			{"total-is-prompt-plus-completion", usageTotal},
			{"reasoning-within-completion", usageReasoningBounded},
			{"glm-details-merge", usageGLMDetails},
			{"non-glm-details-untouched", usageNonGLM},
		},
	}
}

func usageValid(t *rapid.T) spec.ServingUsageInput {
	in := spec.ServingUsageInput{
		Family:       rapid.SampledFrom([]string{"", spec.FamilyNone, spec.FamilyGLM, spec.FamilyGLM, spec.FamilyKimi}).Draw(t, "family"),
		PromptTokens: rapid.Int64Range(0, 1<<20).Draw(t, "prompt_tokens"),
		Choices:      []spec.UsageChoice{},
	}
	for range rapid.IntRange(0, 4).Draw(t, "n_choices") {
		c := rapid.Int64Range(0, 1<<16).Draw(t, "completion")
		in.Choices = append(in.Choices, spec.UsageChoice{CompletionTokens: c, ReasoningTokens: rapid.Int64Range(0, c).Draw(t, "reasoning")})
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

func usageInvalid(t *rapid.T) Bad[spec.ServingUsageInput] {
	in := usageValid(t)
	if len(in.Choices) == 0 {
		in.Choices = []spec.UsageChoice{{CompletionTokens: 3, ReasoningTokens: 1}}
	}
	i := rapid.IntRange(0, len(in.Choices)-1).Draw(t, "at")
	switch rapid.IntRange(0, 5).Draw(t, "violation") {
	case 0:
		in.Family = rapid.SampledFrom([]string{"glm4", "GLM", "x"}).Draw(t, "bad_family")
		return Bad[spec.ServingUsageInput]{in, spec.ErrBadFlag}
	case 1:
		in.CompletionTokensDetails = json.RawMessage(rapid.SampledFrom([]string{`[]`, `7`, `"x"`}).Draw(t, "bad_details"))
		return Bad[spec.ServingUsageInput]{in, spec.ErrNotJSONObject}
	case 2:
		in.Choices[i].CompletionTokens = rapid.Int64Range(math.MinInt64, -1).Draw(t, "negative")
		return Bad[spec.ServingUsageInput]{in, spec.ErrNegative}
	case 3:
		in.Choices[i].ReasoningTokens = in.Choices[i].CompletionTokens + rapid.Int64Range(1, 9).Draw(t, "excess")
		return Bad[spec.ServingUsageInput]{in, spec.ErrReasoningExceedsCompletion}
	case 4:
		in.Choices = append(in.Choices, spec.UsageChoice{CompletionTokens: math.MaxInt64})
		in.Choices[0].CompletionTokens, in.Choices[0].ReasoningTokens = 1, 0
		return Bad[spec.ServingUsageInput]{in, spec.ErrOverflow}
	}
	in.PromptTokens = rapid.Int64Range(math.MinInt64, -1).Draw(t, "negative_prompt")
	return Bad[spec.ServingUsageInput]{in, spec.ErrNegative}
}

func usageTotal(_ spec.Limits, in spec.ServingUsageInput, u spec.ServingUsageOutput) error {
	var c int64
	for _, ch := range in.Choices {
		c += ch.CompletionTokens
	}
	if u.CompletionTokens != c || u.TotalTokens != u.PromptTokens+u.CompletionTokens || u.PromptTokens != in.PromptTokens {
		return fmt.Errorf("usage %+v: total must be prompt + completion, completion the sum %d", u, c)
	}
	return nil
}

func usageReasoningBounded(_ spec.Limits, in spec.ServingUsageInput, u spec.ServingUsageOutput) error {
	var r int64
	for _, ch := range in.Choices {
		r += ch.ReasoningTokens
	}
	if u.ReasoningTokens != r || u.ReasoningTokens < 0 || u.ReasoningTokens > u.CompletionTokens {
		return fmt.Errorf("reasoning_tokens %d: want the sum %d, within [0, completion_tokens=%d]", u.ReasoningTokens, r, u.CompletionTokens)
	}
	return nil
}

func usageGLMDetails(_ spec.Limits, in spec.ServingUsageInput, u spec.ServingUsageOutput) error {
	if in.Family != spec.FamilyGLM {
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

func usageNonGLM(_ spec.Limits, in spec.ServingUsageInput, u spec.ServingUsageOutput) error {
	if in.Family == spec.FamilyGLM {
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
