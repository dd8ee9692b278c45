package spec

// NSAPatternShadowsFreq is the §9.2 warning for a pattern set together with
// index_topk_freq > 1 or an offset: the pattern wins.
const NSAPatternShadowsFreq = "pattern shadows index_topk_freq"

// Index-plan query kinds (§9.2 runtime rules).
const (
	// NSAQuerySharedInput is CheckSharedLayerInput(layer, prev_present).
	NSAQuerySharedInput = "shared_input"
	// NSAQuerySlotOf is SlotOf(layer).
	NSAQuerySlotOf = "slot_of"
	// NSAQueryPrefetchAfter is the prefetch gate run after layer finishes.
	NSAQueryPrefetchAfter = "prefetch_after"
)

// NSAIndexPlanInput is the input of nsa.index_plan (docs/spec/cp-layout.md §9.1): the
// resolved config plus runtime queries answered against the plan.
type NSAIndexPlanInput struct {
	// N is the number of hidden layers, >= 1.
	N int `json:"n"`
	// Freq is index_topk_freq; nil means the default 1.
	Freq *int `json:"freq,omitempty"`
	// Offset is index_topk_offset; 0 means unset.
	Offset int `json:"offset,omitzero"`
	// Pattern is index_topk_pattern, one 'F'/'S' per layer; "" means unset.
	Pattern string `json:"pattern,omitzero"`
	// PPSize is the pipeline-parallel size; 0 means 1.
	PPSize int `json:"pp_size,omitzero"`
	// TBO is whether two-batch overlap is on.
	TBO bool `json:"tbo,omitzero"`
	// Queries are runtime rule invocations answered in order.
	Queries []NSAIndexQuery `json:"queries,omitempty"`
}

// NSAIndexQuery is one runtime rule invocation (§9.2 "Runtime rules").
type NSAIndexQuery struct {
	// Kind is NSAQuerySharedInput, NSAQuerySlotOf or NSAQueryPrefetchAfter.
	Kind string `json:"kind"`
	// Layer is the layer the rule is invoked for, in [0, N).
	Layer int `json:"layer"`
	// PrevPresent is whether the previous layer's top-k is available (shared_input only).
	PrevPresent bool `json:"prev_present,omitzero"`
}

// NSAIndexAnswer is the result of one query: a refusal is its canonical error
// object, as a script op reports a refused step.
type NSAIndexAnswer struct {
	// Slot is the compact slot (slot_of) or the prefetched layer's slot
	// (prefetch_after, when it prefetches).
	Slot *int `json:"slot,omitempty"`
	// Prefetch is the layer prefetched after Layer (prefetch_after), or nil for none.
	Prefetch *int `json:"prefetch,omitempty"`
	// Err is the refusal, or nil.
	Err *ErrorObject `json:"err,omitempty"`
}

// NSAResolvedIndexPlan is the resolved plan (§9.1): per layer, whether it shares the
// previous top-k, whether the next layer does, and the compact slot of
// every F layer.
type NSAResolvedIndexPlan struct {
	// Skip[l] is true for S layers.
	Skip []bool `json:"skip"`
	// NextSkip[l] is Skip[l+1]; false for the last layer ([deviation]).
	NextSkip []bool `json:"next_skip"`
	// Active lists the F layers, ascending.
	Active []int `json:"active"`
	// Slot[l] is l's rank in Active, or -1 for S layers.
	Slot []int `json:"slot"`
}

// NSAIndexPlanOutput is the output of nsa.index_plan.
type NSAIndexPlanOutput struct {
	NSAResolvedIndexPlan
	// Pattern is the plan rendered as an 'F'/'S' string.
	Pattern string `json:"pattern"`
	// Warnings are the §9.2 config warnings (NSAPatternShadowsFreq), never nil.
	Warnings []string `json:"warnings"`
	// Log is the once-at-pool-init line, "index layers active=A/N [l0 l1 …]".
	Log string `json:"log"`
	// HiCacheBytesPerToken is N·656 + len(Active)·132 (§9.4 P9.6).
	HiCacheBytesPerToken int64 `json:"hicache_bytes_per_token"`
	// Answers holds one answer per query, never nil.
	Answers []NSAIndexAnswer `json:"answers"`
}

// FreqOf is the effective index_topk_freq (nil means 1).
func (in NSAIndexPlanInput) FreqOf() int {
	if in.Freq == nil {
		return 1
	}
	return *in.Freq
}

// SlotOf is the compact index-cache slot of layer l; an S layer has none
// (ErrInactiveIndexLayer). Precondition: 0 <= l < N.
func (p NSAResolvedIndexPlan) SlotOf(l int) (int, error) {
	if p.Skip[l] {
		return 0, Reject(ErrInactiveIndexLayer, "layer", l, "an F layer (S layers have no index cache)")
	}
	return p.Slot[l], nil
}

// CheckSharedLayerInput refuses an S layer reached without the previous
// layer's top-k: sparse attention must never run without indices.
// Precondition: 0 <= l < N.
func (p NSAResolvedIndexPlan) CheckSharedLayerInput(l int, prevPresent bool) error {
	if p.Skip[l] && !prevPresent {
		return Reject(ErrSharedLayerMissingPrevTopK, "layer", l, "previous top-k present for an S layer")
	}
	return nil
}

// prefetchAfter is the prefetch gate run after layer l: it prefetches layer
// l+1's index cache iff l+1 < N and l+1 is an F layer, and returns that
// layer and its slot. Precondition: 0 <= l < N.
func (p NSAResolvedIndexPlan) PrefetchAfter(l int) (layer, slot int, ok bool) {
	next := l + 1
	if next >= len(p.Skip) || p.Skip[next] {
		return 0, 0, false
	}
	s, err := p.SlotOf(next)
	return next, s, err == nil
}
