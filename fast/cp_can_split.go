package fast

import (
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// CPCanSplit is the one-pass twin of ref.CPCanSplit (docs/spec/cp-layout.md §5.2): the
// same step order, but steps 4–6 read the lists once — the page plan of
// request i, whether any length is positive and whether any is below 2·cp
// are all gathered in a single loop. Steps 4–6 only report after the loop
// has seen every request, and the loop reports the first invalid request,
// so the first error is ref's.
func CPCanSplit(lim spec.Limits, in spec.CPCanSplitInput) (spec.CPCanSplitOutput, error) {
	if err := ref.CheckForwardMode(in.Mode); err != nil {
		return spec.CPCanSplitOutput{}, err
	}
	if !in.CPEnabled || in.CPSize <= 1 {
		return ref.NoSplit(spec.ReasonCPDisabled), nil
	}
	if !ref.CPSplitEligible(in.Mode, in.UsesCPSharedKV) {
		return ref.NoSplit(spec.ReasonNotCPExtend), nil
	}
	if err := ref.CheckCanSplitScalars(in); err != nil {
		return spec.CPCanSplitOutput{}, err
	}
	if in.UsesCPSharedKV {
		if err := ref.CheckPagePlanShape(in); err != nil {
			return spec.CPCanSplitOutput{}, err
		}
	}
	anyPositive, anyShort, threshold := false, false, 2*in.CPSize
	for i, l := range in.ExtendLens {
		var err error
		if in.UsesCPSharedKV {
			err = ref.CheckPagePlanRequest(in, i)
		} else {
			err = ref.CheckExtendLenNonNegative(in.ExtendLens, i)
		}
		if err != nil {
			return spec.CPCanSplitOutput{}, err
		}
		anyPositive = anyPositive || l > 0
		anyShort = anyShort || l < threshold
	}
	switch {
	case !anyPositive:
		return ref.NoSplit(spec.ReasonEmptyExtend), nil
	case anyShort && !in.UsesCPSharedKV:
		return ref.NoSplit(spec.ReasonSubThreshold), nil
	}
	return ref.BuildSplitLayout(lim, in)
}
