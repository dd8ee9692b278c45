package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

func topkMutant(id, about string, fn func(spec.Limits, spec.ConfigIndexTopKOverridesInput) (spec.ConfigIndexTopKOverridesOutput, error)) equiv.Killable {
	return &equiv.Mutant[spec.ConfigIndexTopKOverridesInput, spec.ConfigIndexTopKOverridesOutput]{
		Spec:    equiv.ConfigIndexTopKOverrides(),
		ID:      id,
		Section: "admission-serving.md §S4.7",
		About:   about,
		Fn:      fn,
	}
}

// OffsetZeroInjected is S4-B1: --nsa-index-skip-topk-offset 0 was written
// into the override as index_skip_topk_offset 0 instead of meaning unset,
// so with freq 4 layer 0 became S (max(0-0+1,0) % 4 = 1), an invalid plan.
// A switch: offset 0 is unset in the input, so only the merge can inject it.
func OffsetZeroInjected() equiv.Killable {
	return topkMutant("offset-zero-injected",
		"offset flag 0 injected literally as index_skip_topk_offset:0 (layer 0 becomes S) instead of unset",
		switched(fault.Installed().ConfigIndexTopKOverrides, fault.IndexTopK{OffsetZeroInjected: true}))
}

// FlagsReplaceJSON is S4-B2: the flags built a fresh override object and
// the user's --json-model-override-args keys (rope_theta) were lost. A
// wrapper: once the input is accepted as given, a merge with a flag set is
// run again on an empty --json-model-override-args.
func FlagsReplaceJSON() equiv.Killable {
	return topkMutant("flags-replace-json",
		"the index-topk flags replace --json-model-override-args instead of merging into it (rope_theta lost)",
		func(lim spec.Limits, in spec.ConfigIndexTopKOverridesInput) (spec.ConfigIndexTopKOverridesOutput, error) {
			out, err := fast.ConfigIndexTopKOverrides(lim, in)
			if err != nil || len(ref.IndexTopKFlags(in)) == 0 {
				return out, err
			}
			in.JSON = "" // the bug: the flags build a fresh object
			return fast.ConfigIndexTopKOverrides(lim, in)
		})
}
