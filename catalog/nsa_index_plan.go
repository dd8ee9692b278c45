package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// NSAIndexPlan registers nsa.index_plan (docs/spec/cp-layout.md §9).
func NSAIndexPlan() *Op[spec.NSAIndexPlanInput, spec.NSAIndexPlanOutput] {
	four := 4
	return &Op[spec.NSAIndexPlanInput, spec.NSAIndexPlanOutput]{
		OpName:  "nsa.index_plan",
		SpecRef: "cp-layout.md §9",
		Summary: "NSA index-topk layer skip from freq/offset/pattern: skip, next-skip, active layers, compact slots, warnings, and the runtime slot/prefetch/shared-input rules",
		Ref:     ref.NSAIndexPlan,
		Fast:    fast.NSAIndexPlan,
		// §9.3's N=10, Freq=4, Offset=3 (FFFSSSFSSS) and §9.5's gate and shared-layer checks.
		Sample: spec.NSAIndexPlanInput{N: 10, Freq: &four, Offset: 3, Queries: []spec.NSAIndexQuery{
			{Kind: spec.NSAQueryPrefetchAfter, Layer: 2},
			{Kind: spec.NSAQueryPrefetchAfter, Layer: 5},
			{Kind: spec.NSAQuerySlotOf, Layer: 6},
			{Kind: spec.NSAQuerySharedInput, Layer: 3},
		}},
		Shapes: []Shape[spec.NSAIndexPlanInput]{
			{Name: "glm5-78-layers-forward-pass", Make: func() spec.NSAIndexPlanInput { return everyQuery(78, 4, 3) }},
			{Name: "4096-layers-forward-pass", Make: func() spec.NSAIndexPlanInput { return everyQuery(4096, 4, 3) }},
		},
	}
}

// everyQuery is the plan a pool resolves at init together with one forward
// pass's runtime checks, none of which refuses: every layer's shared-input
// check (with the previous top-k after layer 0), the slot lookup of every F
// layer and the prefetch gate after every layer.
func everyQuery(n, freq, offset int) spec.NSAIndexPlanInput {
	in := spec.NSAIndexPlanInput{N: n, Freq: &freq, Offset: offset}
	for l := range n {
		in.Queries = append(in.Queries, spec.NSAIndexQuery{Kind: spec.NSAQuerySharedInput, Layer: l, PrevPresent: l > 0})
		if !ref.NSASkipLayer(in, l) {
			in.Queries = append(in.Queries, spec.NSAIndexQuery{Kind: spec.NSAQuerySlotOf, Layer: l})
		}
		in.Queries = append(in.Queries, spec.NSAIndexQuery{Kind: spec.NSAQueryPrefetchAfter, Layer: l})
	}
	return in
}
