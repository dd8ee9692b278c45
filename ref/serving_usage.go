package ref

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/kvtwin/kvtwin/spec"
)

// CheckUsage validates a usage input and returns the sums (completion,
// reasoning, total): family, details shapes, then each choice in order,
// then the sums' overflow.
func CheckUsage(in spec.ServingUsageInput) (int64, int64, int64, error) {
	switch in.Family {
	case "", spec.FamilyNone, spec.FamilyGLM, spec.FamilyKimi:
	default:
		return 0, 0, 0, spec.Reject(spec.ErrBadFlag, "family", in.Family, "one of none, glm, kimi (--openai-compat-family)")
	}
	for _, d := range []struct {
		field string
		raw   json.RawMessage
	}{{"prompt_tokens_details", in.PromptTokensDetails}, {"completion_tokens_details", in.CompletionTokensDetails}} {
		if k := jsonKindOrInvalid(d.raw); !IsAbsentOrNull(d.raw) && k != "object" {
			return 0, 0, 0, spec.Reject(spec.ErrNotJSONObject, d.field, k, "a JSON object or null")
		}
	}
	if in.PromptTokens < 0 {
		return 0, 0, 0, spec.Reject(spec.ErrNegative, "prompt_tokens", in.PromptTokens, ">= 0")
	}
	var comp, reas int64
	for i, c := range in.Choices {
		if c.CompletionTokens < 0 {
			return 0, 0, 0, spec.Reject(spec.ErrNegative, spec.Idx("choices", i)+".completion_tokens", c.CompletionTokens, ">= 0")
		}
		if c.ReasoningTokens < 0 {
			return 0, 0, 0, spec.Reject(spec.ErrNegative, spec.Idx("choices", i)+".reasoning_tokens", c.ReasoningTokens, ">= 0")
		}
		if c.ReasoningTokens > c.CompletionTokens {
			return 0, 0, 0, spec.Reject(spec.ErrReasoningExceedsCompletion, spec.Idx("choices", i)+".reasoning_tokens", c.ReasoningTokens,
				fmt.Sprintf("<= completion_tokens (%d)", c.CompletionTokens))
		}
		if spec.AddOverflows(comp, c.CompletionTokens) {
			return 0, 0, 0, spec.Reject(spec.ErrOverflow, spec.Idx("choices", i)+".completion_tokens", c.CompletionTokens,
				fmt.Sprintf("sum over choices <= %d", int64(math.MaxInt64)))
		}
		comp, reas = comp+c.CompletionTokens, reas+c.ReasoningTokens
	}
	if spec.AddOverflows(in.PromptTokens, comp) {
		return 0, 0, 0, spec.Reject(spec.ErrOverflow, "prompt_tokens", in.PromptTokens,
			fmt.Sprintf("prompt_tokens + completion_tokens <= %d", int64(math.MaxInt64)))
	}
	return comp, reas, in.PromptTokens + comp, nil
}

// ServingUsage is serving.usage (S2.6): counts summed over choices, the upstream
// top-level reasoning_tokens always, and under the glm family also
// completion_tokens_details.reasoning_tokens, merged into existing details
// (replacing only a reasoning_tokens member already there).
func ServingUsage(_ spec.Limits, in spec.ServingUsageInput) (spec.ServingUsageOutput, error) {
	comp, reas, total, err := CheckUsage(in)
	if err != nil {
		return spec.ServingUsageOutput{}, err
	}
	u := spec.ServingUsageOutput{PromptTokens: in.PromptTokens, TotalTokens: total, CompletionTokens: comp, ReasoningTokens: reas}
	if !IsAbsentOrNull(in.PromptTokensDetails) {
		u.PromptTokensDetails = in.PromptTokensDetails
	}
	if !IsAbsentOrNull(in.CompletionTokensDetails) {
		u.CompletionTokensDetails = in.CompletionTokensDetails
	}
	if in.Family == spec.FamilyGLM {
		details := jsonObject{}
		if u.CompletionTokensDetails != nil {
			details, _ = parseObject(u.CompletionTokensDetails)
		}
		u.CompletionTokensDetails = details.set("reasoning_tokens", json.RawMessage(strconv.FormatInt(reas, 10))).encode()
	}
	return u, nil
}
