package equiv

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fixtures"
)

// Suite is the type-erased view of a Spec that the tests, the audit and the
// fixture generator iterate.
type Suite interface {
	// Name is the op name.
	Name() string
	// Entry is the catalog entry under test.
	Entry() catalog.Entry
	// Trial checks impl on the seed-th generated case of kind.
	Trial(impl catalog.Impl, kind Kind, seed int) (*Failure, error)
	// Tables checks impl on the boundary and regression tables.
	Tables(impl catalog.Impl) ([]*Failure, error)
	// Property is the rapid property of impl over kind.
	Property(impl catalog.Impl, kind Kind) (func(*rapid.T), error)
	// Fixtures generates golden cases from ref (seeds from 0).
	Fixtures(nValid, nInvalid int) []fixtures.Case
	// FixturesFrom generates cases from ref with seeds from seed.
	FixturesFrom(seed, nValid, nInvalid int) []fixtures.Case
	// Shrink runs impl's rapid property over kind and returns rapid's
	// minimal counterexample, or nil when rapid finds none.
	Shrink(impl catalog.Impl, kind Kind) (*Failure, error)
	// TableSizes reports how many boundary and regression cases there are.
	TableSizes() (boundary, regressions int)
	// InvalidInput is the seed-th generated invalid input as canonical JSON,
	// with the code of the sentinel ref rejects it with.
	InvalidInput(seed int) (json.RawMessage, string)
	// RemoteTrial checks r, an implementation outside this build named
	// name, on the seed-th generated case of kind, comparing rejections
	// under mode.
	RemoteTrial(name string, r Remote, mode ErrorMode, kind Kind, seed int) *Failure
	// RemoteTables checks r on the boundary and regression tables.
	RemoteTables(name string, r Remote, mode ErrorMode) []*Failure
	// RemoteShrink returns rapid's minimal counterexample against r over
	// kind, or nil when rapid finds none.
	RemoteShrink(name string, r Remote, mode ErrorMode, kind Kind) *Failure
	// CanonicalAnswer decodes an outside implementation's answer strictly
	// into the op's output or an error object and re-encodes it
	// canonically, so member order, whitespace and string escapes are the
	// adapter's own business; reason says why an answer does not decode.
	CanonicalAnswer(res fixtures.Result) (got fixtures.Result, reason string)
	// Restrict is the suite audited under an adapter's partial
	// declaration d (Spec.Restrict): generators and tables inside the
	// declared part, and what was left out; the suite itself for a zero d.
	Restrict(d Declaration) (Suite, Restriction, error)
	// Sample is a small valid input as canonical JSON, inside the part of
	// the op a Restrict-ed suite audits (Spec.Sample).
	Sample() json.RawMessage
}

type suite[In, Out any] struct{ s *Spec[In, Out] }

// Erase wraps a Spec as a Suite.
func Erase[In, Out any](s *Spec[In, Out]) Suite { return suite[In, Out]{s} }

func (u suite[In, Out]) Name() string         { return u.s.Op.OpName }
func (u suite[In, Out]) Entry() catalog.Entry { return u.s.Op }
func (u suite[In, Out]) TableSizes() (int, int) {
	return len(u.s.Boundary), len(u.s.Regressions)
}

func (u suite[In, Out]) Trial(impl catalog.Impl, kind Kind, seed int) (*Failure, error) {
	f, err := u.s.Op.Func(impl)
	if err != nil {
		return nil, err
	}
	return u.s.Trial(string(impl), f, kind, seed), nil
}

func (u suite[In, Out]) Tables(impl catalog.Impl) ([]*Failure, error) {
	f, err := u.s.Op.Func(impl)
	if err != nil {
		return nil, err
	}
	return u.s.Tables(string(impl), f), nil
}

func (u suite[In, Out]) Property(impl catalog.Impl, kind Kind) (func(*rapid.T), error) {
	f, err := u.s.Op.Func(impl)
	if err != nil {
		return nil, err
	}
	return u.s.Property(string(impl), f, kind), nil
}

func (u suite[In, Out]) Fixtures(nValid, nInvalid int) []fixtures.Case {
	return u.s.Fixtures(nValid, nInvalid)
}

func (u suite[In, Out]) FixturesFrom(seed, nValid, nInvalid int) []fixtures.Case {
	return u.s.FixturesFrom(seed, nValid, nInvalid)
}

func (u suite[In, Out]) Shrink(impl catalog.Impl, kind Kind) (*Failure, error) {
	f, err := u.s.Op.Func(impl)
	if err != nil {
		return nil, err
	}
	return u.s.Shrink(string(impl), f, kind), nil
}

func (u suite[In, Out]) InvalidInput(seed int) (json.RawMessage, string) {
	bad := u.s.Invalid.Example(seed)
	b, err := catalog.Marshal(bad.In)
	if err != nil {
		return nil, ""
	}
	return b, bad.Want.Code()
}

func (u suite[In, Out]) RemoteTrial(name string, r Remote, mode ErrorMode, kind Kind, seed int) *Failure {
	return u.s.RemoteTrial(name, r, mode, kind, seed)
}

func (u suite[In, Out]) RemoteTables(name string, r Remote, mode ErrorMode) []*Failure {
	return u.s.RemoteTables(name, r, mode)
}

func (u suite[In, Out]) RemoteShrink(name string, r Remote, mode ErrorMode, kind Kind) *Failure {
	return u.s.RemoteShrink(name, r, mode, kind)
}

func (u suite[In, Out]) Restrict(d Declaration) (Suite, Restriction, error) {
	s, r, err := u.s.Restrict(d)
	if err != nil {
		return nil, Restriction{}, err
	}
	return suite[In, Out]{s}, r, nil
}

func (u suite[In, Out]) Sample() json.RawMessage {
	b, err := catalog.Marshal(u.s.Sample())
	if err != nil {
		panic(fmt.Sprintf("%s: sample input does not encode: %v", u.s.Op.OpName, err))
	}
	return b
}

// docRow is the Spec's docRow, for the test that holds docs/adapters.md
// to the vocabularies.
func (u suite[In, Out]) docRow() string { return u.s.docRow() }

// hasScript reports whether the spec registers its input's steps for
// step deletion (Spec.Script).
func (u suite[In, Out]) hasScript() bool { return u.s.Script != nil }

func (u suite[In, Out]) CanonicalAnswer(res fixtures.Result) (fixtures.Result, string) {
	return u.s.canonicalAnswer(res)
}

// Suites returns the differential suite of every op, in name order (the
// catalog's order). The list is generated (suites_gen.go, `make generate`):
// every exported, parameterless func of this package returning *Spec[...]
// is a spec.
func Suites() []Suite {
	suites := generatedSuites()
	slices.SortFunc(suites, func(a, b Suite) int { return strings.Compare(a.Name(), b.Name()) })
	return suites
}

// Lookup returns the suite of the op called name.
func Lookup(name string) (Suite, bool) {
	for _, s := range Suites() {
		if s.Name() == name {
			return s, true
		}
	}
	return nil, false
}

// Mutant is a historic bug re-introduced into an op's twin: the bug zoo.
type Mutant[In, Out any] struct {
	// Spec is the op's differential spec.
	Spec *Spec[In, Out]
	// ID names the bug; the op's regression case of the same name is its
	// minimal distinguishing input.
	ID string
	// Section is the spec section describing the bug.
	Section string
	// About is a one-line description of the buggy behaviour.
	About string
	// Fn is the buggy twin.
	Fn catalog.Func[In, Out]
	// Scenario is the repository path of the datadriven scenario file that
	// narrates the bug's trace with the fixed behaviour, or "" for none.
	Scenario string
}

// Killable is the type-erased view of a Mutant.
type Killable interface {
	// Name is the mutant's ID.
	Name() string
	// Op is the op the mutant replaces.
	Op() string
	// SpecRef is the spec section of the bug.
	SpecRef() string
	// Bug describes the buggy behaviour.
	Bug() string
	// ScenarioFile is the repository path of the bug's narrated scenario
	// file, or "".
	ScenarioFile() string
	// Hunt runs generated cases (valid i, then invalid i, for i = 0, 1, …)
	// with the mutant as the implementation until a check fails or maxCases
	// cases have run; it returns the number of cases run and the failure.
	// A panic of the mutant is not a kill (see panicked).
	Hunt(maxCases int) (int, *Failure)
	// Regression runs the mutant on its named regression case and returns
	// the failure that case must produce (nil means the fixture misses the bug).
	Regression() (*Failure, error)
	// Entry is the op's catalog entry with the mutant as its fast twin
	// (and no CUDA twin): what a server or a fixture check runs to meet
	// the bug outside the suite (serve --verify's fault test).
	Entry() catalog.Entry
}

// Entry implements Killable.
func (m *Mutant[In, Out]) Entry() catalog.Entry {
	op := *m.Spec.Op
	op.Fast, op.CUDA = m.Fn, nil
	return &op
}

// Name implements Killable.
func (m *Mutant[In, Out]) Name() string { return m.ID }

// Op implements Killable.
func (m *Mutant[In, Out]) Op() string { return m.Spec.Op.OpName }

// SpecRef implements Killable.
func (m *Mutant[In, Out]) SpecRef() string { return m.Section }

// Bug implements Killable.
func (m *Mutant[In, Out]) Bug() string { return m.About }

// ScenarioFile implements Killable.
func (m *Mutant[In, Out]) ScenarioFile() string { return m.Scenario }

// Hunt implements Killable.
func (m *Mutant[In, Out]) Hunt(maxCases int) (int, *Failure) {
	name := "mutant:" + m.ID
	for i, n := 0, 0; n < maxCases; i++ {
		for _, kind := range []Kind{Valid, Invalid} {
			if n >= maxCases {
				break
			}
			n++
			if f := m.Spec.Trial(name, m.Fn, kind, i); f != nil && !panicked(f) {
				return n, f
			}
		}
	}
	return maxCases, nil
}

// Regression implements Killable; a regression case listed in the
// Spec's Rejects must be rejected with that sentinel by ref.
func (m *Mutant[In, Out]) Regression() (*Failure, error) {
	in, ok := m.Spec.Regression(m.ID)
	if !ok {
		return nil, fmt.Errorf("%s has no regression case %q", m.Spec.Op.OpName, m.ID)
	}
	name := "mutant:" + m.ID
	if reason, diff, refRes := m.Spec.check(name, m.Fn, in, m.Spec.Rejects[m.ID]); reason != "" {
		if f := m.Spec.failure(name, "regression/"+m.ID, 0, in, reason, diff, refRes); !panicked(f) {
			return f, nil
		}
	}
	return nil, nil
}

// panicked reports a failure that is only the implementation panicking: for
// the bug zoo that is a gap, not a kill, since the historic bug returned a
// wrong value and a check must catch the value.
func panicked(f *Failure) bool { return strings.HasPrefix(f.Reason, "panic: ") }

// Golden-set sizes: how many generated cases per op `make fixtures` writes
// beside the boundary and regression tables.
const (
	GoldenValid   = 20
	GoldenInvalid = 10
)

// GoldenFileName is the golden fixture file of op inside fixtures/testdata.
func GoldenFileName(op string) string { return op + ".jsonl" }
