package mutants

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fixtures"
	"github.com/kvtwin/kvtwin/spec"
)

// The reach tests (issue 30 item 7): for each class of input the
// generators and tables once never produced, plausible bugs of that class
// are planted one at a time, and the suite must kill every one. A test is
// named for its class (TestReachTwoIndependentFailuresInOneInput, …) and
// lists its plants; docs/coverage.md ("Reach classes") has the table of
// classes, where each was added and what kills each plant.
//
// A plant is the op's function with the bug in it. A fast-only plant is a
// wrapper around fast's production function (or fast with a reach switch
// of internal/fault on) and stands in for the fast twin: the differential
// suite sees it when an input of the class reaches it. A shared plant is a
// bug in a helper both twins call: it stands in for both twins, so ref
// agrees with it and the differential check is blind by construction;
// only the golden set (generated from the correct ref), the generators'
// contract (ref must reject an invalid case with its sentinel, accept a
// valid one), the properties and the hand-derived examples (expected
// values computed from the spec text, never from ref) can see it.

// reachCases is how many generated cases of each kind a plant may survive.
const reachCases = 300

// reachPlant is one planted bug: the op's function with the bug in it.
type reachPlant[In, Out any] struct {
	name string
	fn   catalog.Func[In, Out]
	// shared: the bug is in a helper both twins call, so fn replaces ref
	// as well as the implementation checked.
	shared bool
}

// handExample is a hand-derived spec example: an input and what the spec
// text says of its result (check returns nil when the result agrees).
type handExample[In, Out any] struct {
	name  string
	in    In
	check func(out Out, err error) error
}

// reachClass is one class's op, plants and hand-derived examples.
type reachClass[In, Out any] struct {
	spec     *equiv.Spec[In, Out]
	plants   []reachPlant[In, Out]
	examples []handExample[In, Out]
	// cases overrides reachCases (ops whose generated cases are slow).
	cases int
}

// run checks that the hand-derived examples hold on ref and fast, then
// that the suite kills every plant, and logs what kills each.
func (c reachClass[In, Out]) run(t *testing.T) {
	t.Helper()
	lim := spec.DefaultLimits()
	for _, ex := range c.examples {
		for impl, fn := range map[string]catalog.Func[In, Out]{"ref": c.spec.Op.Ref, "fast": c.spec.Op.Fast} {
			out, err := fn(lim, ex.in)
			if cerr := ex.check(out, err); cerr != nil {
				t.Errorf("hand-derived example %s does not hold on %s: %v", ex.name, impl, cerr)
			}
		}
	}
	for _, p := range c.plants {
		if killers := c.killers(t, p); len(killers) == 0 {
			t.Errorf("plant %q survives the suite", p.name)
		} else {
			t.Logf("plant %q killed by:\n\t%s", p.name, strings.Join(killers, "\n\t"))
		}
	}
}

// killers returns what in the suite kills p, empty when nothing does (a
// plant that panics on a case is caught there, as the suite reports any
// panic of the implementation it checks): the
// first table case that does (differential check, Rejects contract,
// properties), the first golden case, the first generated case
// (differential, contract, properties) and the first hand-derived example.
func (c reachClass[In, Out]) killers(t *testing.T, p reachPlant[In, Out]) []string {
	t.Helper()
	s := c.spec
	if p.shared {
		sc, op := *s, *s.Op
		op.Ref = p.fn
		sc.Op = &op
		s = &sc
	}
	var ks []string
	if fs := s.Tables(p.name, p.fn); len(fs) > 0 {
		ks = append(ks, "table case "+fs[0].Case+" ("+firstLine(fs[0].Reason)+")")
	}
	if k := goldenKiller(t, s.Op.OpName, p.fn); k != "" {
		ks = append(ks, k)
	}
	if k := c.generatedKiller(s, p); k != "" {
		ks = append(ks, k)
	}
	for _, ex := range c.examples {
		out, err := protectedRun(p.fn, ex.in)
		if cerr := ex.check(out, err); cerr != nil {
			ks = append(ks, "hand-derived example "+ex.name)
			break
		}
	}
	return ks
}

// generatedKiller is the first generated case (valid i, then invalid i)
// that kills p, "" when none of the first cases of each kind does.
func (c reachClass[In, Out]) generatedKiller(s *equiv.Spec[In, Out], p reachPlant[In, Out]) string {
	n := reachCases
	if c.cases > 0 {
		n = c.cases
	}
	if raceEnabled {
		n = max(n/10, 10)
	}
	for i := range n {
		for _, kind := range []equiv.Kind{equiv.Valid, equiv.Invalid} {
			if f := s.Trial(p.name, p.fn, kind, i); f != nil {
				return "generated case " + f.Case + " (" + firstLine(f.Reason) + ")"
			}
		}
	}
	return ""
}

// goldenKiller replays op's golden file on fn and names the first case
// whose result differs, "" when every case agrees.
func goldenKiller[In, Out any](t *testing.T, op string, fn catalog.Func[In, Out]) string {
	t.Helper()
	cases, err := fixtures.ReadFile(filepath.Join("..", "..", "fixtures", "testdata", equiv.GoldenFileName(op)))
	if err != nil {
		t.Fatalf("golden file of %s: %v", op, err)
	}
	for _, gc := range cases {
		in, err := catalog.DecodeStrict[In](gc.In)
		if err != nil {
			t.Fatalf("golden case %s of %s does not decode: %v", gc.Case, op, err)
		}
		want := gc.Want()
		out, ferr := protectedRun(fn, in)
		if ferr != nil && !isInputError(ferr) {
			return "golden case " + gc.Case + " (" + firstLine(ferr.Error()) + ")"
		}
		if got := catalog.Canonical(out, ferr); !bytes.Equal(got, want.Bytes) || (ferr != nil) != want.Rejected {
			return "golden case " + gc.Case
		}
	}
	return ""
}

// protectedRun runs fn on in, turning a panic into an internal error.
func protectedRun[In, Out any](fn catalog.Func[In, Out], in In) (out Out, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return fn(spec.DefaultLimits(), in)
}

func isInputError(err error) bool {
	_, ok := spec.AsInputError(err)
	return ok
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// errObj is err's canonical error object; the zero object for nil.
func errObj(err error) spec.ErrorObject {
	if err == nil {
		return spec.ErrorObject{}
	}
	return spec.ErrorObjectOf(err)
}

// wantRejected is a hand-derived check: the result is a rejection with
// code and, when field is not "", that field.
func wantRejected(code, field string) func(error) error {
	return func(err error) error {
		o := errObj(err)
		switch {
		case err == nil:
			return errors.New("accepted, want a rejection " + code)
		case o.Code != code || field != "" && o.Field != field:
			return fmt.Errorf("rejected with %s at %q, want %s at %q", o.Code, o.Field, code, field)
		}
		return nil
	}
}
