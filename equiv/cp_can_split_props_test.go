package equiv_test

import (
	"testing"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestCPCanSplitPropertiesCatchWrongDecisions: each §5.4 property holds on
// ref's decision and fails on a decision broken the way it guards against.
func TestCPCanSplitPropertiesCatchWrongDecisions(t *testing.T) {
	sp := equiv.CPCanSplit()
	lim := spec.DefaultLimits()
	extend := spec.CPCanSplitInput{Mode: spec.ModeExtend, CPEnabled: true, CPSize: 2, UsesCPSharedKV: true,
		BatchSize: 2, ExtendLens: []int{3, 9}, PrefixLens: []int{0, 64}, PageSize: 64}
	verify := spec.CPCanSplitInput{Mode: spec.ModeTargetVerify, CPEnabled: true, CPSize: 2, UsesCPSharedKV: true,
		BatchSize: 2, ExtendLens: []int{2, 2}, PageSize: 64}
	unpadded, err := spec.BuildLayoutUnpadded(2, []int{8, 9})
	if err != nil {
		t.Fatal(err)
	}
	broken := map[string]struct {
		in  spec.CPCanSplitInput
		out spec.CPCanSplitOutput
	}{
		// The §5.5 bug's shape seen as a decision: a verify forward split.
		"non-eligible-ignores-metadata": {verify, spec.CPCanSplitOutput{Split: true, Reason: spec.ReasonPadded}},
		// The rejected alternative: a relaxed validator's silent no-split.
		"page-plan-fail-fast": {extend, ref.NoSplit(spec.ReasonEmptyExtend)},
		// A shared-KV split with another batch's (unpadded) layout.
		"split-layout-valid": {extend, spec.CPCanSplitOutput{Split: true, Reason: spec.ReasonPadded, Layout: &unpadded}},
	}
	for _, p := range sp.Props {
		for _, in := range []spec.CPCanSplitInput{extend, verify} {
			good, err := ref.CPCanSplit(lim, in)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Holds(lim, in, good); err != nil {
				t.Errorf("%s fails on ref's decision for %s: %v", p.Name, in.Mode, err)
			}
		}
		b, ok := broken[p.Name]
		if !ok {
			t.Errorf("no broken decision for property %s", p.Name)
			continue
		}
		if propHolds(t, sp.Props, p.Name, b.in, b.out) == nil {
			t.Errorf("%s holds on broken decision %+v", p.Name, b.out)
		}
	}
}
