package fast

import "github.com/kvtwin/kvtwin/ref"

// CPCanSplit is the one-pass twin of ref.CPCanSplit (docs/spec/cp-layout.md §5.2): the
// same step order, but steps 4–6 read the lists once — the page plan of
// request i, whether any length is positive and whether any is below 2·cp
// are all gathered in a single loop. Steps 4–6 only report after the loop
// has seen every request, and the loop reports the first invalid request,
// so the first error is ref's.
func CPCanSplit(lim ref.Limits, in ref.CPCanSplitInput) (ref.CPCanSplitOutput, error) {
	if err := ref.CheckForwardMode(in.Mode); err != nil {
		return ref.CPCanSplitOutput{}, err
	}
	if !in.CPEnabled || in.CPSize <= 1 {
		return ref.NoSplit(ref.ReasonCPDisabled), nil
	}
	if !ref.CPSplitEligible(in.Mode, in.UsesCPSharedKV) {
		return ref.NoSplit(ref.ReasonNotCPExtend), nil
	}
	if err := ref.CheckCanSplitScalars(in); err != nil {
		return ref.CPCanSplitOutput{}, err
	}
	if in.UsesCPSharedKV {
		if err := ref.CheckPagePlanShape(in); err != nil {
			return ref.CPCanSplitOutput{}, err
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
			return ref.CPCanSplitOutput{}, err
		}
		anyPositive = anyPositive || l > 0
		anyShort = anyShort || l < threshold
	}
	switch {
	case !anyPositive:
		return ref.NoSplit(ref.ReasonEmptyExtend), nil
	case anyShort && !in.UsesCPSharedKV:
		return ref.NoSplit(ref.ReasonSubThreshold), nil
	}
	return ref.BuildSplitLayout(lim, in)
}
