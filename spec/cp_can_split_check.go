package spec

// CP-split sentinels (docs/spec/cp-layout.md §0.5, §5.2).
var (
	// ErrPagePlan: an eligible shared-KV extend whose prefix page plan is
	// missing or broken (§5.2 step 4).
	ErrPagePlan = NewSentinel("page_plan", "CP shared-KV page plan is missing or inconsistent")
	// ErrMissingExtendLens: an eligible CP extend without one extend length
	// per request (§5.2 step 3).
	ErrMissingExtendLens = NewSentinel("missing_extend_lens", "CP extend needs one extend length per request")
)
