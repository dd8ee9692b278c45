package catalog

import (
	"encoding/json"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
)

// ServingUsage registers serving.usage (docs/spec/admission-serving.md S2.6).
func ServingUsage() *Op[ref.ServingUsageInput, ref.ServingUsageOutput] {
	return &Op[ref.ServingUsageInput, ref.ServingUsageOutput]{
		OpName:  "serving.usage",
		SpecRef: "admission-serving.md S2.6",
		Summary: "usage with reasoning tokens: top-level always, completion_tokens_details.reasoning_tokens merged in for glm",
		Ref:     ref.ServingUsage,
		Fast:    fast.ServingUsage,
		Sample:  ref.ServingUsageInput{Family: ref.FamilyGLM, PromptTokens: 12, Choices: []ref.UsageChoice{{CompletionTokens: 40, ReasoningTokens: 25}}},
		Shapes: []Shape[ref.ServingUsageInput]{
			{Name: "glm-merge-4-choices", Make: func() ref.ServingUsageInput {
				return ref.ServingUsageInput{Family: ref.FamilyGLM, PromptTokens: 1200, CompletionTokensDetails: json.RawMessage(`{"accepted_prediction_tokens":31}`),
					Choices: []ref.UsageChoice{{CompletionTokens: 400, ReasoningTokens: 250}, {CompletionTokens: 380, ReasoningTokens: 200}, {CompletionTokens: 500, ReasoningTokens: 10}, {CompletionTokens: 12}}}
			}},
		},
	}
}
