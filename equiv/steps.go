package equiv

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/kvtwin/kvtwin/spec"
)

// Step deletion: after rapid's shrink, a stateful op's counterexample is
// made 1-minimal (Zeller's delta debugging, single-step granularity): no
// single step of the reported script can be removed with the same kind of
// failure kept. rapid shrinks the bit stream its generators draw from; a
// script generator that follows a model of the state (to aim steps at live
// nodes, ongoing registrations, the producer's slot) turns a deleted draw
// into different later steps, so rapid often stops with steps the failure
// does not need. Deleting steps from the script itself has no such link.

// MaxStepDeletionChecks bounds the checks of one step-deletion pass. A
// script of n steps needs at most n(n+1)/2 (see deleteSteps), so scripts of
// up to 44 steps are always made 1-minimal; past the cap the pass stops and
// StepDeletion.Capped says so in the audit's report (docs/adapters.md,
// "Counterexamples").
const MaxStepDeletionChecks = 1000

// ScriptSteps presents a stateful op's input as a list of steps, so that a
// counterexample can be shrunk by deleting steps (docs/adapters.md,
// "Counterexamples"). Each script op registers one on its Spec (the Script
// field), through stepsOf.
type ScriptSteps[In any] struct {
	// Len is the number of steps of in.
	Len func(in In) int
	// Without returns in without step i, 0 <= i < Len(in); in and its step
	// list are not changed (the steps themselves are shared).
	Without func(in In, i int) In
}

// stepsOf is the ScriptSteps of an input whose steps are the list list
// points at (the input's Steps member, say).
func stepsOf[In, Step any](list func(*In) *[]Step) *ScriptSteps[In] {
	return &ScriptSteps[In]{
		Len: func(in In) int { return len(*list(&in)) },
		Without: func(in In, i int) In {
			p := list(&in)
			*p = slices.Delete(slices.Clone(*p), i, i+1)
			return in
		},
	}
}

// StepDeletion is what the step-deletion pass did to a stateful op's
// shrunk counterexample (docs/adapters.md, "Counterexamples"); the
// audit's reports print it under the counterexample.
type StepDeletion struct {
	// From is the number of steps of rapid's shrunk script.
	From int `json:"from"`
	// To is the number of steps of the reported script.
	To int `json:"to"`
	// Checks is the number of smaller scripts checked.
	Checks int `json:"checks"`
	// Capped is set when the pass stopped at MaxStepDeletionChecks: a step
	// of the reported script may still be removable.
	Capped bool `json:"capped,omitempty"`
}

// String describes the pass in one line of the audit's report: the steps
// before and after, the checks, and whether the result is 1-minimal or the
// pass stopped at its cap.
func (d *StepDeletion) String() string {
	s := fmt.Sprintf("step deletion: %d → %d steps in %d checks", d.From, d.To, d.Checks)
	if d.Capped {
		return s + fmt.Sprintf("; stopped at its cap of %d checks, so a step may still be removable", MaxStepDeletionChecks)
	}
	return s + "; no single step can be removed with the failure kept (1-minimal)"
}

// deleteSteps removes steps from in while fails holds of the smaller
// script, and returns the script it ends with, the number of calls of
// fails, and whether it stopped at maxChecks. fails must hold of in.
//
// Each pass tries every step once, last to first (a deletion leaves the
// indices below it valid), and the passes repeat until one deletes
// nothing: a deletion can make a step the pass already tried removable
// (fails need not be monotone), so one pass is not enough for
// 1-minimality. A pass over k steps costs k checks and every pass but the
// last deletes a step, so the passes' lengths fall strictly and a script
// of n steps costs at most n + (n-1) + … + 1 = n(n+1)/2 checks.
func deleteSteps[In any](steps *ScriptSteps[In], in In, fails func(In) bool, maxChecks int) (In, int, bool) {
	checks := 0
	for deleted := true; deleted; {
		deleted = false
		for i := steps.Len(in) - 1; i >= 0; i-- {
			if checks == maxChecks {
				return in, checks, true
			}
			checks++
			if smaller := steps.Without(in, i); fails(smaller) {
				in, deleted = smaller, true
			}
		}
	}
	return in, checks, false
}

// failureClass is the kind of failure f is, which a deletion must keep:
// the reason up to its first colon, which names the check that failed
// without its detail ("canonical results differ", `property "C1-…"`,
// "panic", "results differ (--errors code)", "ref rejected a valid
// input"); for a transport failure, its kind when the reason has the
// remote.TransportError form "transport: OP: KIND: …" (a timeout stays a
// timeout, and an op the breaker made unavailable is not a crash). So a
// deletion that turns a wrong answer into an input the reference rejects,
// a crash or a hang is not kept.
func failureClass(f *Failure) string {
	if f.Transport {
		if parts := strings.SplitN(f.Reason, ": ", 4); len(parts) == 4 {
			return "transport: " + parts[2]
		}
		return "transport"
	}
	class, _, _ := strings.Cut(f.Reason, ":")
	return class
}

// minimalScript runs the step-deletion pass on the failing script in, whose
// failure is f; recheck checks a smaller script the way f was found. It
// returns the failure of the smallest script that still fails as f does,
// with StepDeletion set; f unchanged when the op has no steps.
func (s *Spec[In, Out]) minimalScript(f *Failure, in In, recheck func(In) *Failure) *Failure {
	if s.Script == nil {
		return f
	}
	class, last := failureClass(f), f
	fails := func(smaller In) bool {
		g := recheck(smaller)
		if g == nil || failureClass(g) != class {
			return false
		}
		last = g
		return true
	}
	from := s.Script.Len(in)
	smallest, checks, capped := deleteSteps(s.Script, in, fails, MaxStepDeletionChecks)
	last.StepDeletion = &StepDeletion{From: from, To: s.Script.Len(smallest), Checks: checks, Capped: capped}
	return last
}

// lastCase keeps the last failing case a rapid property met: after rapid's
// shrink, the minimal one.
type lastCase[In any] struct {
	mu   sync.Mutex
	f    *Failure
	in   In
	want *spec.Sentinel
}

func (c *lastCase[In]) set(f *Failure, in In, want *spec.Sentinel) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.f, c.in, c.want = f, in, want
}

func (c *lastCase[In]) get() (*Failure, In, *spec.Sentinel) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.f, c.in, c.want
}
