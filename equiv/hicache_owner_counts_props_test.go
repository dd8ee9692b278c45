package equiv_test

import (
	"testing"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestOwnerCountsPropertiesCatchWrongCounts: each §4.1–§4.3 property holds
// on ref's result and fails on a result broken the way it guards against.
func TestOwnerCountsPropertiesCatchWrongCounts(t *testing.T) {
	sp := equiv.HiCacheOwnerCounts()
	worked := spec.HiCacheOwnerCountsInput{CPSize: 4, PageSize: 1, TokenDepth: 3, Tokens: 6} // counts [2,1,1,2]
	short := spec.HiCacheOwnerCountsInput{CPSize: 8, PageSize: 1, TokenDepth: 0, Tokens: 3}  // ranks 3..7 own nothing
	broken := map[string]struct {
		in     spec.HiCacheOwnerCountsInput
		break_ func(*spec.HiCacheOwnerCountsOutput)
	}{
		"three-computations-agree": {worked, func(o *spec.HiCacheOwnerCountsOutput) { o.Metadata = []int32{2, 2, 1, 1} }},
		"counts-sum-to-pages-and-histogram-owners": {worked, func(o *spec.HiCacheOwnerCountsOutput) {
			o.Enumerated, o.Metadata, o.ClosedForm = []int32{2, 1, 1, 3}, []int32{2, 1, 1, 3}, []int32{2, 1, 1, 3}
		}},
		"owners-round-robin-by-absolute-page": {worked, func(o *spec.HiCacheOwnerCountsOutput) { o.PageOwners = []uint16{0, 3, 1, 2, 3, 0} }},
		"zero-owned-iff-outside-short-window": {short, func(o *spec.HiCacheOwnerCountsOutput) { o.ClosedForm = []int32{1, 1, 0, 1, 0, 0, 0, 0} }},
	}
	for _, p := range sp.Props {
		b, ok := broken[p.Name]
		if !ok {
			t.Errorf("no broken result for property %s", p.Name)
			continue
		}
		good, err := ref.HiCacheOwnerCounts(spec.DefaultLimits(), b.in)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Holds(spec.DefaultLimits(), b.in, good); err != nil {
			t.Errorf("%s fails on ref's result: %v", p.Name, err)
		}
		b.break_(&good)
		if propHolds(t, sp.Props, p.Name, b.in, good) == nil {
			t.Errorf("%s holds on a broken result %+v", p.Name, good)
		}
	}
}

// TestOwnerPlanPropertiesCatchWrongPlans: the owner-metadata and
// owner-lane-plans properties of radix.script hold on ref's run of §4.4's
// worked example and fail on each way a plan or the metadata can be wrong.
func TestOwnerPlanPropertiesCatchWrongPlans(t *testing.T) {
	sp := equiv.RadixScript()
	var in spec.RadixScriptInput
	for _, c := range sp.Boundary {
		if c.Name == "owner-plan-worked-example" {
			in = c.In
		}
	}
	// Trace steps 10–12 are dry runs with victims [4], [2 4 6], [4 6]
	// (refused); 13 executes [4]; 14 is refused with victims [6].
	run := func() spec.RadixScriptOutput {
		out, err := ref.RadixScript(spec.DefaultLimits(), in)
		if err != nil || len(out.Trace) != 15 {
			t.Fatalf("worked example: %v", err)
		}
		return out
	}
	for _, name := range []string{"owner-metadata", "owner-lane-plans"} {
		if err := propHolds(t, sp.Props, name, in, run()); err != nil {
			t.Fatalf("%s fails on ref's run: %v", name, err)
		}
	}
	for _, c := range []struct {
		prop, what string
		break_     func(*spec.RadixScriptOutput)
	}{
		{"owner-metadata", "an unsplit count", func(o *spec.RadixScriptOutput) { o.Tree.Nodes[5].CP.OwnerCounts[0].Counts = []int32{1, 2} }}, // node 6
		{"owner-metadata", "a wrong start page", func(o *spec.RadixScriptOutput) { o.Tree.Nodes[2].CP.StartPage = 0 }},
		{"owner-lane-plans", "E2: a locked victim", func(o *spec.RadixScriptOutput) { o.Trace[10].Plan.Victims = []spec.NodeID{3} }},
		{"owner-lane-plans", "E3: an admitted plan short of its deficit", func(o *spec.RadixScriptOutput) { o.Trace[11].Plan.Victims = []spec.NodeID{2, 4} }},
		{"owner-lane-plans", "E4: a victim after the deficit is covered", func(o *spec.RadixScriptOutput) { o.Trace[10].Plan.Victims = []spec.NodeID{4, 6} }},
		{"owner-lane-plans", "E5: recounted owner counts", func(o *spec.RadixScriptOutput) { o.Tree.OwnerCountRecomputations = 3 }},
		{"owner-lane-plans", "a victim that helps no short lane", func(o *spec.RadixScriptOutput) {
			o.Trace[10].Plan.Victims = []spec.NodeID{2, 4}
		}},
		{"owner-lane-plans", "a wrong remaining deficit", func(o *spec.RadixScriptOutput) { o.Trace[12].Plan.Remaining = []int{0, 2} }},
		{"owner-lane-plans", "a refused plan that evicts", func(o *spec.RadixScriptOutput) {
			o.Trace[14].Plan.Evicted, o.Trace[14].Plan.Freed = 3, [][]spec.SlotIdx{{34, 35, 36}}
		}},
		{"owner-lane-plans", "an uncounted refusal", func(o *spec.RadixScriptOutput) { o.Tree.LoadRefusals = 0 }},
		{"owner-lane-plans", "wrong freed slots", func(o *spec.RadixScriptOutput) { o.Trace[13].Plan.Freed = [][]spec.SlotIdx{{24}} }},
	} {
		out := run()
		c.break_(&out)
		if propHolds(t, sp.Props, c.prop, in, out) == nil {
			t.Errorf("%s holds on %s", c.prop, c.what)
		}
	}
}
