// Package equiv is kvtwin's differential suite. For every catalog op it
// holds a Spec: generators of valid and invalid inputs, boundary and
// regression tables, and the spec's properties. A check runs the reference
// and an implementation on one input and requires byte-equal canonical
// results (errors included), then the properties on the result. The same
// checks drive `go test` (through rapid, with shrinking), `kvtwin audit`, the
// bug zoo (package mutants) and golden fixture generation.
package equiv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fixtures"
	"github.com/kvtwin/kvtwin/spec"
)

// Kind is the class of a generated case.
type Kind string

const (
	// Valid cases come from the valid-input generator; ref must accept them.
	Valid Kind = "valid"
	// Invalid cases carry one violation; ref must reject them with the expected sentinel.
	Invalid Kind = "invalid"
)

// Bad is an invalid input together with the sentinel ref must reject it with.
type Bad[In any] struct {
	// In is the input, valid except for one violation.
	In In
	// Want is the sentinel the violation maps to.
	Want *spec.Sentinel
}

// Case is a named hand-written input (boundary and regression tables).
type Case[In any] struct {
	// Name identifies the case in fixtures and failures.
	Name string
	// In is the input.
	In In
}

// Prop is one spec property, checked on every accepted result.
type Prop[In, Out any] struct {
	// Name is the property's name, e.g. "shift-equivariance".
	Name string
	// Holds returns nil when the property holds for in and its output out.
	Holds func(lim spec.Limits, in In, out Out) error
}

// Spec is the differential specification of one catalog op.
type Spec[In, Out any] struct {
	// Op is the catalog registration under test.
	Op *catalog.Op[In, Out]
	// Valid generates inputs ref accepts.
	Valid *rapid.Generator[In]
	// Invalid generates inputs with exactly one violation.
	Invalid *rapid.Generator[Bad[In]]
	// Boundary lists inputs at size boundaries (page size, cp_size, 2×cp_size…).
	Boundary []Case[In]
	// Regressions lists each historic bug's minimal distinguishing input,
	// named as its mutant is (see package mutants).
	Regressions []Case[In]
	// Props are the spec's properties.
	Props []Prop[In, Out]
	// Rejects names the Boundary and Regression cases that ref must reject,
	// with the sentinel it must reject them with; every other table case
	// must be accepted. A historic bug that accepted bad input (a silent
	// corruption the fix turned into an error) is caught on such a case.
	Rejects map[string]*spec.Sentinel
	// Vocabulary, for a script op, is what an adapter may declare part of
	// (its step kinds and options) and how the generators honour such a
	// declaration (Restrict); nil for an op that takes none.
	Vocabulary *Vocabulary[In]
	// cover is the declared part a Restrict-ed spec stays inside (nil: the
	// whole op).
	cover *Coverage
	// Script presents a stateful op's input as its list of steps, so that
	// Shrink and RemoteShrink make a failing script 1-minimal by deleting
	// steps after rapid's shrink; nil for an op without steps.
	Script *ScriptSteps[In]
}

// Failure is a counterexample: the input, what went wrong, and a diff.
type Failure struct {
	// Op is the op name.
	Op string `json:"op"`
	// Impl is the implementation (or mutant) checked.
	Impl string `json:"impl"`
	// Case names the input ("valid/12", "boundary/…").
	Case string `json:"case"`
	// Seed is the generator seed of the input.
	Seed int64 `json:"seed"`
	// Input is the input as canonical JSON.
	Input json.RawMessage `json:"input"`
	// Reason says which check failed.
	Reason string `json:"reason"`
	// Diff is the go-cmp diff (-ref +impl) for result mismatches.
	Diff string `json:"diff,omitempty"`
	// Paths are, for an adapter's mismatch, the places its answer differs
	// from the reference's under the audit's --errors mode, one JSONPath
	// leaf each (ref → impl), the first MaxPathDiffs of them; MorePaths
	// counts the rest (jsonpath.go).
	Paths     []PathDiff `json:"paths,omitempty"`
	MorePaths int        `json:"more_paths,omitempty"`
	// Fixture is the fixture line (fixtures/testdata format) that replays
	// the case with the reference's result; empty when ref itself failed.
	Fixture json.RawMessage `json:"fixture,omitempty"`
	// Transport marks a failure to reach an implementation outside this
	// build (no answer, a malformed answer, a crash), not a wrong answer.
	Transport bool `json:"transport,omitempty"`
	// Seq orders failures as an unsharded audit meets them (table cases
	// first, then generated cases by index), so shard reports merge into
	// the same list; set by the audit.
	Seq int `json:"seq"`
	// StepDeletion is what the step-deletion pass did to a shrunk
	// stateful counterexample; nil for other failures.
	StepDeletion *StepDeletion `json:"step_deletion,omitempty"`
}

// Error renders the failure with the input as a fixture-style line, and
// how the results differ: as JSON paths where the failure has them (an
// adapter's mismatch; the go-cmp diff stays in Diff), else as the go-cmp
// diff.
func (f *Failure) Error() string {
	s := fmt.Sprintf("%s on %s, case %s (seed %d): %s\ninput: %s", f.Op, f.Impl, f.Case, f.Seed, f.Reason, f.Input)
	if len(f.Fixture) > 0 {
		s += "\nfixture: " + string(f.Fixture)
	}
	if f.StepDeletion != nil {
		s += "\n" + f.StepDeletion.String()
	}
	switch {
	case len(f.Paths) > 0:
		s += "\ndifferences (ref → " + f.Impl + "):"
		for _, p := range f.Paths {
			s += "\n  " + p.String()
		}
		if f.MorePaths > 0 {
			s += fmt.Sprintf("\n  … and %d more", f.MorePaths)
		}
	case f.Diff != "":
		s += "\ndiff (-ref +" + f.Impl + "):\n" + f.Diff
	}
	return s
}

// Name returns the op name.
func (s *Spec[In, Out]) Name() string { return s.Op.OpName }

// Check runs impl against ref on in and returns the first failed check:
// generator sanity (ref accepts valid input / rejects with want), a panic,
// input mutation, byte-inequality of canonical results, then the properties.
// want is nil for inputs that must be accepted.
func (s *Spec[In, Out]) Check(implName string, impl catalog.Func[In, Out], in In, want *spec.Sentinel) (reason, diff string) {
	reason, diff, _ = s.check(implName, impl, in, want)
	return reason, diff
}

// check is Check that also returns the reference's canonical result (nil
// when ref panicked), so a failure's fixture line needs no second ref run.
func (s *Spec[In, Out]) check(implName string, impl catalog.Func[In, Out], in In, want *spec.Sentinel) (reason, diff string, refRes *fixtures.Result) {
	lim := spec.DefaultLimits()
	before, err := catalog.Marshal(in)
	if err != nil {
		return "input does not encode: " + err.Error(), "", nil
	}
	r, reason := s.runRef(in, want)
	if reason != "" {
		return reason, "", r.res
	}
	iout, panicked, ierr := protect(impl, lim, in)
	if panicked != "" {
		return "panic: " + panicked, "", r.res
	}
	if after, _ := catalog.Marshal(in); !bytes.Equal(before, after) {
		return implName + " mutated its input", "", r.res
	}
	if ib := catalog.Canonical(iout, ierr); !bytes.Equal(r.res.Bytes, ib) {
		return "canonical results differ", fixtures.DiffJSON(*r.res, fixtures.Result{Bytes: ib, Rejected: ierr != nil}), r.res
	}
	if ierr != nil {
		return "", "", r.res
	}
	for _, p := range s.Props {
		if err := p.Holds(lim, in, iout); err != nil {
			return fmt.Sprintf("property %q: %v", p.Name, err), "", r.res
		}
	}
	return "", "", r.res
}

// refRun is the reference's run on one input.
type refRun[Out any] struct {
	out Out
	err error
	// res is the canonical result; nil when ref panicked.
	res *fixtures.Result
}

// runRef runs the reference on in, recovering a panic so the input is
// reported instead of crashing the caller, and checks the generator's
// contract: valid inputs accepted, invalid ones rejected with want.
func (s *Spec[In, Out]) runRef(in In, want *spec.Sentinel) (refRun[Out], string) {
	out, panicked, err := protect(s.Op.Ref, spec.DefaultLimits(), in)
	if panicked != "" {
		return refRun[Out]{}, "ref panicked: " + panicked
	}
	r := refRun[Out]{out: out, err: err, res: &fixtures.Result{Bytes: catalog.Canonical(out, err), Rejected: err != nil}}
	switch {
	case want == nil && err != nil:
		return r, "ref rejected a valid input: " + err.Error()
	case want != nil && !errorIs(err, want):
		return r, fmt.Sprintf("ref returned %v, want sentinel %q", err, want.Code())
	}
	return r, ""
}

func protect[In, Out any](f catalog.Func[In, Out], lim spec.Limits, in In) (out Out, panicked string, err error) {
	defer func() {
		if r := recover(); r != nil {
			panicked = fmt.Sprintf("%v\n%s", r, debug.Stack())
		}
	}()
	out, err = f(lim, in)
	return out, "", err
}

// failure builds a Failure; refRes is the reference's result on in (nil
// when ref panicked), which the fixture line replays.
func (s *Spec[In, Out]) failure(implName, name string, seed int64, in In, reason, diff string, refRes *fixtures.Result) *Failure {
	b, _ := catalog.Marshal(in)
	f := &Failure{Op: s.Op.OpName, Impl: implName, Case: name, Seed: seed, Input: b, Reason: reason, Diff: diff}
	if refRes != nil {
		if line, err := catalog.Marshal(fixtures.NewCase(s.Op.OpName, s.Op.SpecRef, name, seed, b, *refRes)); err == nil {
			f.Fixture = line
		}
	}
	return f
}

// errorIs is errors.Is that tolerates a nil target.
func errorIs(err error, target *spec.Sentinel) bool { return target != nil && errors.Is(err, target) }

// Trial checks impl on the seed-th generated case of kind.
func (s *Spec[In, Out]) Trial(implName string, impl catalog.Func[In, Out], kind Kind, seed int) *Failure {
	in, want := s.draw(kind, seed)
	return s.checkFailure(implName, impl, fmt.Sprintf("%s/%d", kind, seed), int64(seed), in, want)
}

func (s *Spec[In, Out]) draw(kind Kind, seed int) (In, *spec.Sentinel) {
	if kind == Invalid {
		b := s.Invalid.Example(seed)
		return b.In, b.Want
	}
	return s.Valid.Example(seed), nil
}

// Tables checks impl on every boundary and regression case.
func (s *Spec[In, Out]) Tables(implName string, impl catalog.Func[In, Out]) []*Failure {
	var fs []*Failure
	for _, c := range s.tableCases() {
		if reason, diff, refRes := s.check(implName, impl, c.In, c.Want); reason != "" {
			fs = append(fs, s.failure(implName, c.Name, 0, c.In, reason, diff, refRes))
		}
	}
	return fs
}

// tableCase is a table case under its fixture name, with the sentinel ref
// must reject it with (nil: must accept).
type tableCase[In any] struct {
	Case[In]
	Want *spec.Sentinel
}

func (s *Spec[In, Out]) tableCases() []tableCase[In] {
	var cs []tableCase[In]
	for _, c := range s.Boundary {
		cs = append(cs, tableCase[In]{Case[In]{Name: "boundary/" + c.Name, In: c.In}, s.Rejects[c.Name]})
	}
	for _, c := range s.Regressions {
		cs = append(cs, tableCase[In]{Case[In]{Name: "regression/" + c.Name, In: c.In}, s.Rejects[c.Name]})
	}
	return cs
}

// Property returns the rapid property for impl over kind; rapid shrinks any
// counterexample and the failure message carries it as a fixture-style line.
func (s *Spec[In, Out]) Property(implName string, impl catalog.Func[In, Out], kind Kind) func(*rapid.T) {
	return func(t *rapid.T) {
		in, want := s.drawFrom(t, kind)
		if f := s.checkFailure(implName, impl, "shrunk", 0, in, want); f != nil {
			t.Fatal(f.Error())
		}
	}
}

// checkFailure is check's failure on in, named caseName, or nil.
func (s *Spec[In, Out]) checkFailure(implName string, impl catalog.Func[In, Out], caseName string, seed int64, in In, want *spec.Sentinel) *Failure {
	if reason, diff, refRes := s.check(implName, impl, in, want); reason != "" {
		return s.failure(implName, caseName, seed, in, reason, diff, refRes)
	}
	return nil
}

// drawFrom draws a case of kind under rapid, with the sentinel ref must
// reject it with (nil for a valid case).
func (s *Spec[In, Out]) drawFrom(t *rapid.T, kind Kind) (In, *spec.Sentinel) {
	if kind == Invalid {
		b := s.Invalid.Draw(t, "bad")
		return b.In, b.Want
	}
	return s.Valid.Draw(t, "in"), nil
}

// Fixtures is FixturesFrom(0, nValid, nInvalid): the golden set's cases.
func (s *Spec[In, Out]) Fixtures(nValid, nInvalid int) []fixtures.Case {
	return s.FixturesFrom(0, nValid, nInvalid)
}

// FixturesFrom generates cases from ref: every boundary and regression
// case, then nValid valid and nInvalid invalid generated cases with seeds
// seed…seed+n-1. The output is a pure function of the arguments, the
// generators and ref.
func (s *Spec[In, Out]) FixturesFrom(seed, nValid, nInvalid int) []fixtures.Case {
	var cs []fixtures.Case
	add := func(name string, seed int, in In) {
		b, err := catalog.Marshal(in)
		if err != nil {
			panic(fmt.Sprintf("%s %s: input does not encode: %v", s.Op.OpName, name, err))
		}
		out, rerr := s.Op.Ref(spec.DefaultLimits(), in)
		res := fixtures.Result{Bytes: catalog.Canonical(out, rerr), Rejected: rerr != nil}
		cs = append(cs, fixtures.NewCase(s.Op.OpName, s.Op.SpecRef, name, int64(seed), b, res))
	}
	for _, c := range s.tableCases() {
		add(c.Name, 0, c.In)
	}
	for i := seed; i < seed+nValid; i++ {
		add(fmt.Sprintf("valid/%d", i), i, s.Valid.Example(i))
	}
	for i := seed; i < seed+nInvalid; i++ {
		add(fmt.Sprintf("invalid/%d", i), i, s.Invalid.Example(i).In)
	}
	return cs
}

// Regression returns the regression case called name.
func (s *Spec[In, Out]) Regression(name string) (In, bool) {
	for _, c := range s.Regressions {
		if c.Name == name {
			return c.In, true
		}
	}
	var zero In
	return zero, false
}
