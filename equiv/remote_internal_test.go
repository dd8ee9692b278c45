package equiv

import (
	"testing"

	"github.com/kvtwin/kvtwin/fixtures"
)

// TestErrorModesApplyInsideScriptOutputs pins what --errors compares in
// an accepted output that carries rejected steps (a script's trace): exact
// every byte; code each step error's code, and its field where the
// reference's names one; reject only that the step was rejected. The rest
// of the output is compared whole in every mode.
func TestErrorModesApplyInsideScriptOutputs(t *testing.T) {
	ref := `{"trace":[{"ok":true},{"error":{"code":"slot_busy","field":"steps[1].slot","value":3,"bound":"a free slot","message":"steps[1].slot = 3: want a free slot (slot busy)"}}],"state":{"n":2}}`
	for _, c := range []struct {
		name, got           string
		exact, code, reject bool
	}{
		{"the same bytes", ref, true, true, true},
		{"another message, value and bound", `{"trace":[{"ok":true},{"error":{"code":"slot_busy","field":"steps[1].slot","message":"busy"}}],"state":{"n":2}}`, false, true, true},
		{"another field", `{"trace":[{"ok":true},{"error":{"code":"slot_busy","field":"slot","message":"busy"}}],"state":{"n":2}}`, false, false, true},
		{"no field where the reference names one", `{"trace":[{"ok":true},{"error":{"code":"slot_busy","message":"busy"}}],"state":{"n":2}}`, false, false, true},
		{"another code", `{"trace":[{"ok":true},{"error":{"code":"bad_slot","field":"steps[1].slot","message":"busy"}}],"state":{"n":2}}`, false, false, true},
		{"another state", `{"trace":[{"ok":true},{"error":{"code":"slot_busy","field":"steps[1].slot","message":"busy"}}],"state":{"n":3}}`, false, false, false},
		{"a step accepted instead", `{"trace":[{"ok":true},{"ok":true}],"state":{"n":2}}`, false, false, false},
		{"an error object with a member errors lack", `{"trace":[{"ok":true},{"error":{"code":"slot_busy","field":"steps[1].slot","message":"busy","hint":"x"}}],"state":{"n":2}}`, false, false, false},
	} {
		want, got := fixtures.Result{Bytes: []byte(ref)}, fixtures.Result{Bytes: []byte(c.got)}
		for _, m := range []struct {
			mode ErrorMode
			same bool
		}{{ErrorsExact, c.exact}, {ErrorsCode, c.code}, {ErrorsReject, c.reject}} {
			if got := sameUnder(m.mode, want, got); got != m.same {
				t.Errorf("%s under --errors %s: same = %v, want %v", c.name, m.mode, got, m.same)
			}
		}
	}
}
