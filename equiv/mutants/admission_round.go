package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/spec"
)

// faultyRound is admission.round on the fast adder with the given faults.
func faultyRound(f fault.Admission) func(spec.Limits, spec.AdmissionRoundInput) (spec.AdmissionRoundOutput, error) {
	return switched(fault.Installed().AdmissionRound, f)
}

// admissionMutant builds one §A1.15 mutant.
func admissionMutant(id, section, about string, f fault.Admission) equiv.Killable {
	return &equiv.Mutant[spec.AdmissionRoundInput, spec.AdmissionRoundOutput]{
		Spec:     equiv.AdmissionRound(),
		ID:       id,
		Section:  section,
		About:    about,
		Fn:       faultyRound(f),
		Scenario: "equiv/testdata/admission_" + id + ".txt",
	}
}

// CachedGateBeforeLoadBack is A1-B1: the cached-token gate counted only
// the L1 prefix, before L2 load-back planning, so two 4096-token host hits
// both passed a 4096-token cached budget.
func CachedGateBeforeLoadBack() equiv.Killable {
	return admissionMutant("cached-gate-before-load-back", "admission-serving.md §A1.15 A1-B1",
		"cached-token gate counts only the L1 prefix before load-back: E6's B is admitted (cached 0 + 0)",
		fault.Admission{CachedBeforeLoadBack: true})
}

// CPGatesOnEmptyBatch is A1-B2: the CP gates also ran on an empty batch,
// so a single request over a CP limit was refused forever (deadlock).
func CPGatesOnEmptyBatch() equiv.Killable {
	return admissionMutant("cp-gates-on-empty-batch", "admission-serving.md §A1.15 A1-B2",
		"CP gates applied to an empty batch: a lone oversized request stops with Other forever; the queue never drains",
		fault.Admission{GatesOnEmptyBatch: true})
}

// CPNoLegacyLift is A1-B3: the CP path grouped under the generic
// max_prefill_tokens, so the extend limit could never be reached.
func CPNoLegacyLift() equiv.Killable {
	return admissionMutant("cp-no-legacy-lift", "admission-serving.md §A1.15 A1-B3",
		"legacy rem_input_tokens not raised to the CP extend limit: E5 admits 1 instead of 5",
		fault.Admission{NoLift: true})
}

// CPUserLimitUncapped is A1-B4: the user extend limit was not capped by
// the chunk budget, advertising (and lifting rem_input to) capacity
// chunked prefill cannot run.
func CPUserLimitUncapped() equiv.Killable {
	return admissionMutant("cp-user-limit-uncapped", "admission-serving.md §A1.15 A1-B4",
		"user extend limit not capped by the chunk budget: limit 32768 and rem_input 32768 instead of 8192 and 16384",
		fault.Admission{UserLimitUncapped: true})
}

// CPLimitNotDefaulted is A1-B5: without a user limit under chunked
// prefill the extend limit stayed unlimited instead of the chunk budget.
func CPLimitNotDefaulted() equiv.Killable {
	return admissionMutant("cp-limit-not-defaulted", "admission-serving.md §A1.15 A1-B5",
		"extend limit not defaulted from the chunk budget: effective_cp_extend_limit nil instead of 8192",
		fault.Admission{NoDefaultLimit: true})
}

// LockRecheckSkipped is A1-B6: the rem_total re-check after locking the
// prefix was skipped, admitting against capacity the lock just removed.
func LockRecheckSkipped() equiv.Killable {
	return admissionMutant("lock-recheck-skipped", "admission-serving.md §A1.15 A1-B6",
		"rem_total re-check after the prefix lock skipped: a request is admitted against stale capacity",
		fault.Admission{SkipLockRecheck: true})
}
