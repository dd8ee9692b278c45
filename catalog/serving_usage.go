package catalog

import (
	"encoding/json"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
)

// Usage registers serving.usage (docs/spec/admission-serving.md S2.6).
func Usage() *Op[ref.UsageInput, ref.Usage] {
	return &Op[ref.UsageInput, ref.Usage]{
		OpName:  "serving.usage",
		SpecRef: "admission-serving.md S2.6",
		Summary: "usage with reasoning tokens: top-level always, completion_tokens_details.reasoning_tokens merged in for glm",
		Ref:     ref.UsageOf,
		Fast:    fast.UsageOf,
		Sample:  ref.UsageInput{Family: ref.FamilyGLM, PromptTokens: 12, Choices: []ref.UsageChoice{{CompletionTokens: 40, ReasoningTokens: 25}}},
		Shapes: []Shape[ref.UsageInput]{
			{Name: "glm-merge-4-choices", Make: func() ref.UsageInput {
				return ref.UsageInput{Family: ref.FamilyGLM, PromptTokens: 1200, CompletionTokensDetails: json.RawMessage(`{"accepted_prediction_tokens":31}`),
					Choices: []ref.UsageChoice{{CompletionTokens: 400, ReasoningTokens: 250}, {CompletionTokens: 380, ReasoningTokens: 200}, {CompletionTokens: 500, ReasoningTokens: 10}, {CompletionTokens: 12}}}
			}},
		},
	}
}
