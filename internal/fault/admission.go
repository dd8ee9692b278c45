package fault

// Admission selects the historic prefill-adder bugs
// (docs/spec/admission-serving.md §A1.15) that Hooks.AdmissionRound
// puts back; the zero value is the fixed adder.
type Admission struct {
	// CachedBeforeLoadBack is docs/spec/admission-serving.md §A1.15 A1-B1:
	// the cached-token gate (and cum_cached) counts only the L1 prefix,
	// before L2 load-back planning.
	CachedBeforeLoadBack bool
	// GatesOnEmptyBatch is docs/spec/admission-serving.md §A1.15 A1-B2: the
	// CP gates C2–C5 also run on an empty batch, so a single oversized
	// request is refused forever (deadlock).
	GatesOnEmptyBatch bool
	// NoLift is docs/spec/admission-serving.md §A1.15 A1-B3: the legacy
	// rem_input_tokens budget is not raised to the effective CP extend
	// limit.
	NoLift bool
	// UserLimitUncapped is docs/spec/admission-serving.md §A1.15 A1-B4: the
	// user extend limit is not capped by the chunk budget (min(user, chunk)
	// becomes user).
	UserLimitUncapped bool
	// NoDefaultLimit is docs/spec/admission-serving.md §A1.15 A1-B5: without
	// a user extend limit the limit is not defaulted from the chunk budget
	// (stays unlimited).
	NoDefaultLimit bool
	// SkipLockRecheck is docs/spec/admission-serving.md §A1.15 A1-B6: the
	// rem_total re-check after locking the prefix (§A1.6 step 4) is skipped.
	SkipLockRecheck bool
}
