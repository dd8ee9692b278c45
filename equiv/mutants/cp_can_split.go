package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// PagePlanBeforeEligibility is docs/spec/cp-layout.md §5.5: the shared-KV page-plan
// validator ran before the eligibility check, so speculative non-extend
// forwards (TARGET_VERIFY, decode), which carry no prefix plan, failed with
// ErrPagePlan before reaching the no-split decision.
func PagePlanBeforeEligibility() equiv.Killable {
	return &equiv.Mutant[spec.CPCanSplitInput, spec.CPCanSplitOutput]{
		Spec:    equiv.CPCanSplit(),
		ID:      "page-plan-before-eligibility",
		Section: "cp-layout.md §5.5",
		About:   "page-plan validation before the eligibility check: TARGET_VERIFY without a prefix plan fails instead of no-split",
		Fn: func(lim spec.Limits, in spec.CPCanSplitInput) (spec.CPCanSplitOutput, error) {
			if err := ref.CheckForwardMode(in.Mode); err == nil && in.CPEnabled && in.CPSize > 1 && in.UsesCPSharedKV {
				if in.ExtendLens == nil || len(in.ExtendLens) != in.BatchSize {
					return spec.CPCanSplitOutput{}, ref.CheckCanSplitScalars(in)
				}
				if err := ref.CheckPagePlan(in); err != nil {
					return spec.CPCanSplitOutput{}, err
				}
			}
			return fast.CPCanSplit(lim, in)
		},
	}
}
