package spec

import (
	"encoding/json"
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
