package catalog

import (
	"encoding/json"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// ServingUsage registers serving.usage (docs/spec/admission-serving.md S2.6).
func ServingUsage() *Op[spec.ServingUsageInput, spec.ServingUsageOutput] {
	return &Op[spec.ServingUsageInput, spec.ServingUsageOutput]{
		OpName:  "serving.usage",
		SpecRef: "admission-serving.md S2.6",
		Summary: "usage with reasoning tokens: top-level always, completion_tokens_details.reasoning_tokens merged in for glm",
		Ref:     ref.ServingUsage,
		Fast:    fast.ServingUsage,
		Sample:  spec.ServingUsageInput{Family: spec.FamilyGLM, PromptTokens: 12, Choices: []spec.UsageChoice{{CompletionTokens: 40, ReasoningTokens: 25}}},
		Shapes: []Shape[spec.ServingUsageInput]{
			{Name: "glm-merge-4-choices", Make: func() spec.ServingUsageInput {
				return spec.ServingUsageInput{Family: spec.FamilyGLM, PromptTokens: 1200, CompletionTokensDetails: json.RawMessage(`{"accepted_prediction_tokens":31}`),
					Choices: []spec.UsageChoice{{CompletionTokens: 400, ReasoningTokens: 250}, {CompletionTokens: 380, ReasoningTokens: 200}, {CompletionTokens: 500, ReasoningTokens: 10}, {CompletionTokens: 12}}}
			}},
		},
	}
}
