package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/internal/topkfault"
	"github.com/kvtwin/kvtwin/ref"
)

func topkMutant(id, about string, f topkfault.Faults) equiv.Killable {
	return &equiv.Mutant[ref.IndexTopkOverridesInput, ref.IndexTopkOverridesOutput]{
		Spec:    equiv.IndexTopkOverrides(),
		ID:      id,
		Section: "admission-serving.md §S4.7",
		About:   about,
		Fn:      fast.MergeIndexTopkOverridesWithFaults(f),
	}
}

// OffsetZeroInjected is S4-B1: --nsa-index-skip-topk-offset 0 was written
// into the override as index_skip_topk_offset 0 instead of meaning unset,
// so with freq 4 layer 0 became S (max(0-0+1,0) % 4 = 1), an invalid plan.
func OffsetZeroInjected() equiv.Killable {
	return topkMutant("offset-zero-injected",
		"offset flag 0 injected literally as index_skip_topk_offset:0 (layer 0 becomes S) instead of unset",
		topkfault.Faults{OffsetZeroInjected: true})
}

// FlagsReplaceJSON is S4-B2: the flags built a fresh override object and
// the user's --json-model-override-args keys (rope_theta) were lost.
func FlagsReplaceJSON() equiv.Killable {
	return topkMutant("flags-replace-json",
		"the index-topk flags replace --json-model-override-args instead of merging into it (rope_theta lost)",
		topkfault.Faults{FlagsReplaceJSON: true})
}
