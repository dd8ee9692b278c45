// Package admitfault names the historic prefill-adder bugs that the fast
// adder can re-introduce for the bug zoo (equiv/mutants,
// docs/spec/admission-serving.md §A1.15). The package is internal, so nothing outside
// kvtwin can construct Faults and production rounds never carry one.
package admitfault

// Faults selects the re-introduced bugs; the zero value is the fixed adder.
type Faults struct {
	// CachedBeforeLoadBack is A1-B1: the cached-token gate (and cum_cached)
	// counts only the L1 prefix, before L2 load-back planning.
	CachedBeforeLoadBack bool
	// GatesOnEmptyBatch is A1-B2: the CP gates C2–C5 also run on an empty
	// batch, so a single oversized request is refused forever (deadlock).
	GatesOnEmptyBatch bool
	// NoLift is A1-B3: the legacy rem_input_tokens budget is not raised to
	// the effective CP extend limit.
	NoLift bool
	// UserLimitUncapped is A1-B4: the user extend limit is not capped by
	// the chunk budget (min(user, chunk) becomes user).
	UserLimitUncapped bool
	// NoDefaultLimit is A1-B5: without a user extend limit the limit is not
	// defaulted from the chunk budget (stays unlimited).
	NoDefaultLimit bool
	// SkipLockRecheck is A1-B6: the rem_total re-check after locking the
	// prefix (§A1.6 step 4) is skipped.
	SkipLockRecheck bool
}
