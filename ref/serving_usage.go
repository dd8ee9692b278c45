package ref

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// ErrReasoningExceedsCompletion: a choice reports more reasoning tokens
// than completion tokens (docs/spec/admission-serving.md S2.6 invariant).
var ErrReasoningExceedsCompletion = NewSentinel("reasoning_exceeds_completion", "reasoning_tokens must be <= completion_tokens")

// UsageChoice is one choice's token counts as the engine reports them.
type UsageChoice struct {
	// CompletionTokens is the choice's generated tokens, >= 0.
	CompletionTokens int64 `json:"completion_tokens"`
	// ReasoningTokens is the part of CompletionTokens before the reasoning end marker.
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

// ServingUsageInput is the input of serving.usage (S2.6).
type ServingUsageInput struct {
	// Family is --openai-compat-family: "", "none", "glm" or "kimi".
	Family string `json:"family,omitempty"`
	// PromptTokens is the prompt token count, >= 0.
	PromptTokens int64 `json:"prompt_tokens"`
	// Choices are the per-choice counts (streaming: the per-index maps, in index order).
	Choices []UsageChoice `json:"choices"`
	// PromptTokensDetails is the existing prompt_tokens_details object, or null/absent.
	PromptTokensDetails json.RawMessage `json:"prompt_tokens_details,omitempty"`
	// CompletionTokensDetails is the existing completion_tokens_details
	// object (for example speculative accepted_prediction_tokens), or null/absent.
	CompletionTokensDetails json.RawMessage `json:"completion_tokens_details,omitempty"`
}

// ServingUsageOutput is the output of serving.usage: the usage object,
// fields in S2.6's binding order.
type ServingUsageOutput struct {
	// PromptTokens is the prompt token count.
	PromptTokens int64 `json:"prompt_tokens"`
	// TotalTokens is prompt_tokens + completion_tokens.
	TotalTokens int64 `json:"total_tokens"`
	// CompletionTokens is summed over choices.
	CompletionTokens int64 `json:"completion_tokens"`
	// PromptTokensDetails is passed through (null when absent).
	PromptTokensDetails json.RawMessage `json:"prompt_tokens_details"`
	// ReasoningTokens is summed over choices (upstream's top-level field).
	ReasoningTokens int64 `json:"reasoning_tokens"`
	// CompletionTokensDetails is the existing details, with reasoning_tokens
	// merged in under the glm family (null when absent and not glm).
	CompletionTokensDetails json.RawMessage `json:"completion_tokens_details"`
}

// CheckUsage validates a usage input and returns the sums (completion,
// reasoning, total): family, details shapes, then each choice in order,
// then the sums' overflow.
func CheckUsage(in ServingUsageInput) (int64, int64, int64, error) {
	switch in.Family {
	case "", FamilyNone, FamilyGLM, FamilyKimi:
	default:
		return 0, 0, 0, Reject(ErrBadFlag, "family", in.Family, "one of none, glm, kimi (--openai-compat-family)")
	}
	for _, d := range []struct {
		field string
		raw   json.RawMessage
	}{{"prompt_tokens_details", in.PromptTokensDetails}, {"completion_tokens_details", in.CompletionTokensDetails}} {
		if k := jsonKindOrInvalid(d.raw); !IsAbsentOrNull(d.raw) && k != "object" {
			return 0, 0, 0, Reject(ErrNotJSONObject, d.field, k, "a JSON object or null")
		}
	}
	if in.PromptTokens < 0 {
		return 0, 0, 0, Reject(ErrNegative, "prompt_tokens", in.PromptTokens, ">= 0")
	}
	var comp, reas int64
	for i, c := range in.Choices {
		if c.CompletionTokens < 0 {
			return 0, 0, 0, Reject(ErrNegative, Idx("choices", i)+".completion_tokens", c.CompletionTokens, ">= 0")
		}
		if c.ReasoningTokens < 0 {
			return 0, 0, 0, Reject(ErrNegative, Idx("choices", i)+".reasoning_tokens", c.ReasoningTokens, ">= 0")
		}
		if c.ReasoningTokens > c.CompletionTokens {
			return 0, 0, 0, Reject(ErrReasoningExceedsCompletion, Idx("choices", i)+".reasoning_tokens", c.ReasoningTokens,
				fmt.Sprintf("<= completion_tokens (%d)", c.CompletionTokens))
		}
		if AddOverflows(comp, c.CompletionTokens) {
			return 0, 0, 0, Reject(ErrOverflow, Idx("choices", i)+".completion_tokens", c.CompletionTokens,
				fmt.Sprintf("sum over choices <= %d", int64(math.MaxInt64)))
		}
		comp, reas = comp+c.CompletionTokens, reas+c.ReasoningTokens
	}
	if AddOverflows(in.PromptTokens, comp) {
		return 0, 0, 0, Reject(ErrOverflow, "prompt_tokens", in.PromptTokens,
			fmt.Sprintf("prompt_tokens + completion_tokens <= %d", int64(math.MaxInt64)))
	}
	return comp, reas, in.PromptTokens + comp, nil
}

// ServingUsage is serving.usage (S2.6): counts summed over choices, the upstream
// top-level reasoning_tokens always, and under the glm family also
// completion_tokens_details.reasoning_tokens, merged into existing details
// (replacing only a reasoning_tokens member already there).
func ServingUsage(_ Limits, in ServingUsageInput) (ServingUsageOutput, error) {
	comp, reas, total, err := CheckUsage(in)
	if err != nil {
		return ServingUsageOutput{}, err
	}
	u := ServingUsageOutput{PromptTokens: in.PromptTokens, TotalTokens: total, CompletionTokens: comp, ReasoningTokens: reas}
	if !IsAbsentOrNull(in.PromptTokensDetails) {
		u.PromptTokensDetails = in.PromptTokensDetails
	}
	if !IsAbsentOrNull(in.CompletionTokensDetails) {
		u.CompletionTokensDetails = in.CompletionTokensDetails
	}
	if in.Family == FamilyGLM {
		details := jsonObject{}
		if u.CompletionTokensDetails != nil {
			details, _ = parseObject(u.CompletionTokensDetails)
		}
		u.CompletionTokensDetails = details.set("reasoning_tokens", json.RawMessage(strconv.FormatInt(reas, 10))).encode()
	}
	return u, nil
}
