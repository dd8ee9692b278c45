package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// GLMUsageNoDetails is S2-B4: the glm family did not get
// completion_tokens_details.reasoning_tokens. A wrapper: a glm usage keeps
// the input's completion_tokens_details as the other families do.
func GLMUsageNoDetails() equiv.Killable {
	return &equiv.Mutant[spec.ServingUsageInput, spec.ServingUsageOutput]{Spec: equiv.ServingUsage(),
		ID: "s2-b4-glm-usage-missing-details", Section: "admission-serving.md S2.11 S2-B4",
		About: "glm usage lacks completion_tokens_details.reasoning_tokens",
		Fn: func(lim spec.Limits, in spec.ServingUsageInput) (spec.ServingUsageOutput, error) {
			u, err := fast.ServingUsage(lim, in)
			if err == nil && in.Family == spec.FamilyGLM {
				u.CompletionTokensDetails = nil
				if !ref.IsAbsentOrNull(in.CompletionTokensDetails) {
					u.CompletionTokensDetails = in.CompletionTokensDetails
				}
			}
			return u, err
		}}
}
