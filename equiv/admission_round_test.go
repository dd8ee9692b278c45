package equiv_test

import (
	"bytes"
	"testing"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestRoundOverTheEntryBoundIsRefusedAlike runs admission.round on one
// entry more than spec.MaxAdmitEntries (running plus queue), a size no
// generator or fixture can carry (about 40 MB of JSON): both twins must
// refuse it with the same too_large error before walking anything.
func TestRoundOverTheEntryBoundIsRefusedAlike(t *testing.T) {
	s := equiv.AdmissionRound()
	in := spec.AdmissionRoundInput{Config: spec.AdderConfig{PageSize: 1, MaxPrefillTokens: 8192, MaxRunningRequests: 1},
		Pool: spec.PoolState{Available: 1000}, Running: make([]spec.RunningReq, spec.MaxAdmitEntries),
		Queue: []spec.Request{{RID: "r1", InputLen: 10}}}
	if reason, diff := s.Check("fast", s.Op.Fast, in, spec.ErrTooLarge); reason != "" {
		t.Errorf("%d running + 1 queued: %s\n%s", len(in.Running), reason, diff)
	}
}

// TestGoEstimatorGateMatchesTheLinearModel drives gate C5 through
// CPAdmission.Estimator, the Go callers' estimator that JSON cannot carry
// (json:"-"): on generated rounds with a linear buffer model, the model's
// Estimate passed as a Go function must give both twins the result the
// JSON model gives ref, byte for byte. fast then prices the batch through
// the function instead of its incremental sums.
func TestGoEstimatorGateMatchesTheLinearModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := equiv.AdmissionValid(t)
		if in.Config.CP == nil || in.Config.CP.BufferModel == nil {
			t.Skip("no buffer gate")
		}
		want := catalog.Canonical(ref.AdmissionRound(spec.DefaultLimits(), in))
		cp := *in.Config.CP
		cp.Estimator, cp.BufferModel = cp.BufferModel.Estimate, nil
		in.Config.CP = &cp
		for name, round := range map[string]func(spec.Limits, spec.AdmissionRoundInput) (spec.AdmissionRoundOutput, error){"ref": ref.AdmissionRound, "fast": fast.AdmissionRound} {
			if got := catalog.Canonical(round(spec.DefaultLimits(), in)); !bytes.Equal(got, want) {
				t.Fatalf("%s with the Go estimator:\n got %s\nwant %s", name, got, want)
			}
		}
	})
}
